/**
 * The audit store: PostgreSQL projections of every run (runs, steps, policy events, commands, gate results,
 * approvals) and the transcript the model activity reads. Temporal's history stays the source of truth;
 * these tables answer "what was refused", "what actually ran", "who approved what" and "what is waiting for
 * me" in one indexed query each. Table and column names are a public contract (docs/audit.md).
 */

export {
  ANCHORED_TABLES,
  type AnchoredAnswer,
  type AnchoredTable,
  type AnchorReport,
  compareWithHistory,
  type Finding,
} from './anchor.js'
export type { OutagePolicy } from './database.js'
export {
  AuditConflictError,
  AuditConnectionError,
  AuditError,
  AuditInputError,
  AuditMigrationError,
  describeServer,
  type ServerAddress,
} from './errors.js'
export {
  fetchRunHistory,
  HistoryUnavailableError,
  type ReplayedCall,
  type ReplayedExecution,
  type RunHistory,
  replayRun,
  verifyRunHistory,
} from './history.js'
export {
  type Act,
  type ApprovalDecision,
  type ApprovalDecisionRecord,
  type ApprovalRequest,
  type DecisionChannel,
  decisionChannels,
  type Effect,
  type ExecResultRecord,
  type ExecStatus,
  type GateEvent,
  type GateKind,
  PATH_TARGET_LIMIT,
  type PolicyEvent,
  type PolicyEventSource,
  type RunFinished,
  type RunStarted,
  type StepRecord,
  type Timestamp,
} from './inputs.js'
export type { McpCallRecord, McpCallRow, McpCallStatus, McpSighting } from './mcp.js'
export { type Migration, type MigrationReport, migrations } from './migrations.js'
export {
  BUILD_TYPE,
  checkProvenance,
  type ProvenanceCheck,
  type ProvenanceRows,
  type ProvenanceStatement,
  type ProvenanceSubject,
  provenanceStatement,
  SLSA_PROVENANCE,
  STATEMENT_TYPE,
} from './provenance.js'
export {
  type ApprovalAnswerRow,
  type ApprovalRow,
  type ExecAttemptRow,
  type ExecutedCommand,
  type GateEventRow,
  type InboxApproval,
  MAX_PAGE,
  type MessageTail,
  type Page,
  type PolicyEventRow,
  type RecordedAnswer,
  type RunRow,
  type RunStatus,
  type RunSummary,
  type StepRow,
  type StoredMessage,
  type StoredRunRows,
  type TimelineEntry,
  tellsSomethingNew,
} from './queries.js'
export {
  approvalDecisionRecords,
  approvalRequestRecord,
  policyReference,
  rejectedAnswerEvent,
  runFinishedRecord,
  runStartedRecord,
  stepRecords,
} from './records.js'
export {
  AuditStore,
  type AuditWrites,
  type EmbeddedServer,
  migrate,
  type OpenAuditOptions,
  openAudit,
} from './store.js'
export { boundedText, TEXT_LIMIT } from './text.js'
export { type PostgresTls, postgresTls, type SslMode } from './tls.js'
export {
  type AnswerCheck,
  type AnsweredApproval,
  type AnswerIdentity,
  checkAnswer,
  recordedIdentity,
  verifyRecordedAnswer,
} from './verify.js'
export type { DecisionOutcome, DecisionRows, StoredDecision, WorkspaceHolder } from './writers.js'
