/**
 * What the projection activities write for the inputs the workflow gives them: one mapping, used by the
 * activities (which write these records) and by verification against history (anchor.ts, which expects
 * exactly them), so the two cannot drift apart.
 */

import { Policy, PolicyError } from '../policy/index.js'
import {
  describeWorkspace,
  type PendingApproval,
  type Resolution,
  type StepRecord as StepInput,
  type TetherActivities,
} from '../run/index.js'
import type {
  ApprovalDecisionRecord,
  ApprovalRequest,
  PolicyEvent,
  RunFinished,
  RunStarted,
  StepRecord,
} from './inputs.js'

type DecidedInput = Parameters<TetherActivities['tetherApprovalDecided']>[0]
type RejectedInput = Parameters<TetherActivities['tetherApprovalRejected']>[0]
type FinishInput = Parameters<TetherActivities['tetherFinishRun']>[0]
type StartInput = Parameters<TetherActivities['tetherStartRun']>[0]

/**
 * A run's row. `effective` is the policy it works under (the worker's floor with the run's own policy on it,
 * named by the digest its preparation recorded in history) and the floor's source; runs from before floors
 * have none, and their sandbox mode is their own policy's.
 */
export function runStartedRecord(
  input: StartInput,
  effective?: { policy: Policy; floor: string },
): RunStarted {
  const sandbox = effective ? effective.policy.sandbox.mode : sandboxMode(input.policy)
  return {
    runId: input.runId,
    ...(input.executionId ? { executionId: input.executionId } : {}),
    goal: input.contract.goal,
    workspace: describeWorkspace(input.contract),
    contract: input.contract,
    policy: input.policy,
    taskQueue: input.taskQueue,
    ...(input.parentRunId ? { parentRunId: input.parentRunId } : {}),
    ...(input.buildId ? { buildId: input.buildId } : {}),
    ...(sandbox ? { sandbox } : {}),
    ...(effective && input.policyDigest
      ? { effective: { digest: input.policyDigest, spec: effective.policy.toSpec() }, floor: effective.floor }
      : {}),
    startedAt: new Date(input.startedAt),
  }
}

/**
 * What a run's row keeps as its own policy when it was started by reference and the spec is not readable
 * (missing, or no longer matching its digest): the reference itself. Such a run was rejected at preparation.
 */
export function policyReference(ref: string): { policyRef: string } {
  return { policyRef: ref }
}

/** The sandbox mode of a policy spec; none for an invalid one (its run is rejected at the first step). */
function sandboxMode(spec: unknown): 'enforce' | 'off' | undefined {
  try {
    return Policy.fromSpec(spec).sandbox.mode
  } catch (error) {
    if (error instanceof PolicyError) return undefined
    throw error
  }
}

/** A finished step's row, and a refusal row for each call the policy denied. */
export function stepRecords(record: StepInput): { step: StepRecord; refusals: PolicyEvent[] } {
  return {
    step: {
      runId: record.runId,
      step: record.step,
      toolCalls: record.toolCalls,
      decision: record.decision,
      observation: record.observation,
      inputTokens: record.inputTokens,
      outputTokens: record.outputTokens,
      ...(record.cachedInputTokens !== undefined ? { cachedInputTokens: record.cachedInputTokens } : {}),
      ...(record.model !== undefined ? { model: record.model } : {}),
      ...(record.cost !== undefined ? { cost: record.cost } : {}),
      startedAt: new Date(record.startedAt),
      finishedAt: new Date(record.finishedAt),
    },
    refusals: record.refusals.map(({ call, verdict }) => ({
      runId: record.runId,
      step: record.step,
      call,
      act: verdict.act,
      target: verdict.target,
      effect: 'deny' as const,
      ...(verdict.rule !== undefined ? { rule: verdict.rule } : {}),
      ...(verdict.layer !== undefined ? { layer: verdict.layer } : {}),
      kind: 'refusal' as const,
      reason: verdict.reason,
      source: 'policy',
      ...(verdict.checks !== undefined ? { checks: verdict.checks } : {}),
      at: new Date(record.finishedAt),
    })),
  }
}

export function approvalRequestRecord(runId: string, request: PendingApproval): ApprovalRequest {
  return {
    approvalId: request.approvalId,
    runId,
    step: request.step,
    call: request.call,
    act: request.act,
    target: request.target,
    tree: request.tree ?? null,
    ...(request.rule !== undefined ? { rule: request.rule } : {}),
    ...(request.layer !== undefined ? { layer: request.layer } : {}),
    requestedAt: new Date(request.requestedAt),
    deadline: new Date(request.deadline),
    approvers: request.approvers,
    ...(request.actionDigest ? { actionDigest: request.actionDigest } : {}),
    approvalsRequired: request.approvalsRequired ?? 1,
    ...(request.remember ? { rememberOffer: request.remember } : {}),
    ...(request.identity ? { identity: request.identity } : {}),
  }
}

/**
 * An approval's decision with every answer that counted, and the policy events it writes when it is the
 * approval's first decision: the decision itself, and the refusal when the approved command met a deny.
 */
export function approvalDecisionRecords(input: DecidedInput): {
  decision: ApprovalDecisionRecord
  events: PolicyEvent[]
} {
  const { runId, request, resolution, remembered, refusedAfterApproval } = input
  const decision: ApprovalDecisionRecord = {
    approvalId: request.approvalId,
    decision: resolution.decision,
    decidedBy: resolution.decidedBy,
    channel: resolution.channel,
    decidedAt: new Date(resolution.decidedAt),
    ...(resolution.reason ? { reason: resolution.reason } : {}),
    ...(remembered && 'pattern' in remembered ? { remember: remembered.pattern } : {}),
    ...(resolution.replacement ? { replacement: resolution.replacement } : {}),
    ...(resolution.raiseTo ? { raiseTo: resolution.raiseTo } : {}),
    answers: (resolution.answers ?? []).map((answer) => ({
      approver: answer.approver,
      decision: answer.decision,
      channel: answer.channel,
      answeredAt: new Date(answer.at),
      ...(answer.reason ? { reason: answer.reason } : {}),
      ...(answer.remember ? { remember: answer.remember } : {}),
      ...(answer.signed
        ? {
            signed: {
              key: answer.signed.key,
              fingerprint: answer.signed.fingerprint,
              signature: answer.signed.signature,
              statement: answer.signed.statement,
            },
          }
        : {}),
    })),
  }
  const at = new Date(resolution.decidedAt)
  const base = { runId, step: request.step, call: request.call, act: request.act, target: request.target }
  const events: PolicyEvent[] = [
    {
      ...base,
      effect: resolution.decision === 'approved' ? 'allow' : 'deny',
      ...(request.rule !== undefined ? { rule: request.rule } : {}),
      ...(request.layer !== undefined ? { layer: request.layer } : {}),
      kind: 'decision',
      decidedBy: resolution.decidedBy,
      reason: decisionReason(resolution, remembered),
      source: resolution.channel,
      at,
    },
  ]
  if (refusedAfterApproval) {
    events.push({
      ...base,
      // The command judged: the asked one, or the edited one the approvers put in its place.
      target: refusedAfterApproval.target,
      effect: 'deny',
      ...(refusedAfterApproval.rule !== undefined ? { rule: refusedAfterApproval.rule } : {}),
      ...(refusedAfterApproval.layer !== undefined ? { layer: refusedAfterApproval.layer } : {}),
      kind: 'refusal',
      reason: `approved by ${resolution.decidedBy}, but an approval never crosses a deny: ${refusedAfterApproval.reason}`,
      source: 'policy',
      at,
    })
  }
  return { decision, events }
}

function decisionReason(
  resolution: Pick<Resolution, 'decision' | 'reason' | 'replacement' | 'raiseTo'>,
  remembered: { pattern: string } | undefined,
): string {
  const parts = [resolution.reason ?? resolution.decision]
  if (resolution.raiseTo) parts.push(`raised the cost cap to ${resolution.raiseTo}`)
  if (resolution.replacement)
    parts.push(`approved the edited command \`${resolution.replacement.join(' ')}\` instead`)
  if (remembered) parts.push(`remembered \`${remembered.pattern}\` for the rest of the run`)
  return parts.join('; ')
}

/** The source of a refused answer's event: its channel and time, then a per-worker count (`rejectedSource`). */
export function rejectedSourcePrefix(input: Pick<RejectedInput, 'channel' | 'at'>): string {
  return `${input.channel}-rejected:${input.at}:`
}

/** A refused answer, recorded so an operator sees it; `count` keeps two at the same instant apart. */
export function rejectedAnswerEvent(input: RejectedInput, count: number): PolicyEvent {
  const { runId, step, channel, at, error } = input
  const claimed = input.input as { approver?: unknown; approvalId?: unknown } | null
  return {
    runId,
    step,
    call: 0,
    act: 'exec',
    target:
      typeof claimed?.approvalId === 'string' ? `approval ${claimed.approvalId}` : 'approval (unknown id)',
    effect: 'ask',
    kind: 'decision',
    ...(typeof claimed?.approver === 'string' ? { decidedBy: claimed.approver } : {}),
    reason: `rejected ${channel} answer: ${error}`,
    source: `${rejectedSourcePrefix(input)}${count}`,
    at: new Date(at),
  }
}

export function runFinishedRecord(input: FinishInput): RunFinished {
  return {
    runId: input.runId,
    ...(input.executionId ? { executionId: input.executionId } : {}),
    outcome: input.outcome,
    ...(input.reason ? { reason: input.reason } : {}),
    steps: input.steps,
    inputTokens: input.inputTokens,
    outputTokens: input.outputTokens,
    ...(input.cost !== undefined ? { cost: input.cost } : {}),
    finishedAt: new Date(input.finishedAt),
  }
}
