/**
 * The pure state machine under `agentRun`: budgets, what to do after a model turn, and the observation
 * texts the model reads. No Temporal imports, so every rule here is unit-tested without a server; the
 * workflow is a thin shell that calls activities and feeds their results through these functions.
 */
import { formatDuration, formatMoney } from '../present/index.js'
import type {
  ActionVerdict,
  CarriedState,
  InlineMessage,
  ModelTurn,
  Outcome,
  TaskContract,
} from '../run/index.js'
import { describeRule } from '../run/index.js'
import type { ToolCall } from '../tools/index.js'

export interface RunState extends CarriedState {}

export function initialState(carried: CarriedState | undefined, now: number): RunState {
  return (
    carried ?? {
      step: 0,
      // seq 0 holds the goal, written when the run starts.
      nextSeq: 1,
      inputTokens: 0,
      outputTokens: 0,
      startedAt: now,
      remembered: [],
      pending: [],
      approvals: 0,
      continuedAsNew: 0,
    }
  )
}

/** The budget that ends the run before another step, if any; checked at every step boundary. */
export function budgetOutcome(
  state: RunState,
  contract: TaskContract,
  now: number,
): { outcome: Outcome; reason: string } | undefined {
  const { maxSteps, maxTokens, maxWallTime } = contract.budgets
  if (state.step >= maxSteps) return { outcome: 'step-cap', reason: `reached the step cap of ${maxSteps}` }
  const tokens = state.inputTokens + state.outputTokens
  if (tokens >= maxTokens) {
    return { outcome: 'token-budget', reason: `used ${tokens} tokens of a budget of ${maxTokens}` }
  }
  if (now - state.startedAt >= maxWallTime) {
    return {
      outcome: 'time-budget',
      reason: `ran for ${formatDuration(now - state.startedAt)} of ${formatDuration(maxWallTime)}`,
    }
  }
  return undefined
}

/** A command may not outlive the run's wall-time budget. */
export function commandTimeout(state: RunState, contract: TaskContract, now: number): number {
  const remaining = contract.budgets.maxWallTime - (now - state.startedAt)
  return Math.max(1_000, Math.min(contract.execTimeout, remaining))
}

export function recordUsage(state: RunState, turn: ModelTurn): void {
  state.inputTokens += turn.usage.inputTokens
  state.outputTokens += turn.usage.outputTokens
  if (turn.cost !== undefined) state.cost = (state.cost ?? 0) + turn.cost
}

/**
 * The run's spend and cap when it has reached its cost cap (the contract's, or the one a budget approver
 * raised it to); checked at every step boundary, like the other budgets.
 */
export function costCapReached(
  state: RunState,
  contract: TaskContract,
): { spent: number; cap: number } | undefined {
  const cap = state.costCap ?? contract.budgets.maxCost
  const spent = state.cost ?? 0
  return cap !== undefined && spent >= cap ? { spent, cap } : undefined
}

/** What a budget approval asks, in words: the target an approver reads (and signs the digest of). */
export function costCapWords(at: { spent: number; cap: number }): string {
  return `spent ${formatMoney(at.spent)} of a cost cap of ${formatMoney(at.cap)}`
}

/** Why a run ends at its cost cap: nobody may raise it, a budget approver ended it, or nobody answered. */
export function costBudgetReason(
  at: { spent: number; cap: number },
  resolution?: { decision: string; decidedBy: string; reason?: string | undefined },
): string {
  const why = !resolution
    ? 'the policy names no budget approver who could raise it'
    : resolution.decision === 'denied'
      ? `${resolution.decidedBy} ended the run${resolution.reason ? `: ${resolution.reason}` : ''}`
      : resolution.decision === 'cancelled'
        ? 'the run was cancelled while it waited for a raise'
        : 'nobody raised it before the deadline'
  return `${costCapWords(at)}; ${why}`
}

/** What follows a model turn: its tool calls, or — when it made none — verification or the end. */
export function nextAfterTurn(turn: ModelTurn, contract: TaskContract): 'calls' | 'verify' | 'finish' {
  if (turn.toolCalls.length > 0) return 'calls'
  return contract.verification ? 'verify' : 'finish'
}

/** Reserves the transcript positions of a turn: the reply, then one result per call, in call order. */
export function reserveSeqs(state: RunState, calls: number): { reply: number; results: number[] } {
  const reply = state.nextSeq
  const results = Array.from({ length: calls }, (_, i) => reply + 1 + i)
  state.nextSeq = reply + 1 + calls
  return { reply, results }
}

export function reserveSeq(state: RunState): number {
  return state.nextSeq++
}

function toolResult(seq: number, call: ToolCall, output: string): InlineMessage {
  return { seq, message: { role: 'tool', results: [{ callId: call.id, name: call.name, output }] } }
}

/**
 * Characters of a target (a command, a path) repeated in an observation: observations travel through
 * history until the next activity stores them, and the model knows what it sent.
 */
const TARGET_LIMIT = 2_000

function shown(target: string): string {
  return target.length <= TARGET_LIMIT
    ? target
    : `${target.slice(0, TARGET_LIMIT)}… [${(target.length - TARGET_LIMIT).toLocaleString('en-US')} more characters]`
}

/** The model's observation of a refused call; `note` first when an approver had edited the command. */
export function refusalObservation(
  seq: number,
  call: ToolCall,
  verdict: ActionVerdict,
  note?: string,
): InlineMessage {
  return toolResult(
    seq,
    call,
    `${note ? `${note}\n` : ''}[${verdict.act} refused] ${shown(verdict.target)} — by ${describeRule(verdict)}: ${verdict.reason} ` +
      'The policy forbids this; do not retry it in another spelling. Choose another approach.',
  )
}

/** What the model is told when an approver approved an edited command instead of the one it asked for. */
export function replacementNote(
  asked: readonly string[],
  replacement: readonly string[],
  by: string,
): string {
  return `[approved with an edit] ${by} approved \`${replacement.join(' ')}\` instead of the command you asked for (\`${asked.join(' ')}\`).`
}

export function invalidCallObservation(seq: number, call: ToolCall, error: string): InlineMessage {
  return toolResult(seq, call, `[invalid call] ${error}`)
}

export function deniedByApproverObservation(
  seq: number,
  call: ToolCall,
  verdict: ActionVerdict,
  resolution: { decision: string; decidedBy: string; reason?: string | undefined },
): InlineMessage {
  const why =
    resolution.decision === 'timeout'
      ? resolution.reason && resolution.reason !== 'timeout'
        ? `nobody answered the approval request in time: ${resolution.reason}`
        : 'nobody answered the approval request before its deadline'
      : resolution.decision === 'cancelled'
        ? 'the run was cancelled while the approval was pending'
        : `denied by ${resolution.decidedBy}${resolution.reason ? `: ${resolution.reason}` : ''}`
  return toolResult(seq, call, `[${verdict.act} denied] ${shown(verdict.target)} — ${why}`)
}

/** One line per call for the audit's `steps.decision`. */
export function stepDecision(lines: string[], turn: ModelTurn): string {
  if (lines.length === 0) return turn.toolCalls.length === 0 ? 'no tool calls' : 'no action'
  return lines.join('; ')
}
