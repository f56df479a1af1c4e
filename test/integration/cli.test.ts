/**
 * The `tether` command, every subcommand, as a person runs it: a real process against the real stack, from
 * a folder outside the checkout.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, statSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { FIX_ADD, npmWorkspace, openTestAudit, startAgentWorker, writeScript } from '../support/agent.js'
import { CHECKOUT, copyOfCheckout } from '../support/checkout.js'
import { connectClient } from '../support/temporal.js'

// The sources, so the test checks this code even when dist/ is older; tsx by path, as the cwd is elsewhere.
const BIN = join(CHECKOUT, 'src/cli/bin.ts')
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const VERSION = (JSON.parse(await readFile(join(CHECKOUT, 'package.json'), 'utf8')) as { version: string })
  .version
let audit: AuditStore
let agent: Awaited<ReturnType<typeof startAgentWorker>>
let env: NodeJS.ProcessEnv
let outside: string

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

function run(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}) {
  const child = spawn(command, args, {
    env: options.env ?? env,
    cwd: options.cwd ?? outside,
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
  return {
    child,
    done: new Promise<Ran>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr }))),
    output: () => stdout,
  }
}

function tether(args: string[], extraEnv: NodeJS.ProcessEnv = {}, cwd?: string): Promise<Ran> {
  return run(process.execPath, ['--import', TSX, BIN, ...args], {
    env: { ...env, ...extraEnv },
    ...(cwd ? { cwd } : {}),
  }).done
}

beforeAll(async () => {
  audit = await openTestAudit()
  agent = await startAgentWorker(audit)
  outside = await mkdtemp(join(tmpdir(), 'tether-cli-'))
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
  if (outside) await rm(outside, { recursive: true, force: true })
})

/**
 * A test file (the agent's, in a real run) that makes a new repository beside the project: in the sandbox it
 * runs nothing, but git run in sub/ afterwards by the person would run its fsmonitor.
 */
const PLANT =
  "import { mkdirSync, writeFileSync } from 'node:fs'\nimport { test } from 'node:test'\n" +
  "test('plants', () => { mkdirSync('sub/.git', { recursive: true }); " +
  "writeFileSync('sub/.git/config', '[core]\\n\\tfsmonitor = \"touch planted\"\\n') })\n"

const POLICY = {
  defaults: { read: 'allow', write: 'ask', exec: 'ask', net: 'deny' },
  identity: 'unsigned',
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

/** `tether run --follow` of the npm fixture's fix under POLICY, gated by `npm test`, with a scripted model. */
async function followedFix(workspace: string, script: string, runId: string) {
  const policyFile = join(workspace, '.policy.json')
  await writeFile(policyFile, JSON.stringify(POLICY))
  return tether([
    'run',
    '--goal',
    'fix add',
    '--workspace',
    workspace,
    '--verify',
    'npm test',
    '--policy',
    policyFile,
    '--model',
    `scripted:${script}`,
    '--id',
    runId,
    '--follow',
  ])
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
      ['rewind'],
      ['diff'],
      ['checkout'],
      ['snapshots'],
      ['snapshots', 'gc'],
      ['approvals'],
      ['approve'],
      ['deny'],
      ['audit'],
      ['audit', 'refused'],
      ['audit', 'ran'],
      ['audit', 'approvals'],
      ['audit', 'verify'],
      ['keys'],
      ['keys', 'new'],
      ['keys', 'show'],
      ['keys', 'list'],
      ['inbox'],
      ['inbox', 'token'],
      ['policy', 'check'],
      ['db', 'migrate'],
      ['completion'],
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
            // A note whose text would clear a terminal and retitle it, were it printed as it is.
            toolCalls: [
              FIX_ADD,
              {
                name: 'write_file',
                args: { path: 'src/notes.txt', content: 'fixed\u001b[2J\u001b]0;pwned\u0007\n' },
              },
            ],
          },
          { text: 'fixed' },
        ],
      })
      const runId = `cli-${agent.taskQueue}`
      const ran = await followedFix(ws.path, script, runId)
      expect(ran.stderr).toBe('')
      expect(ran.code).toBe(0)
      // The run id comes first, so a person can come back to the run whatever happens next.
      expect(ran.stdout.split('\n')[0]).toBe(`run ${runId} started on task queue ${agent.taskQueue}`)
      expect(ran.stdout).toContain('refused   exec rm -rf src  rule rm* in layer ops')
      expect(ran.stdout).toMatch(/outcome\s+verified/)
      // The policy went into the audit the worker reads; the run's input carries its digest, not the spec.
      const { client, close } = await connectClient()
      try {
        const [first] = (await client.workflow.getHandle(runId).fetchHistory()).events ?? []
        const [payload] = first?.workflowExecutionStartedEventAttributes?.input?.payloads ?? []
        const input = JSON.parse(Buffer.from(payload?.data ?? []).toString('utf8'))
        expect(input.policy).toBeUndefined()
        expect(input.policyRef).toMatch(/^[0-9a-f]{64}$/)
        const stored = await audit.runPolicyByDigest(input.policyRef)
        expect((stored as { layers: Array<{ name: string }> }).layers.map((layer) => layer.name)).toEqual(
          expect.arrayContaining(['ops', 'project']),
        )
      } finally {
        await close()
      }

      const ls = await tether(['ls', '--json'])
      expect(JSON.parse(ls.stdout).map((r: { runId: string }) => r.runId)).toContain(runId)
      const show = await tether(['show', runId])
      expect(show.stdout.split('\n').slice(0, 2)).toEqual([
        `${runId}  verified`,
        expect.stringMatching(/^reason: /),
      ])
      expect(show.stdout).toContain('step 1')
      expect(show.stdout).toContain(`workspace: ${ws.path}\n`)
      // The gate: its command with status and size, then its verdict; its output stays in `audit ran`.
      expect(show.stdout).toMatch(
        /ran\s+npm test\s+→ exit 0\s+[\d.]+ s, \d+ B\n\s+gate\s+`npm test` → exit 0\n/,
      )
      expect(show.stdout.match(/^\s+gate\s/gm)).toHaveLength(1)
      const refused = await tether(['audit', 'refused', '--run', runId, '--json'])
      expect(JSON.parse(refused.stdout)).toEqual([
        expect.objectContaining({ target: 'rm -rf src', rule: 'rm*', layer: 'ops' }),
      ])
      // The model ran nothing; the gate did, and "what ran" shows it with its size and hash.
      const commands = await tether(['audit', 'ran', '--run', runId])
      expect(commands.code).toBe(0)
      expect(commands.stdout).toMatch(/\d+ gate\s+npm test\s+exit 0\s+[\d.]+ s\s+\d+ B\s+[0-9a-f]{12}/)

      // The workspace between two steps, the run named by a unique start of its id as everywhere else;
      // a step the run never reached is refused in one line, not answered with its last tree.
      const diff = await tether(['diff', runId.slice(0, 'cli-agent-'.length + 8), '--from', '1', '--to', '2'])
      expect(diff.stderr).toBe('')
      expect(diff.stdout.split('\n').slice(1)).toEqual([
        expect.stringMatching(/^M src\/math\.js {2}\(/),
        expect.stringMatching(/^A src\/notes\.txt {2}\(/),
        '',
      ])
      // The lines themselves, read from the snapshot store (this workspace is no git repository).
      const patch = await tether(['diff', runId, '--from', '1', '--to', '2', '--patch'])
      expect(patch.stderr).toBe('')
      expect(patch.stdout).toContain(['M src/math.js', '--- a/src/math.js', '+++ b/src/math.js'].join('\n'))
      expect(patch.stdout).toMatch(/^-\s+return a - b\n\+\s+return a \+ b$/m)
      // What a run wrote reaches the terminal as escapes, never as control characters.
      expect(patch.stdout).toContain('+fixed\\u{1b}[2J\\u{1b}]0;pwned\\u{7}')
      expect(patch.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/)
      const beyond = await tether(['diff', runId, '--from', '0', '--to', '9'])
      expect(beyond.code).toBe(1)
      expect(beyond.stderr).toBe(`error: run ${runId} has steps 0 to 3; --to 9 is not one of them\n`)

      // Any step's tree, laid out anew from the store: step 1 still has the bug, the last tree the fix.
      const before = join(outside, `checkout-${runId}-1`)
      const one = await tether(['checkout', runId, '--step', '1', '--into', before])
      expect(one.stderr).toBe('')
      expect(one.stdout).toMatch(
        new RegExp(
          `^${runId}, step 1 \\(tree [0-9a-f]{12}, unchanged since step 0\\): \\d+ files, .+ in ${before}\n`,
        ),
      )
      expect(await readFile(join(before, 'src/math.js'), 'utf8')).toMatch(/return a - b/)
      expect(existsSync(join(before, 'src/notes.txt'))).toBe(false)
      const last = join(outside, `checkout-${runId}-last`)
      const latest = await tether(['checkout', runId, '--into', last, '--json'])
      expect(JSON.parse(latest.stdout)).toMatchObject({ runId, step: 3, into: last })
      expect(await readFile(join(last, 'src/math.js'), 'utf8')).toBe(
        await readFile(join(ws.path, 'src/math.js'), 'utf8'),
      )
      // A folder with anything in it is refused before anything is fetched, and keeps what it had.
      const again = await tether(['checkout', runId, '--into', last])
      expect(again.code).toBe(1)
      expect(again.stderr).toBe(`error: ${last} is not empty; give a new folder or an empty one\n`)
      expect(existsSync(join(last, 'src/math.js'))).toBe(true)
    } finally {
      await ws.cleanup()
    }
  })

  it("warns of git files a run's command wrote that make git run programs outside the sandbox", async () => {
    const ws = await npmWorkspace()
    try {
      await writeFile(join(ws.path, 'test/plant.test.js'), PLANT)
      const script = await writeScript(ws.path, { turns: [{ toolCalls: [FIX_ADD] }, { text: 'fixed' }] })
      const runId = `planted-${agent.taskQueue}`
      const ran = await followedFix(ws.path, script, runId)
      expect(ran.code, ran.stderr).toBe(0)
      const warning = [
        'warning   the run wrote git files that make git run programs: git run there outside the sandbox ' +
          "(yours, or an editor's on its own) obeys them — read them before you use git in those folders:",
        '            sub/.git/config: core.fsmonitor = "touch planted"',
        // A root worker gave the folder back to root but that repository, which root's git then refuses:
        // git's own advice for that (safe.directory) would make it obey the file.
        ...(process.getuid?.() === 0
          ? [
              "            tether left them its commands' identity's, so git refuses them as another user's " +
                '("dubious ownership"): read them before you add them to safe.directory or chown them',
            ]
          : []),
      ].join('\n')
      expect(ran.stdout).toContain(`verified`)
      expect(ran.stdout).toContain(warning)
      const shown = await tether(['show', runId])
      expect(shown.stdout.trimEnd().endsWith(warning)).toBe(true)
      const json = JSON.parse((await tether(['show', runId, '--json'])).stdout)
      expect(json.plantedGit).toEqual([{ path: 'sub/.git/config', what: 'core.fsmonitor = "touch planted"' }])
      // The tree laid out elsewhere holds it too, and says so.
      const into = join(outside, `checkout-${runId}`)
      const laid = await tether(['checkout', runId, '--into', into])
      expect(laid.stdout).toContain('warning   the tree holds git files that make git run programs')
      expect(laid.stdout).toContain('sub/.git/config: core.fsmonitor = "touch planted"')
    } finally {
      await ws.cleanup()
    }
  })

  it('lists beside an ask the git files its run planted, before anyone says yes to it', async () => {
    const ws = await npmWorkspace()
    try {
      await writeFile(join(ws.path, 'test/plant.test.js'), PLANT)
      const script = await writeScript(ws.path, {
        turns: [
          { toolCalls: [{ name: 'exec', args: { argv: ['npm', 'test'] } }] },
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'asked'] } }] },
        ],
      })
      const policyFile = join(ws.path, '.policy.json')
      await writeFile(policyFile, JSON.stringify(POLICY))
      const runId = `planted-ask-${agent.taskQueue}`
      const started = await tether([
        ...scriptedRun(ws.path, script, 'ask', '--policy', policyFile),
        '--id',
        runId,
      ])
      expect(started.code, started.stderr).toBe(0)
      let listed: Array<{ runId: string; plantedGit?: unknown }> = []
      for (let tries = 0; !listed.some((a) => a.runId === runId); tries++) {
        expect(tries).toBeLessThan(200)
        await new Promise((resolve) => setTimeout(resolve, 300))
        listed = JSON.parse((await tether(['approvals', '--run', runId, '--json'])).stdout)
      }
      expect(listed[0]?.plantedGit).toEqual([
        { path: 'sub/.git/config', what: 'core.fsmonitor = "touch planted"' },
      ])
      const table = await tether(['approvals', '--run', runId])
      expect(table.stdout).toContain(
        `warning   run ${runId} wrote git files that make git run programs: git run there outside the sandbox`,
      )
      expect(table.stdout).toContain('            sub/.git/config: core.fsmonitor = "touch planted"')
      // On a root worker the folder is the commands' identity's while the run waits: git's advice for the
      // refusal that follows (safe.directory) would make root's git obey what the run planted.
      const shown = await tether(['show', runId])
      expect(shown.stdout.includes('Do not add it to safe.directory')).toBe(process.getuid?.() === 0)
      expect((await tether(['cancel', runId])).code).toBe(0)
    } finally {
      await ws.cleanup()
    }
  })

  it('makes approver keys, lists asks with what remember would add, signs approvals and denials, verifies them, cancels a run', async () => {
    const ws = await npmWorkspace()
    const keyring = { TETHER_KEYS_DIR: join(outside, 'keys') }
    try {
      const approvers = []
      for (const name of ['alice', 'bob', 'mallory']) {
        const made = await tether(['keys', 'new', name], keyring)
        expect(made.code, made.stderr).toBe(0)
        const entry = /- \{ name: (\S+), keys: \["(ed25519:[^"]+)"\] \}/.exec(made.stdout)
        expect(entry?.[1]).toBe(name)
        expect(statSync(join(outside, 'keys', `${name}.pem`)).mode & 0o777).toBe(0o600)
        if (name !== 'mallory') approvers.push({ name, keys: [entry?.[2]] })
      }
      const listed = await tether(['keys', 'list', '--json'], keyring)
      expect(JSON.parse(listed.stdout).map((k: { name: string }) => k.name)).toEqual([
        'alice',
        'bob',
        'mallory',
      ])
      const again = await tether(['keys', 'new', 'alice'], keyring)
      expect(again.code).toBe(1)
      expect(again.stderr).toMatch(/alice\.pem exists already/)

      const script = await writeScript(ws.path, {
        turns: [
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'a.txt'] } }] },
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'b.txt'] } }] },
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'c.txt'] } }] },
        ],
      })
      const policyFile = join(ws.path, '.policy.json')
      const { identity: _unsigned, ...signedPolicy } = POLICY
      await writeFile(policyFile, JSON.stringify({ ...signedPolicy, approvers }))
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
          ) as Array<{ approvalId: string; runId: string; target: string; identity: string }>
          const mine = list.find((a) => a.runId === runId)
          if (mine) return mine
          await new Promise((r) => setTimeout(r, 300))
        }
      }
      const first = await waitFor()
      expect(first).toMatchObject({ target: 'touch a.txt', identity: 'signed' })
      // Deadlines read in UTC, in the reader's own zone, as the time left, and with the limit that sets
      // them (the default 4h wall-time budget ends before the 24h approval timeout); the rule remember
      // would add is shown before anyone answers.
      const table = await tether(['approvals', '--run', runId], { TZ: 'Asia/Kolkata' })
      expect(table.stdout).toMatch(
        / \d{4}-\d\d-\d\d \d\d:\d\d UTC \(\d{4}-\d\d-\d\d \d\d:\d\d GMT\+5:30 your time\), in 3h \d+m \(set by the run's wall-time budget\)/,
      )
      expect(table.stdout).toContain('1 signed')
      expect(table.stdout).toContain('`touch a.txt`')
      // The run's own timeline says the same of its waiting approval.
      const waiting = await tether(['show', runId])
      expect(waiting.stdout).toMatch(/waiting\s+approval .* in 3h \d+m \(set by the run's wall-time budget\)/)
      const stranger = await tether(['approve', first.approvalId, '--as', 'mallory'], keyring)
      expect(stranger.code).toBe(1)
      expect(stranger.stderr).toMatch(
        /^error: the run refused the answer \(UnknownKey\): key SHA256:[0-9a-f]{32} is not on this run's approver list/,
      )
      expect(stranger.stderr.trim().split('\n')).toHaveLength(1)
      const approved = await tether(
        ['approve', first.approvalId, '--as', 'alice', '--reason', 'fine'],
        keyring,
      )
      expect(approved.code, approved.stderr).toBe(0)
      expect(approved.stdout).toMatch(/signing as alice with SHA256:[0-9a-f]{32}: approve exec touch a\.txt/)
      expect(approved.stdout).toContain('approved exec touch a.txt')

      const second = await waitFor()
      expect(second.target).toBe('touch b.txt')
      const denied = await tether(
        ['deny', second.approvalId, '--as', 'bob', '--reason', 'enough files'],
        keyring,
      )
      expect(denied.code, denied.stderr).toBe(0)
      // The audit names who denied, not the rule that asked.
      await expect
        .poll(async () => (await tether(['audit', 'refused', '--run', runId])).stdout, { timeout: 30_000 })
        .toMatch(/exec\s+touch b\.txt\s+bob \(update\)\s+enough files/)
      const twice = await tether(['deny', second.approvalId, '--as', 'bob', '--reason', 'twice'], keyring)
      expect(twice.code).toBe(1)
      expect(twice.stderr).toContain(`approval ${second.approvalId} was already denied by bob`)

      const verified = await tether(['audit', 'approvals', '--run', runId, '--verify'])
      expect(verified.code, verified.stderr).toBe(0)
      expect(verified.stdout).toMatch(/alice\s+approve\s+update\s+verified SHA256:/)
      expect(verified.stdout).toMatch(/bob\s+deny\s+update\s+verified SHA256:/)
      expect(verified.stdout).toContain('2 of 2 answers check out')

      await waitFor()
      const cancelled = await tether(['cancel', runId])
      expect(cancelled.code).toBe(0)
      await expect
        .poll(async () => (await audit.runSummary(runId))?.outcome, { timeout: 30_000 })
        .toBe('cancelled')
      expect(existsSync(join(ws.path, 'a.txt'))).toBe(true)
      expect(existsSync(join(ws.path, 'b.txt'))).toBe(false)
      // Cancelling what already ended changes nothing, and says so.
      const cancelAgain = await tether(['cancel', runId])
      expect(cancelAgain.code).toBe(1)
      expect(cancelAgain.stderr).toBe(
        `error: run ${runId} is already closed (cancelled); nothing to cancel\n`,
      )
      // Each answer is one line of the timeline, naming who answered, how and why.
      const shown = (await tether(['show', runId])).stdout
      expect(shown).toContain('approval  exec touch a.txt → approved by alice via update: fine')
      expect(shown).toContain('approval  exec touch b.txt → denied by bob via update: enough files')
      expect(shown).not.toContain('decided')
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
      // A run the audit has as running whose workflow the server never had (or lost): cancel ends it there.
      const ghost = `ghost-${randomUUID()}`
      await audit.recordRunStarted({
        runId: ghost,
        goal: 'lost with its history',
        workspace: ws.path,
        contract: { goal: 'lost with its history', workspace: ws.path },
        policy: {},
        startedAt: new Date(),
      })
      const lost = await tether(['cancel', ghost])
      expect(lost.code, lost.stderr).toBe(0)
      expect(lost.stdout).toMatch(
        new RegExp(
          `^run ${ghost}: Temporal \\(namespace .+\\) has no workflow for this run: its history was lost or deleted; recorded as cancelled in the audit\n$`,
        ),
      )
      expect(await audit.runSummary(ghost)).toMatchObject({
        status: 'finished',
        outcome: 'cancelled',
        reason: expect.stringContaining('its history was lost or deleted'),
      })
      expect((await tether(['cancel', ghost])).stderr).toBe(
        `error: run ${ghost} already ended (cancelled); nothing to cancel\n`,
      )
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

  it('refuses a run that cannot work before anything is asked, in one line, and records why', async () => {
    const ws = await npmWorkspace()
    try {
      // Every run here would ask first (touch is not allowed), so an approval row would show a late failure.
      const script = await writeScript(ws.path, {
        turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['touch', 'a.txt'] } }] }],
      })
      const policyFile = join(ws.path, '.policy.json')
      await writeFile(policyFile, JSON.stringify(POLICY))
      const gone = join(ws.path, 'gone')
      const file = join(ws.path, 'package.json')
      const noScript = join(ws.path, 'no-script.json')
      const flags = (workspace: string, verify: string, model: string) => [
        '--workspace',
        workspace,
        '--verify',
        verify,
        '--model',
        `scripted:${model}`,
      ]
      const cases: Array<{ args: string[]; reason: string }> = [
        {
          args: ['--policy', policyFile, ...flags(gone, 'none', script)],
          reason: `the workspace ${gone} does not exist on the worker`,
        },
        {
          args: ['--policy', policyFile, ...flags(file, 'none', script)],
          reason: `the workspace ${file} is not a directory`,
        },
        {
          args: ['--policy', policyFile, ...flags(ws.path, 'none', noScript)],
          reason: `the worker cannot use the model "scripted:${noScript}": cannot read the model script ${noScript}`,
        },
        {
          // No policy file: the default one allows exactly the gate, so only the program is missing.
          args: flags(ws.path, 'no-such-tool-xyz --check', script),
          reason: `the verification command's program "no-such-tool-xyz" is not on the worker's PATH`,
        },
      ]
      const { client, close } = await connectClient()
      try {
        for (const [index, { args, reason }] of cases.entries()) {
          const runId = `cli-early-${index}-${agent.taskQueue}`
          const ran = await tether(['run', '--goal', 'g', ...args, '--id', runId])
          expect(ran.code, reason).toBe(1)
          expect(ran.stderr.split('\n')).toEqual([
            expect.stringMatching(new RegExp(`^error: run ${runId} was rejected: .*${escapeRegExp(reason)}`)),
            '',
          ])
          expect(ran.stdout).toBe(`run ${runId} started on task queue ${agent.taskQueue}\n`)
          const approvals = await audit.pool.query(
            'select count(*)::int as n from approvals where run_id = $1',
            [runId],
          )
          expect(approvals.rows[0].n).toBe(0)
          // The reason is in tether show, tether ls, and Temporal's own status.
          const show = await tether(['show', runId])
          expect(show.stdout.split('\n').slice(0, 2)).toEqual([
            `${runId}  failed`,
            expect.stringContaining(`reason: ${reason}`),
          ])
          // Following a run that ended without success exits 3 (documented in tether --help).
          const followed = await tether(['show', runId, '--follow'])
          expect(followed.code).toBe(3)
          expect(followed.stdout).toMatch(/outcome\s+failed/)
          const listed = JSON.parse((await tether(['ls', '--json', '--limit', '100'])).stdout) as Array<{
            runId: string
            outcome: string
            reason: string
          }>
          expect(listed.find((r) => r.runId === runId)).toMatchObject({
            outcome: 'failed',
            reason: expect.stringContaining(reason),
          })
          const handle = client.workflow.getHandle(runId)
          expect((await handle.describe()).status.name).toBe('FAILED')
          const failure = await handle.result().catch((e: unknown) => e)
          expect(failure).toBeInstanceOf(WorkflowFailedError)
          const cause = (failure as WorkflowFailedError).cause as ApplicationFailure
          expect(cause).toBeInstanceOf(ApplicationFailure)
          expect(cause.type).toBe('ContractRejected')
          expect(cause.details?.[0]).toMatchObject({ runId, outcome: 'failed', reason: cause.message })
        }
      } finally {
        await close()
      }

      // Refused by the client before anything starts: a gate the policy would not allow, a bare number.
      const start = (...flags: string[]) => tether(['run', '--goal', 'g', '--workspace', ws.path, ...flags])
      const gate = await start('--policy', policyFile, '--verify', 'make check')
      expect(gate.code).toBe(1)
      expect(gate.stderr).toMatch(
        /^error: the verification command `make check` is not allowed by the policy \(ask: .*\); the gate runs unattended, so the policy must allow it\n$/,
      )
      const number = await start('--verify', 'none', '--max-time', '1800')
      expect(number.code).toBe(1)
      expect(number.stderr).toBe(
        'error: invalid task contract: budgets.maxWallTime: "1800" has no unit; write a duration with a unit, e.g. "30m" or "1800s"\n',
      )
      expect(gate.stdout + number.stdout).toBe('')
    } finally {
      await ws.cleanup()
    }
  })

  it('follows a run: on a terminal a line that ticks every second with the command; for a script, JSON lines', async () => {
    const ws = await npmWorkspace()
    try {
      const policyFile = join(ws.path, '.policy.json')
      const ticking = {
        ...POLICY,
        layers: [
          ...POLICY.layers,
          { name: 'follow', rules: [{ act: 'exec', effect: 'allow', pattern: 'sleep *' }] },
        ],
      }
      await writeFile(policyFile, JSON.stringify(ticking))
      const start = async (seconds: number, follow: string[]) => {
        const script = await writeScript(ws.path, {
          turns: [
            { toolCalls: [{ name: 'exec', args: { argv: ['sleep', String(seconds)] } }] },
            { text: 'slept' },
          ],
        })
        return scriptedRun(ws.path, script, 'sleep', '--policy', policyFile, '--follow', ...follow)
      }
      // A terminal: the CLI runs under script(1), which gives it one.
      const quote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`
      const line = [process.execPath, '--import', TSX, BIN, ...(await start(5, []))].map(quote).join(' ')
      const terminal = await run('script', ['-qfec', line, '/dev/null']).done
      expect(terminal.code, terminal.stdout).toBe(0)
      const frames = terminal.stdout.split('\r').map((frame) => frame.replace(/\u001b\[2K/g, ''))
      const seconds = frames.flatMap((frame) => {
        const shown = /… running `sleep 5` for (\d+)s, 0 B of output so far/.exec(frame)?.[1]
        return shown ? [Number(shown)] : []
      })
      // The line names the command and moved on with every second of it, heartbeats or not.
      expect([...new Set(seconds)]).toEqual(expect.arrayContaining([1, 2, 3, 4]))
      expect(terminal.stdout).toMatch(/ran\s+sleep 5\s+→ exit 0/)

      const json = await tether(await start(2, ['--json']))
      expect(json.code, json.stderr).toBe(0)
      const events = json.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { event: string })
      expect(events[0]).toMatchObject({ event: 'started', taskQueue: agent.taskQueue })
      expect(events.at(-1)).toMatchObject({ event: 'outcome', outcome: 'finished', reason: 'slept' })
      expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['step', 'exec', 'progress']))
      expect(events.find((e) => e.event === 'progress')).toMatchObject({
        kind: 'command',
        command: 'sleep 2',
      })
    } finally {
      await ws.cleanup()
    }
  })

  it('takes a unique start of a run or approval id; an ambiguous one is one line', async () => {
    const ws = await npmWorkspace()
    try {
      const script = await writeScript(ws.path, { turns: [{ text: 'done' }] })
      const base = `cli-pfx-${agent.taskQueue}`
      for (const id of [`${base}-alpha`, `${base}-beta`]) {
        const started = await tether(scriptedRun(ws.path, script, 'g', '--id', id, '--follow'))
        expect(started.code, started.stderr).toBe(0)
      }
      const shown = await tether(['show', `${base}-al`])
      expect(shown.code, shown.stderr).toBe(0)
      expect(shown.stdout.split('\n')[0]).toBe(`${base}-alpha  finished`)
      const ambiguous = await tether(['show', `${base}-`])
      expect(ambiguous.code).toBe(1)
      expect(ambiguous.stderr).toBe(
        `error: run id ${base}- is ambiguous: it starts 2 runs (${base}-alpha, ${base}-beta); type more of it\n`,
      )
      const none = await tether(['audit', 'ran', '--run', `${base}-gamma`])
      expect(none.stderr).toBe(`error: no run ${base}-gamma in the audit; list runs with \`tether ls\`\n`)
    } finally {
      await ws.cleanup()
    }
  })

  it('takes the policy and the approver from a profile of its config file, below flags and variables', async () => {
    const ws = await npmWorkspace()
    const config = await mkdtemp(join(tmpdir(), 'tether-config-'))
    try {
      const policyFile = join(config, 'team-policy.json')
      await writeFile(policyFile, JSON.stringify(POLICY))
      await mkdir(join(config, 'tether'))
      await writeFile(
        join(config, 'tether', 'config.toml'),
        '[profile.default]\napprover = "nobody"\n\n[profile.work]\npolicy = "../team-policy.json"\napprover = "bob"\n',
      )
      const settings = { XDG_CONFIG_HOME: config }
      const script = await writeScript(ws.path, {
        turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['touch', 'p.txt'] } }] }, { text: 'done' }],
      })
      const runId = `cli-profile-${agent.taskQueue}`
      const started = await tether(
        ['--profile', 'work', ...scriptedRun(ws.path, script, 'touch', '--id', runId, '--json')],
        settings,
      )
      expect(started.code, started.stderr).toBe(0)
      expect(started.stderr).toBe(
        `policy: ${policyFile} (policy in profile "work" of ${join(config, 'tether', 'config.toml')})\n`,
      )
      let approvalId = ''
      await expect
        .poll(
          async () => {
            const waiting = JSON.parse((await tether(['approvals', '--run', runId, '--json'])).stdout)
            approvalId = waiting[0]?.approvalId ?? ''
            return approvalId
          },
          { timeout: 60_000 },
        )
        .not.toBe('')
      // The policy is the profile's: its unsigned approvers are alice and bob, and the profile answers as bob.
      const approved = await tether(['approve', approvalId.slice(0, 8)], {
        ...settings,
        TETHER_PROFILE: 'work',
      })
      expect(approved.code, approved.stderr).toBe(0)
      expect(approved.stdout).toContain(`approved exec touch p.txt in ${runId}`)
      expect((await audit.approval(approvalId))?.decidedBy).toBe('bob')
      // The approved command runs and the run ends, before its workspace is removed.
      const { client, close } = await connectClient()
      try {
        expect(await client.workflow.getHandle(runId).result()).toMatchObject({ outcome: 'finished' })
      } finally {
        await close()
      }
      const unknown = await tether(['--profile', 'home', 'ls'], settings)
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toMatch(
        /^error: --profile "home" is not in .*config\.toml \(it has "default", "work"\)/,
      )
    } finally {
      await ws.cleanup()
      await rm(config, { recursive: true, force: true })
    }
  })

  it('writes completion scripts that load in bash and complete commands and their options', async () => {
    const bash = await tether(['completion', 'bash'])
    expect(bash.code).toBe(0)
    const file = join(outside, 'tether.bash')
    await writeFile(file, bash.stdout)
    const complete = (words: string[]) =>
      run('bash', [
        '-c',
        `source ${file} && COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}) && COMP_CWORD=${words.length - 1} && _tether && echo "\${COMPREPLY[*]}"; complete -p tether`,
      ]).done
    const top = await complete(['tether', 'ap'])
    expect(top).toMatchObject({ code: 0, stderr: '' })
    expect(top.stdout).toBe('approvals approve\ncomplete -o default -F _tether tether\n')
    expect((await complete(['tether', 'audit', 'r'])).stdout.split('\n')[0]).toBe('refused ran')
    expect((await complete(['tether', 'keys', 'list', '--'])).stdout.split('\n')[0]).toBe('--json --help')
    // A flag's value is a file: left to bash.
    expect((await complete(['tether', 'run', '--policy', ''])).stdout.split('\n')[0]).toBe('')
    expect((await tether(['completion', 'zsh'])).stdout).toMatch(/^#compdef tether\n/)
    expect((await tether(['completion', 'fish'])).stdout).toContain(
      "complete -c tether -n '__tether_at \\'\\'' -a 'run' -d 'Start an agent run",
    )
    const other = await tether(['completion', 'powershell'])
    expect(other).toMatchObject({
      code: 2,
      stderr: 'error: no completion for powershell: choose bash, zsh, fish\n',
    })
  })

  it('npx tether works in a project that installed the checkout, and a global install puts tether on PATH', async () => {
    const project = join(outside, 'project')
    const prefix = join(outside, 'global')
    await mkdir(project, { recursive: true })
    await writeFile(join(project, 'package.json'), '{ "name": "user-project", "private": true }\n')
    const npm = (args: string[], cwd: string) =>
      run('npm', [...args, '--offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd }).done
    // Installing a folder runs its prepare (the build): a copy's, so the checkout's dist/ stays as it is.
    const copy = await copyOfCheckout(join(outside, 'checkout'))
    const installed = await npm(['install', copy], project)
    expect(installed.code, installed.stderr).toBe(0)
    const npx = await run('npx', ['--offline', 'tether', '--version'], { cwd: project }).done
    expect(npx).toMatchObject({ code: 0, stdout: `${VERSION}\n` })

    const global = await npm(['install', '--global', '--prefix', prefix, copy], outside)
    expect(global.code, global.stderr).toBe(0)
    const onPath = await run('tether', ['--version'], {
      cwd: project,
      env: { ...env, PATH: `${join(prefix, 'bin')}:${env.PATH}` },
    }).done
    expect(onPath).toMatchObject({ code: 0, stdout: `${VERSION}\n` })
  })

  it('refuses to serve the inbox beyond loopback without an access mode, in one line, before connecting', async () => {
    const open = await tether(['inbox', '--host', '0.0.0.0'], { TEMPORAL_ADDRESS: '127.0.0.1:9' })
    expect(open.code).toBe(1)
    expect(open.stderr).toBe(
      'error: 0.0.0.0 is not a loopback address, so others could reach the inbox: choose an access mode — ' +
        '--access tokens (see `tether inbox token NAME`) or --access header --identity-header NAME (behind an authenticating proxy)\n',
    )
    const header = await tether(['inbox', '--host', '0.0.0.0', '--access', 'header'])
    expect(header.stderr).toBe(
      'error: --access header needs --identity-header NAME (the header your proxy sets)\n',
    )
  })

  it('tether dev keeps its ports unless taken, says which it chose, and is found from any folder', async () => {
    const xdg = await mkdtemp(join(tmpdir(), 'tether-xdg-'))
    // PostgreSQL runs as another user when tests run as root: it must be able to pass through.
    await chmod(xdg, 0o755)
    const state = join(xdg, 'tether')
    const [here, there] = [join(outside, 'a'), join(outside, 'b')]
    await mkdir(here, { recursive: true })
    await mkdir(there, { recursive: true })
    // The test's own "usual" Temporal port, held by someone else; never the developer's real 7233.
    const holder = await listen(0)
    const taken = (holder.address() as { port: number }).port
    const postgresPort = await freePort()
    let dev: ReturnType<typeof run> | undefined
    try {
      const devEnv = {
        ...env,
        XDG_STATE_HOME: xdg,
        TETHER_STATE_DIR: '',
        TEMPORAL_ADDRESS: '',
        DATABASE_URL: '',
        TETHER_TASK_QUEUE: '',
        TETHER_TEMPORAL_PORT: String(taken),
        TETHER_POSTGRES_PORT: String(postgresPort),
        TETHER_INBOX_PORT: String(await freePort()),
      }
      dev = run(process.execPath, ['--import', TSX, BIN, 'dev'], { env: devEnv, cwd: here })
      await expect.poll(dev.output, { timeout: 120_000, interval: 500 }).toContain('tether dev is running')
      const out = dev.output()
      expect(out).toMatch(new RegExp(`port ${taken} was taken, so Temporal uses \\d+`))
      expect(out).toMatch(/Temporal UI {3}http:\/\/127\.0\.0\.1:\d+/)
      expect(out).toContain(`PostgreSQL    127.0.0.1:${postgresPort}`)
      expect(out).toContain(`state         ${state}`)
      const record = JSON.parse(await readFile(join(state, 'dev.json'), 'utf8'))
      const base = `http://127.0.0.1:${devEnv.TETHER_INBOX_PORT}`
      expect(record).toMatchObject({
        taskQueue: 'tether',
        temporalAddress: expect.not.stringContaining(`:${taken}`),
        inboxUrl: expect.stringMatching(new RegExp(`^${base}/login\\?token=[\\w-]{20,}$`)),
      })
      expect(out).toContain(`inbox         ${record.inboxUrl} (approvals and runs, in a browser;`)
      // The floor every run stands on, made in the state folder on first use.
      expect(out).toContain(`floor         ${join(state, 'floor.yaml')}`)
      expect(await readFile(join(state, 'floor.yaml'), 'utf8')).toContain('sandbox: enforce')
      // Loopback is not an identity: without the stack's token the inbox shows nothing.
      expect((await fetch(`${base}/`)).status).toBe(401)
      const token = new URL(record.inboxUrl).searchParams.get('token')
      const inbox = await fetch(`${base}/`, { headers: { authorization: `Bearer ${token}` } })
      expect(inbox.status).toBe(200)
      expect(await inbox.text()).toContain('Nothing is waiting for an answer.')

      const ls = await tether(['ls'], devEnv, there)
      expect(ls).toMatchObject({ code: 0, stderr: '' })
      expect(ls.stdout).toContain('no runs yet')
      const second = await tether(['dev', '--headless'], devEnv, there)
      expect(second.code).toBe(1)
      expect(second.stderr).toMatch(
        /^error: tether dev is already running \(pid \d+, Temporal 127\.0\.0\.1:\d+, state .*\); /,
      )
      expect(second.stderr.trim().split('\n')).toHaveLength(1)
      const reset = await tether(['dev', '--reset'], devEnv, there)
      expect(reset.code).toBe(1)
      expect(reset.stderr).toMatch(/^error: tether dev is already running .*stop it before --reset/)

      // What happens to runs, a line each, in tether dev's own terminal; none of the SDK's chatter.
      const ws = await npmWorkspace()
      try {
        const script = await writeScript(ws.path, { turns: [{ text: 'done' }] })
        const id = `dev-events-${process.pid}`
        const ran = await tether(
          scriptedRun(ws.path, script, 'dev events', '--id', id, '--follow'),
          devEnv,
          there,
        )
        expect(ran.code, ran.stderr).toBe(0)
        await expect.poll(dev.output, { timeout: 30_000 }).toMatch(new RegExp(`run ${id} finished: done`))
        expect(dev.output()).toMatch(new RegExp(`\\d\\d:\\d\\d:\\d\\d  run ${id} started: dev events\n`))
        expect(dev.output()).not.toMatch(/\[INFO\]/)
      } finally {
        await ws.cleanup()
      }

      dev.child.kill('SIGINT')
      const stopped = await dev.done
      expect(stopped.code).toBe(0)
      expect(stopped.stdout).toContain('tether dev stopped')
      expect(existsSync(join(state, 'dev.json'))).toBe(false)
      const pid = Number(
        (await readFile(join(state, 'postgres', 'postmaster.pid'), 'utf8').catch(() => '0')).split('\n')[0],
      )
      expect(pid === 0 || !existsSync(`/proc/${pid}`)).toBe(true)
    } finally {
      dev?.child.kill('SIGKILL')
      holder.close()
      await rm(xdg, { recursive: true, force: true })
    }
  })
})

/** `tether run` of a scripted model without a gate, and the options a test adds. */
function scriptedRun(workspace: string, script: string, goal: string, ...more: string[]): string[] {
  return [
    'run',
    '--goal',
    goal,
    '--workspace',
    workspace,
    '--verify',
    'none',
    '--model',
    `scripted:${script}`,
    ...more,
  ]
}

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(port, '127.0.0.1', () => resolve(server))
  })
}

async function freePort(): Promise<number> {
  const server = await listen(0)
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
