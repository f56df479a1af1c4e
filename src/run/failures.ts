/**
 * The failure types that cross the workflow boundary, by name: the workflow throws them, activities throw
 * them, and the CLI, the inbox and a parent workflow in any SDK branch on them. One list, so no two places
 * spell one differently.
 */
export const FAILURE = {
  /** The first step refused the run (contract, policy, floor, sandbox): nothing ran. */
  contractRejected: 'ContractRejected',
  /** The run failed after it started; the failure's details hold the run's result. */
  runFailed: 'RunFailed',
  /** The workflow's input is not a contract (an old or hand-made input). */
  contractError: 'ContractError',
  /** A policy does not load. */
  policyError: 'PolicyError',
  /** This worker's floor gives the run another effective policy than the one its history names. */
  floorMismatch: 'FloorMismatch',
  /** A policy stored under a digest a run names (its effective policy, or its own) no longer hashes to it. */
  policyTampered: 'PolicyTampered',
  /** The run's own policy, started by reference, is not in the audit this worker reads. */
  policyMissing: 'PolicyMissing',
  /** The audit has no record of the run. */
  unknownRun: 'UnknownRun',
  /** This worker cannot build the command sandbox the run needs. */
  sandboxUnavailable: 'SandboxUnavailable',
  /** A later attempt of a command took over from this one. */
  superseded: 'Superseded',
  /** The run's workspace cannot be laid out or restored on this worker (its source, its snapshots). */
  workspaceUnavailable: 'WorkspaceUnavailable',
  /** Another running run works in the contract's folder (or in one inside it, or around it). */
  workspaceInUse: 'WorkspaceInUse',
  /** The worker is stopping: its command goes to another worker (retried at once; no attempt used up). */
  workerStopping: 'WorkerStopping',
  /** A command (or the gate) failed by itself — its program or its sandbox — as often as a command may. */
  commandFailed: 'CommandFailed',
  /** The run has no verification command. */
  noGate: 'NoGate',
  /** The run's provenance cannot be made (its workspace cannot be read). */
  provenanceUnavailable: 'ProvenanceUnavailable',
} as const

/** Model failures by kind of provider error; the last four are never retried. */
export const MODEL_FAILURE = {
  'rate-limit': 'ModelRateLimited',
  server: 'ModelServerError',
  transport: 'ModelTransportError',
  timeout: 'ModelTimeout',
  malformed: 'ModelMalformedReply',
  auth: 'ModelAuthError',
  'bad-request': 'ModelBadRequestError',
  'context-overflow': 'ModelContextOverflowError',
  config: 'ModelConfigError',
} as const

/** Model failures another attempt cannot mend. */
export const MODEL_FAILURES_NOT_RETRIED: readonly string[] = [
  MODEL_FAILURE.auth,
  MODEL_FAILURE['bad-request'],
  MODEL_FAILURE['context-overflow'],
  MODEL_FAILURE.config,
]

/** Why a run the audit has as running ended outside Temporal: the server has no workflow for it. */
export function lostRunReason(namespace: string): string {
  return `Temporal (namespace ${namespace}) has no workflow for this run: its history was lost or deleted`
}
