/**
 * The sandbox in a real run: what an allowed command can no longer reach, what the audit records of it,
 * and a run that asks for the sandbox on a worker that cannot build one.
 */
import { randomBytes } from 'node:crypto'
import { rm, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { WorkflowFailedError } from '@temporalio/client'
import { describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { Policy } from '../../src/policy/index.js'
import {
  npmWorkspace,
  startRun,
  testPolicy,
  useAgentHarness,
  useAgentWorker,
  writeScript,
} from '../support/agent.js'

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
