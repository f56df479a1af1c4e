/**
 * A cost cap in US dollars on a real dev server and PostgreSQL: a scripted model reports its token usage, the
 * operator prices it, and a run with a 0.01 USD cap pauses at the cap — as an approval for the floor's budget
 * approver — until a signed raise lets it finish, or a denial ends it `cost-budget`. The audit holds each
 * turn's cost and the raise, and still matches the run's Temporal history.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Client } from '@temporalio/client'
import { WorkflowUpdateFailedError } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ApprovalRow,
  type AuditStore,
  verifyRecordedAnswer,
  verifyRunHistory,
} from '../../src/audit/index.js'
import { answerApproval, draftAnswer } from '../../src/embed/client.js'
import { type ApproverKey, createKey, loadKey } from '../../src/identity/keyring.js'
import { floorOf, Policy } from '../../src/policy/index.js'
import type { AgentRunResult } from '../../src/workflows/index.js'
import { decideUpdate } from '../../src/workflows/index.js'
import { openTestAudit, startAgentWorker, startScriptedRun } from '../support/agent.js'
import { connectClient, recordHistory } from '../support/temporal.js'

let dir: string
let alice: ApproverKey
let bob: ApproverKey
let audit: AuditStore
let client: Client
let taskQueue: string
let stop: () => Promise<void>
let close: () => Promise<void>

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-cost-'))
  for (const name of ['alice', 'bob']) createKey(name, dir)
  alice = loadKey('alice', dir)
  bob = loadKey('bob', dir)
  // The operator's floor: alice and bob answer asks, only bob may raise a cost cap.
  const floor = floorOf(
    Policy.fromSpec({
      preset: 'permissive',
      approvers: [
        { name: 'alice', keys: [alice.publicKey] },
        { name: 'bob', keys: [bob.publicKey] },
      ],
      budgetApprovers: ['bob'],
    }),
    'cost-floor',
  )
  audit = await openTestAudit()
  ;({ client, close } = await connectClient())
  const worker = await startAgentWorker(audit, {
    floor,
    // 3 USD per million input tokens, 15 per million output: a turn of 1,000 + 500 costs 0.0105 USD.
    prices: { source: 'test prices', models: [{ pattern: 'scripted:*', price: { input: 3, output: 15 } }] },
  })
  taskQueue = worker.taskQueue
  stop = worker.stop
})
afterAll(async () => {
  await stop?.()
  await close?.()
  await audit?.close()
  await rm(dir, { recursive: true, force: true })
})

const usage = { inputTokens: 1_000, outputTokens: 500 }
/** Read, fix, finish: three turns of 0.0105 USD each; the first alone passes a 0.01 USD cap. */
const turns = [
  { toolCalls: [{ name: 'read_file', args: { path: 'src/math.js' } }], usage },
  {
    toolCalls: [
      {
        name: 'write_file',
        args: { path: 'src/math.js', content: 'export function add(a, b) {\n  return a + b\n}\n' },
      },
    ],
    usage,
  },
  { text: 'fixed', usage },
]

/** `history`: the run's id, and the name its history is recorded under (signed answers name the run). */
function capped(history: string) {
  return startScriptedRun({ client, taskQueue }, turns, {
    contract: { verification: { command: ['npm', 'test'] }, budgets: { maxCost: '0.01 USD' } },
    workflowId: history,
  })
}

async function budgetApproval(runId: string): Promise<ApprovalRow> {
  let found: ApprovalRow | undefined
  await expect
    .poll(
      async () => {
        found = (await audit.pendingApprovals({ runId })).find((a) => a.act === 'budget')
        return found !== undefined
      },
      { timeout: 60_000 },
    )
    .toBe(true)
  return found as ApprovalRow
}

describe('a run with a 0.01 USD cost cap', () => {
  it('pauses at the cap; a signed raise by the budget approver lets it finish, and the audit has it all', async () => {
    const { ws, handle } = await capped('cost-budget-raised')
    try {
      const runId = handle.workflowId
      const row = await budgetApproval(runId)
      expect(row).toMatchObject({
        act: 'budget',
        call: -1,
        step: 1,
        target: 'spent 0.0105 USD of a cost cap of 0.01 USD',
        approvers: ['bob'],
        identity: 'signed',
      })
      expect((await handle.describe()).status.name).toBe('RUNNING')

      // Another approver cannot raise it, and a raise not above the spend is refused; neither leaves history.
      const notBudget = await handle
        .executeUpdate(decideUpdate, {
          args: [draftAnswer(row, { decision: 'approve', approver: 'alice', raiseTo: '1 USD' }, alice)],
        })
        .catch((error: unknown) => error)
      expect(notBudget).toBeInstanceOf(WorkflowUpdateFailedError)
      expect((notBudget as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'NotAnApprover' })
      const tooLow = await handle
        .executeUpdate(decideUpdate, {
          args: [draftAnswer(row, { decision: 'approve', approver: 'bob', raiseTo: '0.01 USD' }, bob)],
        })
        .catch((error: unknown) => error)
      expect((tooLow as WorkflowUpdateFailedError).cause?.message).toContain('not more than the 0.0105 USD')

      const raised = await answerApproval(
        client,
        runId,
        draftAnswer(
          row,
          { decision: 'approve', approver: 'bob', raiseTo: '0.05 USD', reason: 'worth it' },
          bob,
        ),
        { via: 'update' },
      )
      expect(raised.result).toMatchObject({ decision: 'approved' })
      const result = (await handle.result()) as AgentRunResult
      expect(result).toMatchObject({ outcome: 'verified', steps: 3, cost: 31_500 })
      await recordHistory(handle, 'cost-budget-raised')

      const steps = await audit.pool.query(
        'select step, model, cost_usd::text as cost from steps where run_id = $1 order by step',
        [runId],
      )
      expect(steps.rows).toEqual(
        [1, 2, 3].map((step) => ({ step, model: expect.stringMatching(/^scripted:/), cost: '0.010500' })),
      )
      const run = await audit.pool.query('select cost_usd::text as cost from runs where run_id = $1', [runId])
      expect(run.rows[0]).toEqual({ cost: '0.031500' })
      expect(await audit.runSummary(runId)).toMatchObject({ outcome: 'verified', cost: 31_500 })

      const decided = await audit.approval(row.approvalId)
      expect(decided).toMatchObject({ decision: 'approved', decidedBy: 'bob', raiseTo: '0.05 USD' })
      const [answer] = await audit.approvalAnswers({ runId })
      expect(answer?.answer.statement).toMatchObject({ raiseTo: '0.05 USD', decision: 'approve' })
      expect(answer && verifyRecordedAnswer(answer)).toMatchObject({ status: 'verified' })
      const events = await audit.pool.query(
        `select act, call, effect, reason from policy_events where run_id = $1 and act = 'budget'`,
        [runId],
      )
      expect(events.rows).toEqual([
        { act: 'budget', call: -1, effect: 'allow', reason: 'worth it; raised the cost cap to 0.05 USD' },
      ])

      const report = await verifyRunHistory(client, audit, runId)
      expect(report.findings).toEqual([])
      expect(report.checked.steps).toBe(3)
      // The raise is proven too: an edited cap no longer matches the signed statement or history.
      await audit.pool.query(`update approvals set raise_to = '500 USD' where approval_id = $1`, [
        row.approvalId,
      ])
      const edited = await verifyRunHistory(client, audit, runId)
      expect(edited.findings).toContainEqual(
        expect.objectContaining({ table: 'approvals', problem: 'edited', column: 'raise_to' }),
      )
    } finally {
      await ws.cleanup()
    }
  })

  it('ends with outcome cost-budget when the budget approver denies the raise', async () => {
    const { ws, handle } = await capped('cost-budget-denied')
    try {
      const row = await budgetApproval(handle.workflowId)
      await answerApproval(
        client,
        handle.workflowId,
        draftAnswer(row, { decision: 'deny', approver: 'bob', reason: 'too dear' }, bob),
        { via: 'update' },
      )
      const result = (await handle.result()) as AgentRunResult
      expect(result).toMatchObject({
        outcome: 'cost-budget',
        reason: 'spent 0.0105 USD of a cost cap of 0.01 USD; bob ended the run: too dear',
        steps: 1,
        cost: 10_500,
      })
      await recordHistory(handle, 'cost-budget-denied')
      expect(await audit.runSummary(handle.workflowId)).toMatchObject({
        outcome: 'cost-budget',
        cost: 10_500,
      })
    } finally {
      await ws.cleanup()
    }
  })
})
