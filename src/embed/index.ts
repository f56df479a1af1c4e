/**
 * tether's public surface for teams embedding it in their Temporal estate: the plugin for an existing
 * Worker, the client helpers to start runs and answer approvals, the connection settings (TLS, mTLS, API
 * key) read the way Temporal's tools read them, the contract and policy types, and the audit store. Workflow code imports `tether/workflows` instead (it has no Node dependencies).
 */
export { type ActivityDependencies, createActivities, type TetherActivities } from '../activities/index.js'
export { type AuditStore, openAudit } from '../audit/index.js'
export { loadPolicyFile, Policy, PolicyError } from '../policy/index.js'
export {
  ContractError,
  parseContract,
  type TaskContract,
  type TaskContractInput,
  taskContractSchema,
} from '../run/index.js'
export { type ObjectStore, postgresStore, type S3Location, s3Store } from '../snapshots/index.js'
export {
  ConfigError,
  connectTemporalClient,
  connectTemporalWorker,
  readConfig,
  readTelemetry,
  readTemporalTarget,
  type TelemetryConfig,
  type TemporalConnectionOptions,
  type TemporalTarget,
  type TetherConfig,
} from '../stack/index.js'
export type {
  AgentRunInput,
  AgentRunResult,
  DecisionInput,
  DecisionRejection,
  Outcome,
  PendingApproval,
} from '../workflows/index.js'
export {
  AnswerError,
  answerApproval,
  type CheckoutOptions,
  checkoutRun,
  draftAnswer,
  InvalidRunIdError,
  newRunId,
  type PolicyStore,
  type RewindOptions,
  RunIdTakenError,
  RunRejectedError,
  rewindRun,
  runPriority,
  type StartRunOptions,
  startAgentRun,
  updateRejection,
  waitForStart,
  workspaceAtStep,
} from './client.js'
export {
  APPROVAL_META_KEY,
  createTetherMcpServer,
  loadMcpPolicies,
  mcpHttpHandler,
  type TetherMcpServerOptions,
} from './mcp-server.js'
export { type TetherPluginOptions, tetherPlugin } from './plugin.js'
export { OTEL_WORKFLOW_INTERCEPTORS, WorkerTelemetry } from './telemetry.js'
export {
  createTetherWorker,
  type LocalTether,
  startLocalTether,
  type TetherWorkerOptions,
  type WorkerFloor,
  type WorkerMcpServers,
  type WorkerPrices,
  workerFloor,
  workerMcpServers,
  workerPrices,
} from './worker.js'
