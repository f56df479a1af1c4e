/**
 * What a run's workflow and its activities share: the data crossing the workflow boundary and the messages
 * both write. Pure (no Temporal, no Node), so it is part of the workflow bundle as well as the worker.
 */

export {
  type ApprovalDecision,
  type ApprovedCall,
  type DecidedRequest,
  type JudgeRequest,
  LAYOUT_ATTEMPTS,
  type StepRecord,
  type TetherActivities,
} from './activities.js'
export {
  ContractError,
  contractInput,
  describeWorkspace,
  gateRefusal,
  parseContract,
  parseDuration,
  type TaskContract,
  type TaskContractInput,
  taskContractSchema,
  type WorkspaceSource,
  workspaceOf,
} from './contract.js'
export {
  DECISION_LIMITS,
  type DecisionInput,
  type DecisionRejection,
  decisionSchema,
  legacyDecisionSchema,
  SIGNATURE_SKEW_MS,
} from './decision.js'
export { FAILURE, lostRunReason, MODEL_FAILURE, MODEL_FAILURES_NOT_RETRIED } from './failures.js'
export { runIdProblem, START_LIMITS, type StartProblem, startProblem } from './limits.js'
export { gateFailureMessage } from './messages.js'
export { CURRENCY, MAX_MONEY_MICROS, MICROS_PER_USD, microsToUsd, parseMoney } from './money.js'
export { type Flight, type FlightKind, inFlight, type PendingActivityView } from './progress.js'
export { ATTR, auditRow, INSTRUMENTATION, METRIC, SPAN } from './telemetry.js'
export type * from './types.js'
export { approvedDecision, describeRule, replacementVerdict } from './verdicts.js'
