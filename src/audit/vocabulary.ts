/**
 * The audit's words for what happened: acts, effects, how a command ended, gate events, how an approval
 * ended and through which channel. Plain lists (the writers' schemas in inputs.ts are built from them), so
 * the readers use them without loading the schemas.
 */

export const acts = ['read', 'write', 'exec', 'net', 'mcp'] as const
/** What approvals and their policy events are about: an act, or the run's cost cap. */
export const approvalActs = [...acts, 'budget'] as const
export const effects = ['allow', 'ask', 'deny'] as const
/** How a command ended; `unknown`: a lost or stopping worker cut it off, and it was not run again (noRetry). */
export const execStatuses = [
  'exited',
  'signalled',
  'timed-out',
  'cancelled',
  'unavailable',
  'unknown',
] as const
export const gateKinds = ['gate_output', 'gate_phase_failed', 'gate_passed'] as const
export const approvalDecisions = ['approved', 'denied', 'timeout', 'cancelled'] as const
export const decisionChannels = ['update', 'signal', 'timeout', 'cancel'] as const

export type Act = (typeof acts)[number]
export type ApprovalAct = (typeof approvalActs)[number]
export type Effect = (typeof effects)[number]
export type ExecStatus = (typeof execStatuses)[number]
export type GateKind = (typeof gateKinds)[number]
export type ApprovalDecision = (typeof approvalDecisions)[number]
export type DecisionChannel = (typeof decisionChannels)[number]
/** Where a policy event came from. Open-ended: these are the ones tether writes today. */
export type PolicyEventSource =
  | 'policy'
  | 'update'
  | 'signal'
  | 'timeout'
  | 'cancel'
  | 'remembered'
  | 'gate'
  | (string & {})
