/**
 * `openAudit`: one handle on the audit database for activities, the CLI and tests. It connects to
 * `DATABASE_URL` when given, otherwise to tether's embedded PostgreSQL under the state folder (starting it,
 * or reusing the one another tether process already runs there), and applies pending migrations.
 */
import { join } from 'node:path'
import type pg from 'pg'
import type { DsseEnvelope } from '../identity/index.js'
import { databaseUrl, type EmbeddedPostgres, startEmbeddedPostgres, tetherStateDir } from '../stack/index.js'
import { Database, type OutagePolicy, type Queryable } from './database.js'
import type {
  ApprovalDecisionRecord,
  ApprovalRequest,
  ExecResultRecord,
  GateEvent,
  PolicyEvent,
  RunFinished,
  RunStarted,
  StepRecord,
} from './inputs.js'
import type * as mcp from './mcp.js'
import { applyMigrations, type MigrationReport } from './migrations.js'
import type * as Provenance from './provenance.js'
import * as queries from './queries.js'
import * as writers from './writers.js'

export interface OpenAuditOptions {
  /** The server to use; defaults to env DATABASE_URL, then the embedded server. */
  databaseUrl?: string | undefined
  /** tether's state folder; the embedded server's data lives in `<stateDir>/postgres` (default: the per-user one). */
  stateDir?: string | undefined
  /** Apply pending migrations on open (default true: worker start, the CLI). */
  migrate?: boolean | undefined
  /** Connections in the pool (default 10), and half as many again for transactions. */
  maxConnections?: number | undefined
  /** Shown in pg_stat_activity (default `tether-audit`). */
  applicationName?: string | undefined
  /**
   * Once connected, wait through database outages instead of failing (workers; see `OutagePolicy`). A server
   * that cannot be reached when the store opens is still an error at once.
   */
  outages?: OutagePolicy | undefined
  log?: ((line: string) => void) | undefined
}

/** The embedded server behind a store, when it uses one. */
export interface EmbeddedServer {
  /** True when this store started it (and `close()` stops it); false when it reused a running one. */
  started: boolean
  pid: number
  port: number
}

/** The writes that can share one transaction (`AuditStore.together`), on the pool or on a transaction. */
function writesOn(db: Queryable) {
  return {
    recordRunStarted: (run: RunStarted) => writers.recordRunStarted(db, run),
    recordStep: (step: StepRecord) => writers.recordStep(db, step),
    recordPolicyEvents: (events: readonly PolicyEvent[]) => writers.recordPolicyEvents(db, events),
    recordApprovalDecision: (decision: ApprovalDecisionRecord, rows?: writers.DecisionRows) =>
      writers.recordApprovalDecision(db, decision, rows),
    recordExecResult: (result: ExecResultRecord) => writers.recordExecResult(db, result),
    beginExecAttempt: (key: writers.AttemptKey, worker: string) => writers.beginExecAttempt(db, key, worker),
    endExecAttempt: (key: writers.AttemptKey, outcome: string, ran?: writers.AttemptRan) =>
      writers.endExecAttempt(db, key, outcome, ran),
    appendMessages: (
      runId: string,
      fromSeq: number,
      messages: readonly unknown[],
      options?: { attempt?: number },
    ) => writers.appendMessages(db, runId, fromSeq, messages, options),
    /** Rows of the audit's other tables in the same commit (a workspace snapshot's, src/snapshots). */
    query: <Row extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
      db.query<Row>('together', text, values),
  }
}
export type AuditWrites = ReturnType<typeof writesOn>

export class AuditStore {
  private closed = false

  /** @internal use openAudit */
  constructor(
    private readonly db: Database,
    /** The embedded server, when no DATABASE_URL was given. */
    readonly embedded: EmbeddedServer | undefined,
    private readonly stopEmbedded: (() => Promise<void>) | undefined,
  ) {
    this.writes = writesOn(db)
  }
  /** The writes on the pool, each its own commit (built once: every write goes through it). */
  private readonly writes: AuditWrites

  /** `host:port` of the server (no credentials), for logs and messages. */
  get target(): string {
    return this.db.server.target
  }

  /** The pool, for callers that run their own SQL against the audit tables. */
  get pool(): pg.Pool {
    return this.db.pool
  }

  migrate(): Promise<MigrationReport> {
    return this.db.withClient('migrate', (client) => applyMigrations(client))
  }

  recordRunStarted(run: RunStarted): Promise<boolean> {
    return this.writes.recordRunStarted(run)
  }
  recordRunFinished(run: RunFinished): Promise<boolean> {
    return writers.recordRunFinished(this.db, run)
  }
  recordStep(step: StepRecord): Promise<boolean> {
    return this.writes.recordStep(step)
  }
  /** The folder a run works in, for it alone among its queue's running runs (see `claimWorkspace`). */
  claimWorkspace(
    runId: string,
    path: string,
    passOver?: readonly string[],
  ): Promise<writers.WorkspaceHolder | undefined> {
    return writers.claimWorkspace(this.db, runId, path, passOver)
  }
  recordPolicyEvents(events: readonly PolicyEvent[]): Promise<number> {
    return this.writes.recordPolicyEvents(events)
  }
  recordExecResult(result: ExecResultRecord): Promise<boolean> {
    return this.writes.recordExecResult(result)
  }
  /**
   * `work`'s writes in one transaction: one commit instead of one per write (a model turn: the step before,
   * the reply and the begin of each command it allowed; a tool: its result, observation, attempt end and
   * workspace snapshot). Writes `work` starts without awaiting one another go out in one round trip
   * (`Promise.all`); an error of `work`'s own (not the database's) rolls back and is thrown as it is.
   */
  together<T>(operation: string, work: (writes: AuditWrites) => Promise<T>): Promise<T> {
    return this.db.together(operation, (tx) => work(writesOn(tx)))
  }
  /** Command attempts: a retried command never starts before the attempt before it is gone. */
  beginExecAttempt(key: writers.AttemptKey, worker: string): Promise<void> {
    return this.writes.beginExecAttempt(key, worker)
  }
  /** Whether an attempt is begun and not ended (attempt 1 of a command its model turn allowed). */
  execAttemptOpen(key: writers.AttemptKey): Promise<boolean> {
    return writers.execAttemptOpen(this.db, key)
  }
  /** A command's observation (transcript message `seq`) and whether attempt `key` is open: one round trip. */
  commandRecords(key: writers.AttemptKey, seq: number): Promise<{ observation: unknown; open: boolean }> {
    return writers.commandRecords(this.db, key, seq)
  }
  touchExecAttempt(key: writers.AttemptKey, worker: string): Promise<{ superseded: boolean }> {
    return writers.touchExecAttempt(this.db, key, worker)
  }
  runningEarlierAttempts(
    key: writers.AttemptKey,
    staleMs: number,
  ): Promise<Array<{ attempt: number; worker: string }>> {
    return writers.runningEarlierAttempts(this.db, key, staleMs)
  }
  endExecAttempt(key: writers.AttemptKey, outcome: string, ran?: writers.AttemptRan): Promise<void> {
    return this.writes.endExecAttempt(key, outcome, ran)
  }
  /** Every attempt of every command of a run, in order. */
  execAttempts(runId: string): Promise<queries.ExecAttemptRow[]> {
    return queries.execAttempts(this.db, runId)
  }
  /** Definitions an MCP listing saw, and which run saw them from which step. */
  recordMcpSightings(sightings: readonly mcp.McpSighting[]): Promise<void> {
    return mcpQueries().then((m) => m.recordMcpSightings(this.db, sightings))
  }
  /** Stored MCP tool definitions by digest (the caller checks each against its digest). */
  mcpDefinitions(digests: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    return mcpQueries().then((m) => m.mcpDefinitions(this.db, digests))
  }
  recordMcpCall(call: mcp.McpCallRecord): Promise<boolean> {
    return mcpQueries().then((m) => m.recordMcpCall(this.db, call))
  }
  /** The MCP calls a run made, in order. */
  mcpCalls(runId: string): Promise<mcp.McpCallRow[]> {
    return mcpQueries().then((m) => m.mcpCalls(this.db, runId))
  }
  recordGateEvent(event: GateEvent): Promise<boolean> {
    return writers.recordGateEvent(this.db, event)
  }
  recordApprovalRequested(request: ApprovalRequest): Promise<boolean> {
    return writers.recordApprovalRequested(this.db, request)
  }
  /**
   * The end of a run its workflow never recorded (Temporal closed it by another path, or no longer has it):
   * its waiting approvals leave every list, cancelled by `decidedBy` for `why`, then its outcome is recorded
   * with the steps and tokens the audit counted. Returns whether this write recorded the end.
   */
  async recordEndedOutside(
    run: { runId: string; executionId?: string | undefined },
    end: { outcome: string; reason: string; at: Date; decidedBy: string; why: string },
  ): Promise<boolean> {
    for (const approval of await this.pendingApprovals({ runId: run.runId })) {
      await this.recordApprovalDecision({
        approvalId: approval.approvalId,
        decision: 'cancelled',
        decidedBy: end.decidedBy,
        channel: 'cancel',
        decidedAt: end.at,
        reason: end.why,
      })
    }
    const summary = await this.runSummary(run.runId)
    return this.recordRunFinished({
      runId: run.runId,
      ...(run.executionId ? { executionId: run.executionId } : {}),
      outcome: end.outcome,
      reason: end.reason,
      steps: summary?.steps ?? 0,
      inputTokens: summary?.inputTokens ?? 0,
      outputTokens: summary?.outputTokens ?? 0,
      finishedAt: end.at,
    })
  }
  /** The decision, its answers and `rows` in one statement (one commit). */
  recordApprovalDecision(
    decision: ApprovalDecisionRecord,
    rows?: writers.DecisionRows,
  ): Promise<writers.DecisionOutcome> {
    return writers.recordApprovalDecision(this.db, decision, rows)
  }
  appendMessages(
    runId: string,
    fromSeq: number,
    messages: readonly unknown[],
    options?: { attempt?: number },
  ): Promise<number> {
    return this.writes.appendMessages(runId, fromSeq, messages, options)
  }
  loadMessages(
    runId: string,
    options?: { fromSeq?: number; limit?: number },
  ): Promise<queries.StoredMessage[]> {
    return queries.loadMessages(this.db, runId, options)
  }
  /** Messages `fromSeq` … `fromSeq + limit − 1` of a run, with a mark of those before (see MessageTail). */
  messageTail(runId: string, fromSeq: number, limit: number): Promise<queries.MessageTail> {
    return queries.messageTail(this.db, runId, fromSeq, limit)
  }
  messageCount(runId: string): Promise<number> {
    return queries.messageCount(this.db, runId)
  }

  refusedActions(
    options?: Parameters<typeof queries.refusedActions>[1],
  ): Promise<queries.Page<queries.PolicyEventRow>> {
    return queries.refusedActions(this.db, options)
  }
  executedCommands(options: { runId: string; limit?: number }): Promise<queries.ExecutedCommand[]> {
    return queries.executedCommands(this.db, options)
  }
  pendingApprovals(options?: Parameters<typeof queries.pendingApprovals>[1]): Promise<queries.ApprovalRow[]> {
    return queries.pendingApprovals(this.db, options)
  }
  /** One approval by id, answered or not. */
  approval(approvalId: string): Promise<queries.ApprovalRow | undefined> {
    return queries.approval(this.db, approvalId)
  }
  /** Answers with their approvals and the runs' recorded policies: for re-verifying signed decisions. */
  approvalAnswers(
    options?: Parameters<typeof queries.approvalAnswers>[1],
  ): ReturnType<typeof queries.approvalAnswers> {
    return queries.approvalAnswers(this.db, options)
  }
  /** Undecided approvals across runs for an inbox: the viewer's first, then by deadline; one page. */
  inboxApprovals(
    options?: Parameters<typeof queries.inboxApprovals>[1],
  ): ReturnType<typeof queries.inboxApprovals> {
    return queries.inboxApprovals(this.db, options)
  }
  runTimeline(runId: string): Promise<queries.TimelineEntry[]> {
    return queries.runTimeline(this.db, runId)
  }
  /** The contract and policy a run was started with, as recorded. */
  runConfig(runId: string): ReturnType<typeof queries.runConfig> {
    return queries.runConfig(this.db, runId)
  }
  /** An effective policy by its digest (undefined when none is stored under it). */
  policyByDigest(digest: string): Promise<unknown> {
    return queries.policyByDigest(this.db, digest)
  }
  /** A run's own policy spec by its digest (undefined when none is stored under it). */
  runPolicyByDigest(digest: string): Promise<unknown> {
    return queries.policyByDigest(this.db, digest, 'run_policies')
  }
  /**
   * Stores a run's own policy spec under its digest (`Policy#digest`), for a run started by reference: the
   * workers that read this audit find it there, and the run's history carries the digest only.
   */
  storeRunPolicy(digest: string, spec: unknown): Promise<void> {
    return writers.storeRunPolicy(this.db, digest, spec)
  }
  /** A run's rows that history determines, and the policies stored under `digests` (one snapshot). */
  runRows(runId: string, digests: readonly string[] = []): Promise<queries.StoredRunRows> {
    return queries.runRows(this.db, runId, digests)
  }
  runSummary(runId: string): Promise<queries.RunSummary | undefined> {
    return queries.runSummary(this.db, runId)
  }
  listRuns(options?: Parameters<typeof queries.listRuns>[1]): ReturnType<typeof queries.listRuns> {
    return queries.listRuns(this.db, options)
  }
  /** The approver names recorded effective policies give a public key. */
  approverNames(publicKey: string): Promise<string[]> {
    return queries.approverNames(this.db, publicKey)
  }
  /** Run or approval ids starting with `prefix` (at most `limit`), for ids typed in part. */
  idsStartingWith(kind: 'run' | 'approval', prefix: string, limit?: number): Promise<string[]> {
    return queries.idsStartingWith(this.db, kind, prefix, limit)
  }
  /** Runs on a task queue the audit holds as running, oldest first. */
  runningRuns(options: Parameters<typeof queries.runningRuns>[1]): ReturnType<typeof queries.runningRuns> {
    return queries.runningRuns(this.db, options)
  }
  /** A finished run's rows its provenance statement is made of (provenance.ts). */
  async provenanceRows(runId: string): Promise<Provenance.ProvenanceRows | undefined> {
    return (await provenanceQueries()).provenanceRows(this.db, runId)
  }
  async recordProvenance(runId: string, envelope: DsseEnvelope, subject: string): Promise<void> {
    return (await provenanceQueries()).recordProvenance(this.db, runId, envelope, subject)
  }
  /** A run's signed provenance envelope, when one was recorded. */
  async provenance(runId: string): Promise<DsseEnvelope | undefined> {
    return (await provenanceQueries()).provenanceOf(this.db, runId)
  }

  /** Ends the pool; stops the embedded server only if this store started it. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    try {
      await this.db.end()
    } finally {
      await this.stopEmbedded?.()
    }
  }
}

export async function openAudit(options: OpenAuditOptions = {}): Promise<AuditStore> {
  let url = options.databaseUrl || databaseUrl()
  let embedded: EmbeddedPostgres | undefined
  if (!url) {
    embedded = await startEmbeddedPostgres({
      dataDir: join(options.stateDir ?? tetherStateDir(), 'postgres'),
      ...(options.log ? { log: options.log } : {}),
    })
    url = embedded.url
  }
  const stopEmbedded = embedded?.started ? embedded.stop : undefined
  let db: Database | undefined
  try {
    db = new Database({
      connectionString: url,
      // The PGSSL* variables are for the server DATABASE_URL names, not the one tether runs itself.
      ...(embedded ? { env: {} } : {}),
      ...(options.maxConnections ? { maxConnections: options.maxConnections } : {}),
      ...(options.applicationName ? { applicationName: options.applicationName } : {}),
    })
    const store = new AuditStore(
      db,
      embedded ? { started: embedded.started, pid: embedded.pid, port: embedded.port } : undefined,
      stopEmbedded,
    )
    // Connect now, so a wrong URL or a server that is down fails here with its one-line message.
    if (options.migrate ?? true) {
      const report = await store.migrate()
      if (report.applied.length) {
        options.log?.(`audit schema migrated to version ${report.version} on ${store.target}`)
      }
    } else {
      await db.query('connect', 'select 1')
    }
    db.outages = options.outages
    return store
  } catch (error) {
    await db?.end().catch(() => {})
    await stopEmbedded?.()
    throw error
  }
}

/** Applies pending migrations with a connection from `pool` (for callers that manage their own pool). */
export async function migrate(pool: pg.Pool): Promise<MigrationReport> {
  const client = await pool.connect()
  try {
    return await applyMigrations(client)
  } finally {
    client.release()
  }
}

/** The provenance queries, loaded when first used: they bring the DSSE code, which a reader of runs never needs. */
const provenanceQueries = () => import('./provenance.js')
/** The MCP records, loaded when first used: their schemas bring zod and the run module, which a reader of runs never needs. */
const mcpQueries = () => import('./mcp.js')
