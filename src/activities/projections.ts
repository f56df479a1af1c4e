/**
 * Projection activities: the audit rows of a run (runs, steps, refusals, approvals and decisions) and the
 * approver notifications. Every write is idempotent (keyed by run, step and call, or the approval id), so a
 * retried activity never duplicates a row. Timestamps are the workflow's, so a replayed write is identical.
 */

import { Context } from '@temporalio/activity'
import {
  type AuditStore,
  type AuditWrites,
  approvalDecisionRecords,
  approvalRequestRecord,
  type DecisionRows,
  policyReference,
  rejectedAnswerEvent,
  runFinishedRecord,
  runStartedRecord,
  stepRecords,
} from '../audit/index.js'
import { approvalMessage } from '../present/index.js'
import type {
  ApprovalDecision,
  PendingApproval,
  StepRecord,
  TaskContract,
  TetherActivities,
} from '../run/index.js'
import { isUnreadableOwnPolicy, type RunConfigs } from './run-config.js'
import type { RunMetrics } from './telemetry.js'

/**
 * A finished step's row and its refusals (idempotent), in `writes`' transaction: by tetherRecordStep, or
 * with the next model turn. Returns whether the row is this write's (the step is counted then, once).
 */
export async function recordStepRows(
  writes: Pick<AuditWrites, 'recordStep' | 'recordPolicyEvents'>,
  record: StepRecord,
): Promise<boolean> {
  const { step, refusals } = stepRecords(record)
  const [inserted] = await Promise.all([
    writes.recordStep(step),
    refusals.length > 0 ? writes.recordPolicyEvents(refusals) : 0,
  ])
  return inserted
}

/**
 * An answered approval's decision and its policy events, in one commit (idempotent: the first decision
 * stands, and only the write that stored it counts it): by tetherApprovalDecided, or by the approved
 * call's own tool activity on its way to the call, with `begin` the command's attempt in the same commit.
 */
export async function recordDecision(
  deps: { audit: AuditStore; metrics?: RunMetrics | undefined },
  input: ApprovalDecision,
  begin?: DecisionRows['begin'],
): Promise<void> {
  const { decision, events } = approvalDecisionRecords(input)
  const { won } = await deps.audit.recordApprovalDecision(decision, { events, ...(begin ? { begin } : {}) })
  if (!won) return
  const { request, resolution } = input
  deps.metrics?.approvalResolved({
    kind: request.act === 'budget' ? 'budget' : 'action',
    decision: resolution.decision,
    requestedAt: request.requestedAt,
    decidedAt: resolution.decidedAt,
    firstAnswerAt: resolution.answers?.[0]?.at,
  })
}

/** Inside the projection activities' 10 s start-to-close (agentRun), so a slow webhook is retried, not cut. */
const WEBHOOK_TIMEOUT_MS = 8_000

export function projectionActivities(deps: {
  audit: AuditStore
  runs: RunConfigs
  metrics: RunMetrics
  fetch?: typeof fetch
  /**
   * What this worker lets go of when a run ends (its sandboxes built ahead, a root worker's hold on the
   * folder), before the end is recorded; a failure here never fails the run.
   */
  runEnded?: (runId: string) => Promise<void>
}): Pick<
  TetherActivities,
  | 'tetherStartRun'
  | 'tetherFinishRun'
  | 'tetherRecordStep'
  | 'tetherApprovalRequested'
  | 'tetherApprovalDecided'
  | 'tetherApprovalRejected'
  | 'tetherRemindApprover'
> {
  const { audit } = deps
  const post = deps.fetch ?? fetch
  let rejectedCount = 0

  return {
    async tetherStartRun(given) {
      // A run started by reference: its row keeps the spec itself, read (and checked) by the digest given.
      const input =
        given.policy === undefined && given.policyRef !== undefined
          ? { ...given, policy: await ownSpecOf(deps.runs, given.policyRef, given.policyDigest) }
          : given
      // What the preparation judged the run's policy to be on this floor, stored under the name history keeps.
      const effective = input.policyDigest
        ? {
            policy: deps.runs.effectiveAs(input.runId, input.policy, input.policyDigest),
            floor: deps.runs.floor.source,
          }
        : undefined
      // The namespace is the worker's to say (history does not carry it): a run it no longer has is lost.
      const namespace = Context.current().info.workflowNamespace
      // The run's row, its policy and the goal, the transcript's first message: one commit.
      await audit.together('startRun', async (writes) => {
        await writes.recordRunStarted({ ...runStartedRecord(input, effective), namespace })
        await writes.appendMessages(input.runId, 0, [{ role: 'user', content: input.contract.goal }])
      })
    },

    async tetherFinishRun(input) {
      // Before the record: a finished run's claim on its folder is free for the next run to take.
      await deps.runEnded?.(input.runId).catch((error: unknown) => {
        Context.current().log.warn(`run ${input.runId}: letting go of its folder failed: ${String(error)}`)
      })
      if (await audit.recordRunFinished(runFinishedRecord(input))) deps.metrics.runFinished(input.outcome)
    },

    async tetherRecordStep(record) {
      if (await audit.together('recordStep', (writes) => recordStepRows(writes, record)))
        deps.metrics.stepRecorded(record)
    },

    async tetherApprovalRequested({ runId, request, contract }) {
      await audit.recordApprovalRequested(approvalRequestRecord(runId, request))
      await notify(post, runId, request, await deps.runs.contract(runId, contract), 0)
    },

    tetherApprovalDecided: (input) => recordDecision(deps, input),

    async tetherApprovalRejected(input) {
      // Recorded so an operator sees a bad or unauthorised answer; it changed nothing in the run.
      rejectedCount += 1
      await audit.recordPolicyEvents([rejectedAnswerEvent(input, rejectedCount)])
    },

    async tetherRemindApprover({ runId, request, contract, reminder }) {
      await notify(post, runId, request, await deps.runs.contract(runId, contract), reminder)
    },
  }
}

/**
 * Posts an approval request (or a reminder) to the contract's webhook: tether's own JSON shape, or a
 * Slack-compatible `{ text, blocks }` payload (present/approval-message.ts). A failing webhook fails the
 * activity, so Temporal retries it.
 */
async function notify(
  post: typeof fetch,
  runId: string,
  request: PendingApproval,
  contract: TaskContract,
  reminder: number,
): Promise<void> {
  const webhook = contract.approvals.webhook
  if (!webhook) return
  const body = approvalMessage(webhook.format, {
    runId,
    goal: contract.goal,
    request,
    reminder,
    now: Date.now(),
  })
  const response = await post(webhook.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  })
  if (!response.ok) throw new Error(`approval webhook ${webhook.url} answered HTTP ${response.status}`)
}

/**
 * The spec of a run's own policy named by `ref`. A run its preparation rejected (no effective digest) is
 * recorded even when that spec is missing or altered, under the reference itself; a run that works fails here
 * instead (fails closed: it never works under a policy its history does not name).
 */
async function ownSpecOf(
  runs: RunConfigs,
  ref: string,
  effectiveDigest: string | undefined,
): Promise<unknown> {
  try {
    return await runs.ownSpec(ref)
  } catch (error) {
    if (effectiveDigest !== undefined || !isUnreadableOwnPolicy(error)) throw error
    return policyReference(ref)
  }
}
