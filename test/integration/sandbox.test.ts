/**
 * The sandbox in a real run: what an allowed command can no longer reach, what the audit records of it,
 * and a run that asks for the sandbox on a worker that cannot build one.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { realpathSync, statfsSync, statSync } from 'node:fs'
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { WorkflowFailedError } from '@temporalio/client'
import { describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { IDENTITY_FIRST } from '../../src/exec/index.js'
import { Policy } from '../../src/policy/index.js'
import {
  npmWorkspace,
  startRun,
  testPolicy,
  useAgentHarness,
  useAgentWorker,
  writeScript,
} from '../support/agent.js'
import { sandboxesWaitingFor } from '../support/processes.js'

const harness = useAgentHarness()
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

async function messagesText(audit: AuditStore, runId: string): Promise<string> {
  return JSON.stringify(await audit.loadMessages(runId))
}

describe('an allowed command inside the sandbox', () => {
  it('cannot read the host home, reach the audit database or see the worker’s secrets — and the audit says so', async () => {
    const ws = await npmWorkspace()
    const planted = `${homedir()}/.tether-run-probe-${randomBytes(4).toString('hex')}`
    await writeFile(planted, 'worker secret\n')
    const database = new URL(inject('databaseUrl'))
    await writeFile(
      `${ws.path}/probe.cjs`,
      `require('node:net').connect(${database.port}, '127.0.0.1').on('connect', () => console.log('CONNECTED')).on('error', (e) => console.log(e.code))`,
    )
    process.env.TETHER_TEST_DEPLOY_TOKEN = 'do-not-leak'
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          { toolCalls: [exec('cat', planted), exec('node', 'probe.cjs'), exec('env')] },
          { text: 'done' },
        ],
      } as never)}`
      const policy = testPolicy().allowExec('cat *').allowExec('node probe.cjs').allowExec('env')
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'probe the boundary', workspace: ws.path, model, verification: null },
        policy,
      )
      expect((await handle.result()).outcome).toBe('finished')
      // Each command's next sandbox was built ahead; the run's end took down the last one.
      expect(sandboxesWaitingFor(realpathSync(ws.path))).toEqual([])
      const runId = handle.workflowId
      const commands = await harness.audit.executedCommands({ runId })
      expect(commands.map((c) => c.argv[0])).toEqual(['cat', 'node', 'env'])
      const [cat, node, env] = commands
      expect(cat?.exitCode).toBe(1)
      expect(cat?.stderr.text).toMatch(/No such file or directory/)
      expect(node?.stdout.text).toBe('ECONNREFUSED\n')
      expect(env?.stdout.text).not.toMatch(/DATABASE_URL|TEMPORAL_|do-not-leak/)
      expect(env?.sandbox).toMatchObject({ mode: 'enforce', limits: { enforcedBy: expect.any(String) } })
      const names = (env?.sandbox as { envNames?: string[] } | undefined)?.envNames ?? []
      expect(names).toContain('PATH')
      expect(names).not.toContain('DATABASE_URL')
      expect(names).not.toContain('TETHER_TEST_DEPLOY_TOKEN')
      expect((await harness.audit.runSummary(runId))?.sandbox).toBe('enforce')
      // The model read the operating system's refusal.
      expect(await messagesText(harness.audit, runId)).toContain('No such file or directory')
    } finally {
      delete process.env.TETHER_TEST_DEPLOY_TOKEN
      await rm(planted, { force: true })
      await ws.cleanup()
    }
  })
})

describe('a worker whose floor turns the sandbox off (a macOS or Windows worker)', () => {
  const worker = useAgentWorker({}, Policy.permissive().layer('operator').withSandbox('off'))

  it('runs commands unsandboxed, and the run records it', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, { turns: [{ toolCalls: [exec('true')] }, { text: 'done' }] } as never)}`
      const policy = Policy.tiered().layer('project').allowExec('true')
      const handle = await startRun(
        harness.client,
        worker.taskQueue,
        { goal: 'off', workspace: ws.path, model, verification: null },
        policy,
      )
      expect((await handle.result()).outcome).toBe('finished')
      expect((await worker.audit.runSummary(handle.workflowId))?.sandbox).toBe('off')
      const [command] = await worker.audit.executedCommands({ runId: handle.workflowId })
      expect(command?.sandbox).toMatchObject({ mode: 'off' })
    } finally {
      await ws.cleanup()
    }
  })
})

describe.runIf(process.getuid?.() === 0)("a root worker's run", () => {
  it('runs commands as the workspace’s own identity, which can change what write_file wrote', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          {
            toolCalls: [{ name: 'write_file', args: { path: 'src/note.txt', content: 'from the worker\n' } }],
          },
          { toolCalls: [exec('touch', 'src/note.txt'), exec('id', '-u'), exec('npm', 'test')] },
          { text: 'done' },
        ],
      } as never)}`
      const policy = testPolicy().allowExec('touch src/note.txt').allowExec('id -u')
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'identity', workspace: ws.path, model, verification: null },
        policy,
      )
      expect((await handle.result()).outcome).toBe('finished')
      const [touch, id, npm] = await harness.audit.executedCommands({ runId: handle.workflowId })
      expect(touch).toMatchObject({ status: 'exited', exitCode: 0 })
      expect(Number(id?.stdout.text)).toBeGreaterThanOrEqual(IDENTITY_FIRST)
      // The fixture's test fails on purpose (the agent is to fix it): what matters is that it ran.
      expect(npm).toMatchObject({ status: 'exited' })
      expect(npm?.stdout.text).toMatch(/# tests 1\n/)
      // The run over, the folder is root's again, what the commands made included.
      for (const path of ['.', 'src', 'src/note.txt']) {
        expect(statSync(join(ws.path, path)), path).toMatchObject({ uid: 0, gid: 0 })
      }
    } finally {
      await ws.cleanup()
    }
  })

  it('on a full workspace disk runs nothing there, tells the model why, and finishes', async () => {
    const ws = await mkdtemp(join(tmpdir(), 'tether-full-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tether-test-disk', ws])
    try {
      await cp(fileURLToPath(new URL('../../examples/npm-project/', import.meta.url)), ws, {
        recursive: true,
      })
      const model = `scripted:${await writeScript(ws, {
        turns: [
          {
            toolCalls: [
              exec('npm', 'test'),
              { name: 'write_file', args: { path: 'src/more.txt', content: 'x' } },
            ],
          },
          { text: 'done' },
        ],
      } as never)}`
      // Leave 100 KiB free: well inside the 5% the disk keeps for the rest of the machine.
      const { bavail, bsize } = statfsSync(ws)
      await writeFile(join(ws, 'fill'), Buffer.alloc(bavail * bsize - 100 * 1024))
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'full disk', workspace: ws, model, verification: null },
        testPolicy(),
      )
      expect((await handle.result()).outcome).toBe('finished')
      const [npm] = await harness.audit.executedCommands({ runId: handle.workflowId })
      expect(npm).toMatchObject({ status: 'unavailable', sandbox: { limitHit: 'disk' } })
      const text = await messagesText(harness.audit, handle.workflowId)
      expect(text).toContain('[exec unavailable] nothing ran: the disk under')
      expect(text).toContain('refused: src/more.txt was not written: the disk under')
    } finally {
      execFileSync('umount', ['-l', ws])
      await rm(ws, { recursive: true, force: true })
    }
  })
})

describe('a worker that cannot build the sandbox', () => {
  // No bwrap on this worker's PATH: what a machine without bubblewrap looks like.
  const worker = useAgentWorker({ env: { ...process.env, PATH: '/nonexistent-tether-bin' } })

  it('fails the run at start with one line naming what to install, before anything runs or is asked', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, { turns: [{ toolCalls: [exec('git', 'init')] }] } as never)}`
      const handle = await startRun(
        harness.client,
        worker.taskQueue,
        { goal: 'no sandbox here', workspace: ws.path, model, verification: null },
        testPolicy(),
      )
      const failure = await handle.result().then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(failure).toBeInstanceOf(WorkflowFailedError)
      const message = String((failure as WorkflowFailedError).cause?.message)
      expect(message).toMatch(/the command sandbox needs bwrap, which is not on PATH; install bubblewrap/)
      expect(message).not.toContain('\n')
      expect(await worker.audit.executedCommands({ runId: handle.workflowId })).toEqual([])
      expect(await worker.audit.pendingApprovals({ runId: handle.workflowId })).toEqual([])
    } finally {
      await ws.cleanup()
    }
  })
})
