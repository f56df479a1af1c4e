import { WorkflowFailedError } from '@temporalio/client'
import { describe, expect, it } from 'vitest'
import { RunIdTakenError, startAgentRun } from '../../src/embed/client.js'
import { Policy } from '../../src/policy/index.js'
import { agentRun, decideSignal, PENDING_APPROVAL, pendingApprovalsQuery } from '../../src/workflows/index.js'
import { startScriptedRun, testPolicy, useAgentHarness, writeScript } from '../support/agent.js'

const harness = useAgentHarness()
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

function run(
  turns: unknown[],
  contract: Record<string, unknown> = {},
  policy = testPolicy(),
  files: Record<string, string> = {},
) {
  return startScriptedRun(harness, turns, { contract, policy, files })
}

describe('run identity', () => {
  it('refuses to reuse a run id, and nothing of a second execution overwrites the first run’s records', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('npm', 'test')] }, { text: 'done' }], {
      verification: null,
    })
    try {
      await handle.result()
      const before = await harness.audit.runSummary(handle.workflowId)
      expect(before).toMatchObject({ outcome: 'finished', steps: 2 })
      // Through tether's client: refused before anything starts.
      await expect(
        startAgentRun(harness.client, {
          contract: { goal: 'again', workspace: ws.path, verification: null },
          policy: testPolicy(),
          taskQueue: harness.taskQueue,
          runId: handle.workflowId,
        }),
      ).rejects.toBeInstanceOf(RunIdTakenError)
      // Started by other means (a reuse policy that allows it): the run fails at its start, in one line.
      const model = `scripted:${await writeScript(ws.path, { turns: [{ toolCalls: [exec('npm', 'test')] }] } as never)}`
      const second = await harness.client.workflow.start(agentRun, {
        taskQueue: harness.taskQueue,
        workflowId: handle.workflowId,
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        args: [
          {
            contract: { goal: 'overwrite', workspace: ws.path, model, verification: null },
            policy: testPolicy().toSpec(),
          },
        ],
      })
      const failure = await second.result().catch((error: unknown) => error)
      expect(failure).toBeInstanceOf(WorkflowFailedError)
      expect(String((failure as WorkflowFailedError).cause?.message)).toMatch(
        new RegExp(`run id ${handle.workflowId} already names another run .*a run id is never reused`),
      )
      const after = await harness.audit.runSummary(handle.workflowId)
      expect(after).toMatchObject({ goal: before?.goal, outcome: 'finished', steps: 2 })
      expect(after?.finishedAt).toEqual(before?.finishedAt)
      expect((await harness.audit.loadMessages(handle.workflowId)).length).toBe(4)
    } finally {
      await ws.cleanup()
    }
  })
})

describe('records on every path', () => {
  it('records the step a cancelled run ended in, a refused signal sent meanwhile, and clears the search attribute', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'never.txt')] }])
    try {
      await expect
        .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)
      await expect
        .poll(async () => (await handle.describe()).typedSearchAttributes.get(PENDING_APPROVAL), {
          timeout: 30_000,
        })
        .toBe('true')
      // A bad answer while the step waits: recorded at once, though the step never completes.
      await handle.signal(decideSignal, { approvalId: 'not-an-approval', decision: 'approve', approver: 'x' })
      await expect.poll(() => rejectedSignals(handle.workflowId), { timeout: 30_000 }).toBe(1)
      await handle.cancel()
      await handle.result().catch(() => undefined)
      const steps = (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'step')
      expect(steps).toEqual([expect.objectContaining({ step: 1, decision: 'cancelled during this step' })])
      expect(await rejectedSignals(handle.workflowId)).toBe(1)
      expect((await handle.describe()).typedSearchAttributes.get(PENDING_APPROVAL)).toBeUndefined()
    } finally {
      await ws.cleanup()
    }
  })

  it('records the gate’s commands in what ran, with duration, size and hash', async () => {
    const { ws, handle } = await run(
      [
        {
          toolCalls: [
            { name: 'edit_file', args: { path: 'src/math.js', search: 'a - b', replace: 'a + b' } },
          ],
        },
        { text: 'fixed' },
      ],
      { verification: { command: ['npm', 'test'] } },
    )
    try {
      expect((await handle.result()).outcome).toBe('verified')
      const commands = await harness.audit.executedCommands({ runId: handle.workflowId })
      const gate = commands.find((c) => c.kind === 'gate')
      expect(gate).toMatchObject({ step: 2, call: -1, argv: ['npm', 'test'], status: 'exited', exitCode: 0 })
      expect(gate?.durationMs).toBeGreaterThan(0)
      expect(gate?.stdout.bytes).toBeGreaterThan(0)
      expect(gate?.stdout.sha256).toMatch(/^[0-9a-f]{64}$/)
      const attempts = await harness.audit.execAttempts(handle.workflowId)
      expect(attempts).toEqual([
        expect.objectContaining({ step: 2, call: -1, attempt: 1, outcome: 'exited' }),
      ])
    } finally {
      await ws.cleanup()
    }
  })

  it('ends an approval wait at the run’s wall-time budget, not only at the approval’s deadline', async () => {
    const started = Date.now()
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'late.txt')] }, { text: 'ok' }], {
      budgets: { maxWallTime: '4s' },
      approvals: { timeout: '24h' },
    })
    try {
      expect(await handle.result()).toMatchObject({ outcome: 'time-budget' })
      const took = Date.now() - started
      expect(took, `the run took ${took} ms`).toBeLessThan(60_000)
      const [approval] = (await harness.audit.runTimeline(handle.workflowId)).filter(
        (e) => e.type === 'approval',
      )
      expect(approval).toMatchObject({ decision: 'timeout', reason: "the run's wall-time budget ran out" })
    } finally {
      await ws.cleanup()
    }
  })

  it('shows who denied, not the policy rule, for a human denial', async () => {
    const policy = Policy.fromSpec({ ...testPolicy().toSpec(), identity: 'unsigned', approvers: ['bob'] })
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'x.txt')] }, { text: 'ok' }], {}, policy)
    try {
      await expect
        .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)
      const [pending] = await handle.query(pendingApprovalsQuery)
      await handle.signal(decideSignal, {
        approvalId: pending?.approvalId as string,
        decision: 'deny',
        approver: 'bob',
        reason: 'no',
      })
      await handle.result()
      const { items } = await harness.audit.refusedActions({ runId: handle.workflowId })
      expect(items).toEqual([expect.objectContaining({ kind: 'decision', decidedBy: 'bob', effect: 'deny' })])
    } finally {
      await ws.cleanup()
    }
  })
})

async function rejectedSignals(runId: string): Promise<number> {
  const timeline = await harness.audit.runTimeline(runId)
  return timeline.filter((e) => e.type === 'policy' && e.source.startsWith('signal-rejected')).length
}
