/** tether's workflows: the only module a Worker's workflow bundle needs from tether. */

export type * from '../run/index.js'
export {
  agentRun,
  type DecideResult,
  decideSignal,
  decideUpdate,
  PENDING_APPROVAL,
  pendingApprovalsQuery,
  type RunStatus,
  statusQuery,
} from './agentRun.js'
export type { DecisionInput, DecisionRejection } from './approvals.js'
export type { PacingSinks } from './pacing.js'
