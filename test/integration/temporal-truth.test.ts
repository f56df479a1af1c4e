/**
 * One truth with Temporal: runs Temporal closes by paths the workflow never sees — terminated, closed with
 * their parent, reset — end with the right outcome in the audit, and no waiting list keeps their approvals;
 * and every deadline shown is when the wait really ends.
 */
import { randomUUID } from 'node:crypto'
import { statSync } from 'node:fs'
import { Client, Connection, type ConnectionOptions } from '@temporalio/client'
import { describe, expect, inject, it } from 'vitest'
import { createActivities } from '../../src/activities/index.js'
import { ReconcilePlugin, reconcileWithTemporal } from '../../src/embed/reconcile.js'
import { Policy } from '../../src/policy/index.js'
import { pendingApprovalsQuery } from '../../src/workflows/index.js'
import { npmWorkspace, useAgentHarness, writeScript } from '../support/agent.js'
import { createWorker, uniqueTaskQueue } from '../support/temporal.js'
import { approvalRequest } from './audit/support.js'

const harness = useAgentHarness()
type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number]
const touch = { name: 'exec', args: { argv: ['touch', 'asked.txt'] } }
const asking = () => Policy.fromSpec({ ...Policy.tiered().toSpec(), identity: 'unsigned' })

/** A worker that serves runs and their parents, and keeps the audit in step with Temporal (unless told not to). */
async function reconcilingWorker(reconciling = true) {
  const taskQueue = uniqueTaskQueue('truth')
  const { worker, connection } = await createWorker({
    taskQueue,
    activities: createActivities({ audit: harness.audit }),
    ...(reconciling ? { plugins: [new ReconcilePlugin(harness.audit)] } : {}),
  })
  const running = worker.run()
  return {
    taskQueue,
    stop: async () => {
      worker.shutdown()
      await running
      await connection.close()
    },
  }
}

async function waitingInput(contract: Record<string, unknown> = {}) {
  const ws = await npmWorkspace()
  const model = `scripted:${await writeScript(ws.path, { turns: [{ toolCalls: [touch] }, { text: 'done' }] } as never)}`
  return {
    ws,
    input: {
      contract: { goal: 'wait for a person', workspace: ws.path, model, verification: null, ...contract },
      policy: asking().toSpec(),
    },
  }
}

async function waitsForAnApproval(runId: string) {
  await expect
    .poll(async () => (await harness.audit.pendingApprovals({ runId })).length, { timeout: 60_000 })
    .toBe(1)
}

async function closedInAudit(runId: string, outcome: string) {
  await expect
    .poll(async () => (await harness.audit.runSummary(runId))?.outcome, { timeout: 60_000, interval: 500 })
    .toBe(outcome)
  expect(await harness.audit.pendingApprovals({ runId })).toEqual([])
  expect((await harness.audit.inboxApprovals({ limit: 1000 })).items.map((a) => a.runId)).not.toContain(runId)
}

describe('runs Temporal closes', () => {
  it('a terminated run is terminated in the audit, and its approval waits for nobody', async () => {
    const worker = await reconcilingWorker()
    const { ws, input } = await waitingInput()
    try {
      const runId = `truth-terminate-${randomUUID()}`
      const handle = await harness.client.workflow.start('agentRun', {
        taskQueue: worker.taskQueue,
        workflowId: runId,
        args: [input],
      })
      await waitsForAnApproval(runId)
      // The worker records the namespace the run is in: what tells a lost run from another namespace's.
      const { rows } = await harness.audit.pool.query('select namespace from runs where run_id = $1', [runId])
      expect(rows[0]?.namespace).toBe(inject('namespace'))
      await handle.terminate('an operator stopped it')
      await closedInAudit(runId, 'terminated')
      expect((await harness.audit.runSummary(runId))?.reason).toBe(
        'terminated in Temporal: an operator stopped it',
      )
      const [approval] = await harness.audit.approvalAnswers({ runId })
      expect(approval).toBeUndefined()
    } finally {
      await worker.stop()
      await ws.cleanup()
    }
  })

  it.runIf(process.getuid?.() === 0)(
    "a terminated run's folder is root's again: its commands' identity held it, and its end never ran",
    async () => {
      const worker = await reconcilingWorker()
      const ws = await npmWorkspace()
      try {
        const script = {
          turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['true'] } }] }, { toolCalls: [touch] }],
        }
        const model = `scripted:${await writeScript(ws.path, script as never)}`
        const runId = `truth-terminate-folder-${randomUUID()}`
        const handle = await harness.client.workflow.start('agentRun', {
          taskQueue: worker.taskQueue,
          workflowId: runId,
          args: [
            {
              contract: { goal: 'run, then wait', workspace: ws.path, model, verification: null },
              policy: {
                ...Policy.tiered().layer('project').allowExec('true').toSpec(),
                identity: 'unsigned',
              },
            },
          ],
        })
        await waitsForAnApproval(runId)
        // The command ran as the workspace's identity, which took the folder over.
        expect(statSync(ws.path).uid).not.toBe(0)
        await handle.terminate('an operator stopped it')
        await closedInAudit(runId, 'terminated')
        expect(statSync(ws.path).uid).toBe(0)
      } finally {
        await worker.stop()
        await ws.cleanup()
      }
    },
  )

  it('a child run closes with its parent (the default parent close policy terminates it)', async () => {
    const worker = await reconcilingWorker()
    const { ws, input } = await waitingInput()
    try {
      const childId = `truth-child-${randomUUID()}`
      const parent = await harness.client.workflow.start('parentOfRun', {
        taskQueue: worker.taskQueue,
        workflowId: `truth-parent-${randomUUID()}`,
        args: [input, childId],
      })
      await waitsForAnApproval(childId)
      await parent.terminate('the release was abandoned')
      await closedInAudit(childId, 'terminated')
    } finally {
      await worker.stop()
      await ws.cleanup()
    }
  })

  it('a reset run no longer lists the approval the reset took back', async () => {
    const worker = await reconcilingWorker()
    const { ws, input } = await waitingInput()
    try {
      const runId = `truth-reset-${randomUUID()}`
      const handle = await harness.client.workflow.start('agentRun', {
        taskQueue: worker.taskQueue,
        workflowId: runId,
        args: [input],
      })
      await waitsForAnApproval(runId)
      const [before] = await harness.audit.pendingApprovals({ runId })
      const history = await handle.fetchHistory()
      const firstTask = history.events?.find((event) => event.workflowTaskCompletedEventAttributes)
      await harness.client.workflowService.resetWorkflowExecution({
        namespace: harness.client.options.namespace,
        workflowExecution: { workflowId: runId },
        reason: 'start again',
        workflowTaskFinishEventId: firstTask?.eventId,
        requestId: randomUUID(),
      })
      // The reset run asks again, under a new approval; the old one leaves every waiting list.
      await expect
        .poll(async () => (await handle.query(pendingApprovalsQuery)).map((a) => a.approvalId), {
          timeout: 60_000,
        })
        .not.toContain(before?.approvalId)
      await expect
        .poll(async () => (await harness.audit.approval(before?.approvalId as string))?.decision, {
          timeout: 60_000,
        })
        .toBe('cancelled')
      expect((await harness.audit.runSummary(runId))?.status).toBe('running')
    } finally {
      await worker.stop()
      await ws.cleanup()
    }
  })
})

describe('runs Temporal no longer has', () => {
  it('end in the audit as failed, their approvals with them; another namespace’s and a new one stay', async () => {
    const taskQueue = uniqueTaskQueue('lost')
    const namespace = inject('namespace')
    const longAgo = new Date(Date.now() - 10 * 60_000)
    const row = (runId: string, overrides: Record<string, unknown>) =>
      harness.audit.recordRunStarted({
        runId,
        goal: 'g',
        workspace: '/w',
        contract: { goal: 'g', workspace: '/w' },
        policy: {},
        taskQueue,
        startedAt: longAgo,
        ...overrides,
      })
    const lost = `truth-lost-${randomUUID()}`
    const elsewhere = `truth-elsewhere-${randomUUID()}`
    const recent = `truth-recent-${randomUUID()}`
    const unnamed = `truth-unnamed-${randomUUID()}`
    await row(lost, { namespace })
    await row(elsewhere, { namespace: 'another-namespace' })
    await row(recent, { namespace, startedAt: new Date() })
    await row(unnamed, {})
    const approvalId = randomUUID()
    await harness.audit.recordApprovalRequested(approvalRequest(approvalId, lost))
    const reconciler = reconcileWithTemporal({
      audit: harness.audit,
      client: harness.client,
      taskQueue,
      intervalMs: 100,
    })
    try {
      await closedInAudit(lost, 'failed')
      // The sweep that ended it looked at every run of the queue: once it is over, nothing else changes.
      await reconciler.stop()
      expect((await harness.audit.runSummary(lost))?.reason).toBe(
        `Temporal (namespace ${namespace}) has no workflow for this run: its history was lost or deleted`,
      )
      expect(await harness.audit.pendingApprovals({ runId: lost })).toEqual([])
      for (const runId of [elsewhere, recent, unnamed])
        expect((await harness.audit.runSummary(runId))?.status).toBe('running')
    } finally {
      await reconciler.stop()
    }
  })
})

describe('waiting is free', () => {
  it('a sweep lists the waiting runs in one query; none is described or queried until Temporal closes it', async () => {
    const worker = await reconcilingWorker(false)
    // The reconciler's own client, on a connection that counts the calls it makes, by method.
    const calls = new Map<string, number>()
    const counting: Interceptor = (options, nextCall) => {
      const method = String(options.method_definition.path).split('/').at(-1) as string
      calls.set(method, (calls.get(method) ?? 0) + 1)
      // The next call is the whole call: returned as it is, nothing of it is changed.
      return nextCall(options) as ReturnType<Interceptor>
    }
    const connection = await Connection.connect({
      address: inject('temporalAddress'),
      interceptors: [counting],
    })
    const client = new Client({ connection, namespace: inject('namespace') })
    const inputs = await Promise.all([waitingInput(), waitingInput(), waitingInput()])
    let reconciler: { stop(): Promise<void> } | undefined
    try {
      const runIds = inputs.map(() => `truth-waiting-${randomUUID()}`)
      const handles = await Promise.all(
        inputs.map(({ input }, i) =>
          harness.client.workflow.start('agentRun', {
            taskQueue: worker.taskQueue,
            workflowId: runIds[i] as string,
            args: [input],
          }),
        ),
      )
      for (const runId of runIds) await waitsForAnApproval(runId)
      reconciler = reconcileWithTemporal({
        audit: harness.audit,
        client,
        taskQueue: worker.taskQueue,
        intervalMs: 100,
      })
      await expect
        .poll(() => calls.get('ListWorkflowExecutions') ?? 0, { timeout: 60_000 })
        .toBeGreaterThanOrEqual(5)
      expect(calls.get('DescribeWorkflowExecution') ?? 0).toBe(0)
      expect(calls.get('QueryWorkflow') ?? 0).toBe(0)

      // Temporal closes one: the next sweep describes that one alone, and closes it in the audit.
      await handles[0]?.terminate('an operator stopped it')
      await closedInAudit(runIds[0] as string, 'terminated')
      expect(calls.get('DescribeWorkflowExecution')).toBe(1)
      expect(calls.get('QueryWorkflow') ?? 0).toBe(0)
      for (const runId of runIds.slice(1))
        expect((await harness.audit.runSummary(runId))?.status).toBe('running')
      await Promise.all(handles.slice(1).map((handle) => handle.terminate('the test is over')))
    } finally {
      await reconciler?.stop()
      await connection.close()
      await worker.stop()
      await Promise.all(inputs.map(({ ws }) => ws.cleanup()))
    }
  })
})

describe('deadlines', () => {
  it('say when the wait really ends: a 40 s budget before a 24 h approval timeout', async () => {
    const worker = await reconcilingWorker()
    const { ws, input } = await waitingInput({
      budgets: { maxWallTime: '40s' },
      approvals: { timeout: '24h' },
    })
    try {
      const runId = `truth-deadline-${randomUUID()}`
      const handle = await harness.client.workflow.start('agentRun', {
        taskQueue: worker.taskQueue,
        workflowId: runId,
        args: [input],
      })
      await waitsForAnApproval(runId)
      const [row] = await harness.audit.pendingApprovals({ runId })
      const [pending] = await handle.query(pendingApprovalsQuery)
      const started = (await harness.audit.runSummary(runId))?.startedAt.getTime() as number
      for (const deadline of [row?.deadline.getTime(), pending?.deadline]) {
        expect(deadline).toBeGreaterThan(started)
        expect(deadline).toBeLessThanOrEqual(started + 40_000)
      }
      expect(row?.deadlineBy).toBe('wall-time budget')
      expect(pending?.deadlineBy).toBe('wall-time budget')
      await handle.terminate('done with it')
    } finally {
      await worker.stop()
      await ws.cleanup()
    }
  })
})
