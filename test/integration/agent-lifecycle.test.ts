/** Budgets, cancellation and continue-as-new of a real run. */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ApplicationFailure, WorkflowFailedError } from '@temporalio/client'
import { afterAll, describe, expect, it } from 'vitest'
import { pendingApprovalsQuery } from '../../src/workflows/index.js'
import { PROBE_ID, processesWithProbeId } from '../fixtures/exec/probes.js'
import {
  approveTheAsk,
  startRun,
  startScriptedRun,
  testPolicy,
  useAgentHarness,
  useAgentWorker,
  writeScript,
} from '../support/agent.js'
import { recordHistory } from '../support/temporal.js'

const harness = useAgentHarness()

const policy = () => testPolicy().allowExec('true').allowExec('sleep *').allowExec('node tree.cjs')
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

function run(turns: unknown[], contract: Record<string, unknown> = {}, files: Record<string, string> = {}) {
  return startScriptedRun(harness, turns, { contract, policy: policy(), files })
}

describe('budgets', () => {
  it('ends at the step cap', async () => {
    const { ws, handle } = await run(
      [{ toolCalls: [exec('true')] }, { toolCalls: [exec('true')] }, { toolCalls: [exec('true')] }],
      {
        budgets: { maxSteps: 2 },
      },
    )
    try {
      expect(await handle.result()).toMatchObject({
        outcome: 'step-cap',
        steps: 2,
        reason: 'reached the step cap of 2',
      })
      expect((await harness.audit.runSummary(handle.workflowId))?.outcome).toBe('step-cap')
    } finally {
      await ws.cleanup()
    }
  })

  it('ends at the token budget', async () => {
    const { ws, handle } = await run(
      [
        { toolCalls: [exec('true')], usage: { inputTokens: 80, outputTokens: 30 } },
        { toolCalls: [exec('true')] },
      ],
      { budgets: { maxTokens: 100 } },
    )
    try {
      expect(await handle.result()).toMatchObject({
        outcome: 'token-budget',
        steps: 1,
        inputTokens: 80,
        outputTokens: 30,
      })
    } finally {
      await ws.cleanup()
    }
  })

  it('ends at the wall-time budget, cutting a command short at the deadline', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('sleep', '30')] }, { toolCalls: [exec('true')] }], {
      budgets: { maxWallTime: '3s' },
    })
    try {
      expect(await handle.result()).toMatchObject({ outcome: 'time-budget', steps: 1 })
      const [command] = await harness.audit.executedCommands({ runId: handle.workflowId })
      expect(command?.status).toBe('timed-out')
    } finally {
      await ws.cleanup()
    }
  })
})

// Starts a grandchild that ignores SIGTERM and holds stdout, records both pids, then waits.
const TREE = `
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const child = spawn(process.execPath, ['-e', "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: 'inherit' })
fs.writeFileSync('pids.json', JSON.stringify([process.pid, child.pid]))
setInterval(() => {}, 1000)
`

describe('cancellation', () => {
  it('kills the in-flight command tree and records the run as cancelled', async () => {
    // The command's processes carry a marker in their environment, so they can be found from the host
    // whatever PID namespace the sandbox gave them.
    const id = `cancel-${Date.now()}`
    process.env[PROBE_ID] = id
    const { ws, handle } = await run(
      [{ toolCalls: [exec('node', 'tree.cjs')] }],
      { env: [PROBE_ID] },
      { 'tree.cjs': TREE },
    )
    try {
      await expect.poll(() => existsSync(join(ws.path, 'pids.json')), { timeout: 60_000 }).toBe(true)
      expect(processesWithProbeId(id).length).toBeGreaterThanOrEqual(2)
      await handle.cancel()
      const failure = await handle.result().catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(WorkflowFailedError)
      await expect.poll(() => processesWithProbeId(id), { timeout: 15_000 }).toEqual([])
      expect((await harness.audit.runSummary(handle.workflowId))?.outcome).toBe('cancelled')
      await recordHistory(handle, 'agent-run-cancelled')
      const [command] = await harness.audit.executedCommands({ runId: handle.workflowId })
      expect(command?.status).toBe('cancelled')
    } finally {
      delete process.env[PROBE_ID]
      await ws.cleanup()
    }
  })
})

describe("a folder swapped during the run for a link to the worker's own", () => {
  // Stands for the worker's state folder: what its sandbox hides, with its floor in it.
  const decoy = mkdtempSync(join(tmpdir(), 'tether-own-'))
  writeFileSync(join(decoy, 'floor.yaml'), "the operator's\n")
  const own = useAgentWorker({ hide: [decoy] })
  afterAll(() => rmSync(decoy, { recursive: true, force: true }))

  it('ends the run before its next action works there', async () => {
    const ws = { path: mkdtempSync(join(tmpdir(), 'tether-swapped-')) }
    // The model's script lies outside the folder, so the run goes on after the swap unless stopped.
    const scripts = mkdtempSync(join(tmpdir(), 'tether-scripts-'))
    const turns = [
      { toolCalls: [{ name: 'write_file', args: { path: 'floor.yaml', content: 'pwned\n' } }] },
      { text: 'done' },
    ]
    const handle = await startRun(
      harness.client,
      own.taskQueue,
      {
        goal: 'g',
        workspace: ws.path,
        model: `scripted:${await writeScript(scripts, { turns } as never)}`,
        verification: null,
      },
      testPolicy(),
    )
    const moved = `${ws.path}-moved`
    try {
      await expect
        .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)
      renameSync(ws.path, moved)
      symlinkSync(decoy, ws.path)
      await approveTheAsk(handle)
      const error = await handle.result().catch((e: unknown) => e)
      expect(error).toBeInstanceOf(WorkflowFailedError)
      const cause = (error as WorkflowFailedError).cause as ApplicationFailure
      expect(cause.type).toBe('RunFailed')
      expect(cause.message).toContain(
        `since the run started, the workspace ${ws.path} is ${realpathSync(decoy)}, which is the worker's own`,
      )
      expect(readFileSync(join(decoy, 'floor.yaml'), 'utf8')).toBe("the operator's\n")
    } finally {
      rmSync(ws.path, { force: true })
      rmSync(moved, { recursive: true, force: true })
      rmSync(scripts, { recursive: true, force: true })
    }
  })
})

describe('one run per folder', () => {
  it('refuses a run in a folder a running run works in (by a link, or inside it) and gives it to the next', async () => {
    // The first run waits for an approval that never comes: it is running, and works in its folder.
    const { ws, handle } = await run([{ toolCalls: [exec('echo', 'waiting')] }])
    const link = `${ws.path}-link`
    try {
      await expect
        .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)
      const folder = realpathSync(ws.path)
      const script = async (turns: unknown[]) => `scripted:${await writeScript(ws.path, { turns } as never)}`
      const refused = async (workspace: string, holderPath: string) => {
        const other = await startRun(
          harness.client,
          harness.taskQueue,
          { goal: 'g', workspace, model: await script([{ text: 'done' }]) },
          policy(),
        )
        const error = await other.result().catch((e: unknown) => e)
        expect(error).toBeInstanceOf(WorkflowFailedError)
        const reason = ((error as WorkflowFailedError).cause as ApplicationFailure).message
        expect(reason).toContain(`is in use: run ${handle.workflowId} works ${holderPath}`)
        expect(reason).toContain(`tether cancel ${handle.workflowId}`)
        expect(await harness.audit.runSummary(other.workflowId)).toMatchObject({
          outcome: 'failed',
          steps: 0,
        })
      }
      symlinkSync(ws.path, link)
      await refused(link, 'in it')
      await refused(join(ws.path, 'src'), `in ${folder}`)

      // A run the audit calls running whose workflow Temporal does not have holds nothing.
      const ghost = `ghost-${Math.random().toString(36).slice(2)}`
      const ghostFolder = `${ws.path}-ghost`
      mkdirSync(ghostFolder)
      await harness.audit.recordRunStarted({
        runId: ghost,
        goal: 'lost with its history',
        workspace: ghostFolder,
        contract: { goal: 'lost with its history', workspace: ghostFolder },
        policy: {},
        taskQueue: harness.taskQueue,
        startedAt: new Date(),
      })
      expect(await harness.audit.claimWorkspace(ghost, realpathSync(ghostFolder))).toBeUndefined()
      const after = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'g', workspace: ghostFolder, model: await script([{ text: 'done' }]) },
        policy(),
      )
      expect(await after.result()).toMatchObject({ outcome: 'finished' })

      // Once the first run has ended, the folder is the next run's.
      await handle.cancel()
      await handle.result().catch(() => undefined)
      const next = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'g', workspace: ws.path, model: await script([{ text: 'done' }]) },
        policy(),
      )
      expect(await next.result()).toMatchObject({ outcome: 'finished' })
    } finally {
      rmSync(link, { force: true })
      rmSync(`${ws.path}-ghost`, { recursive: true, force: true })
      await ws.cleanup()
    }
  })
})

describe('continue-as-new', () => {
  it('carries a long run across runs with its transcript whole', async () => {
    // The test server suggests continue-as-new after 200 history events; 30 steps is well past that.
    const steps = 30
    const turns = [...Array.from({ length: steps }, () => ({ toolCalls: [exec('true')] })), { text: 'done' }]
    const { ws, handle } = await run(turns, { budgets: { maxSteps: 100 } })
    try {
      const result = await handle.result()
      expect(result, result.reason).toMatchObject({ outcome: 'finished', steps: steps + 1 })
      const first = await harness.client.workflow
        .getHandle(handle.workflowId, handle.firstExecutionRunId)
        .describe()
      expect(first.status.name).toBe('CONTINUED_AS_NEW')
      await recordHistory(
        harness.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId),
        'agent-run-continued',
      )
      const messages = await harness.audit.loadMessages(handle.workflowId)
      // goal + (reply + result) per step + the final reply, numbered without gaps
      expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 1 + 2 * steps + 1 }, (_, i) => i))
      expect((await harness.audit.executedCommands({ runId: handle.workflowId, limit: 100 })).length).toBe(
        steps,
      )
    } finally {
      await ws.cleanup()
    }
  })
})
