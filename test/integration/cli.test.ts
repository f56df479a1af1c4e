/** The `tether` command, every subcommand, as a person runs it: a real process against the real stack. */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { npmWorkspace, openTestAudit, startAgentWorker, writeScript } from '../support/agent.js'

const BIN = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url))
let audit: AuditStore
let agent: Awaited<ReturnType<typeof startAgentWorker>>
let env: NodeJS.ProcessEnv

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

function tether(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Ran> {
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], {
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
}

beforeAll(async () => {
  audit = await openTestAudit()
  agent = await startAgentWorker(audit)
  env = {
    ...process.env,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('namespace'),
    DATABASE_URL: inject('databaseUrl'),
    TETHER_TASK_QUEUE: agent.taskQueue,
    NO_COLOR: '1',
  }
})

afterAll(async () => {
  await agent?.stop()
  await audit?.close()
})

const POLICY = {
  defaults: { read: 'allow', write: 'ask', exec: 'ask', net: 'deny' },
  approvers: ['alice', 'bob'],
  layers: [
    { name: 'ops', rules: [{ act: 'exec', effect: 'deny', pattern: 'rm*' }] },
    {
      name: 'project',
      rules: [
        { act: 'exec', effect: 'allow', pattern: 'npm test*' },
        { act: 'write', effect: 'allow', pattern: 'src/*' },
      ],
    },
  ],
}

describe('tether CLI', () => {
  it('has --help on every subcommand', async () => {
    for (const command of [
      [],
      ['dev'],
      ['run'],
      ['ls'],
      ['show'],
      ['cancel'],
      ['approvals'],
      ['approve'],
      ['deny'],
      ['audit'],
      ['audit', 'refused'],
      ['audit', 'ran'],
      ['policy', 'check'],
      ['db', 'migrate'],
    ]) {
      const ran = await tether([...command, '--help'])
      expect(ran.code, command.join(' ')).toBe(0)
      expect(ran.stdout).toMatch(/^Usage: tether/)
    }
  })

  it('runs, follows, lists, shows and audits a run', async () => {
    const ws = await npmWorkspace()
    try {
      const script = await writeScript(ws.path, {
        turns: [
          { toolCalls: [{ name: 'exec', args: { argv: ['rm', '-rf', 'src'] } }] },
          {
            toolCalls: [
              { name: 'edit_file', args: { path: 'src/math.js', search: 'a - b', replace: 'a + b' } },
            ],
          },
          { text: 'fixed' },
        ],
      })
      const policyFile = join(ws.path, '.policy.json')
      await writeFile(policyFile, JSON.stringify(POLICY))
      const ran = await tether([
        'run',
        '--goal',
        'fix add',
        '--workspace',
        ws.path,
        '--verify',
        'npm test',
        '--policy',
        policyFile,
        '--model',
        `scripted:${script}`,
        '--id',
        `cli-${agent.taskQueue}`,
        '--follow',
      ])
      expect(ran.stderr).toBe('')
      expect(ran.code).toBe(0)
      expect(ran.stdout).toContain('refused   exec rm -rf src  rule rm* in layer ops')
      expect(ran.stdout).toMatch(/outcome\s+verified/)
      const runId = `cli-${agent.taskQueue}`

      const ls = await tether(['ls', '--json'])
      expect(JSON.parse(ls.stdout).map((r: { runId: string }) => r.runId)).toContain(runId)
      const show = await tether(['show', runId])
      expect(show.stdout).toContain('step 1')
      expect(show.stdout).toContain('gate')
      const refused = await tether(['audit', 'refused', '--run', runId, '--json'])
      expect(JSON.parse(refused.stdout)).toEqual([
        expect.objectContaining({ target: 'rm -rf src', rule: 'rm*', layer: 'ops' }),
      ])
      const commands = await tether(['audit', 'ran', '--run', runId])
      expect(commands.code).toBe(0)
      expect(commands.stdout).toContain('no commands ran')
    } finally {
      await ws.cleanup()
    }
  })

  it('lists, approves and denies asks, and cancels a run', async () => {
    const ws = await npmWorkspace()
    try {
      const script = await writeScript(ws.path, {
        turns: [
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'a.txt'] } }] },
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'b.txt'] } }] },
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'c.txt'] } }] },
        ],
      })
      const policyFile = join(ws.path, '.policy.json')
      await writeFile(policyFile, JSON.stringify(POLICY))
      const runId = `cli-ask-${agent.taskQueue}`
      const started = await tether([
        'run',
        '--goal',
        'touch',
        '--workspace',
        ws.path,
        '--policy',
        policyFile,
        '--model',
        `scripted:${script}`,
        '--id',
        runId,
        '--json',
      ])
      expect(JSON.parse(started.stdout)).toEqual({ runId })
      expect(started.stderr).toBe(
        'verification: `npm test` (detected from the workspace; --verify none for no gate)\n',
      )

      const waitFor = async () => {
        for (;;) {
          const list = JSON.parse(
            (await tether(['approvals', '--approver', 'alice', '--json'])).stdout,
          ) as Array<{ approvalId: string; runId: string; target: string }>
          const mine = list.find((a) => a.runId === runId)
          if (mine) return mine
          await new Promise((r) => setTimeout(r, 300))
        }
      }
      const first = await waitFor()
      expect(first.target).toBe('touch a.txt')
      const stranger = await tether(['approve', first.approvalId, '--as', 'mallory'])
      expect(stranger.code).toBe(1)
      expect(stranger.stderr).toMatch(/^error: the run refused the answer: mallory may not answer/)
      expect(stranger.stderr.trim().split('\n')).toHaveLength(1)
      const approved = await tether(['approve', first.approvalId, '--as', 'alice', '--reason', 'fine'])
      expect(approved.code).toBe(0)
      expect(approved.stdout).toContain('approved exec touch a.txt')

      const second = await waitFor()
      expect(second.target).toBe('touch b.txt')
      const denied = await tether(['deny', second.approvalId, '--as', 'bob', '--reason', 'enough files'])
      expect(denied.code).toBe(0)
      const again = await tether(['deny', second.approvalId, '--as', 'bob', '--reason', 'twice'])
      expect(again.code).toBe(1)
      expect(again.stderr).toContain(`no approval ${second.approvalId} is waiting`)

      await waitFor()
      const cancelled = await tether(['cancel', runId])
      expect(cancelled.code).toBe(0)
      await expect
        .poll(async () => (await audit.runSummary(runId))?.outcome, { timeout: 30_000 })
        .toBe('cancelled')
      expect(existsSync(join(ws.path, 'a.txt'))).toBe(true)
      expect(existsSync(join(ws.path, 'b.txt'))).toBe(false)
    } finally {
      await ws.cleanup()
    }
  })

  it('says in one line what is wrong: no server, a bad policy file, an unknown run', async () => {
    const ws = await npmWorkspace()
    try {
      const noServer = await tether(['cancel', 'x'], { TEMPORAL_ADDRESS: '127.0.0.1:9' })
      expect(noServer.code).toBe(1)
      expect(noServer.stderr).toMatch(
        /^error: cannot reach Temporal at 127\.0\.0\.1:9 .*start `tether dev`, or set TEMPORAL_ADDRESS\n$/,
      )
      const bad = join(ws.path, 'bad.yaml')
      await writeFile(bad, 'defaults:\n  exec: maybe\n')
      const badPolicy = await tether([
        'run',
        '--goal',
        'g',
        '--workspace',
        ws.path,
        '--verify',
        'none',
        '--policy',
        bad,
      ])
      expect(badPolicy.code).toBe(1)
      expect(badPolicy.stderr.trim().split('\n')).toHaveLength(1)
      expect(badPolicy.stderr).toContain('defaults.exec')
      const unknown = await tether(['show', 'no-such-run'])
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toBe('error: no run no-such-run in the audit; list runs with `tether ls`\n')
      const migrate = await tether(['db', 'migrate'])
      expect(migrate.code).toBe(0)
      expect(migrate.stdout).toMatch(/nothing to apply|applied/)
    } finally {
      await ws.cleanup()
    }
  })

  it('tether dev starts the local stack, other commands find it, and Ctrl-C stops it', async () => {
    const state = await mkdtemp(join(tmpdir(), 'tether-dev-'))
    let dev: ChildProcess | undefined
    try {
      const devEnv = {
        ...env,
        TETHER_STATE_DIR: state,
        TEMPORAL_ADDRESS: '',
        DATABASE_URL: '',
        TETHER_TASK_QUEUE: '',
      }
      dev = spawn(process.execPath, ['--import', 'tsx', BIN, 'dev', '--headless'], {
        env: devEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      dev.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString()
      })
      await expect.poll(() => out, { timeout: 120_000, interval: 500 }).toContain('tether dev is running')
      expect(out).toMatch(/Temporal\s+127\.0\.0\.1:\d+/)
      const record = JSON.parse(await readFile(join(state, 'dev.json'), 'utf8'))
      expect(record.taskQueue).toBe('tether')
      const ls = await tether(['ls'], devEnv)
      expect(ls.code).toBe(0)
      expect(ls.stdout).toContain('no runs yet')
      dev.kill('SIGINT')
      const code = await new Promise((resolve) => dev?.on('close', resolve))
      expect(code).toBe(0)
      expect(out).toContain('tether dev stopped')
      expect(existsSync(join(state, 'dev.json'))).toBe(false)
      const pid = Number(
        (await readFile(join(state, 'postgres', 'postmaster.pid'), 'utf8').catch(() => '0')).split('\n')[0],
      )
      expect(pid === 0 || !existsSync(`/proc/${pid}`)).toBe(true)
    } finally {
      dev?.kill('SIGKILL')
      await rm(state, { recursive: true, force: true })
    }
  })
})
