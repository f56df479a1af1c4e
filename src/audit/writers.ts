/**
 * The idempotent writers. Every row is keyed by its natural key, so an activity retry, a replay, or two
 * workers racing after a crash write it once:
 *
 * - facts that never change once true (a run started, a step, a policy event, a gate event, an approval
 *   request, a transcript message) insert with ON CONFLICT DO NOTHING: the first write wins and a repeat is
 *   a no-op;
 * - a run's finish is a DO-UPDATE-style write that only moves forward in workflow time, so a stale retry
 *   cannot overwrite a later finish (a run reset in Temporal finishes again, later); it then rewrites the
 *   run's rows together (tether_cluster_run), which changes where they are stored, never what they hold;
 * - an exec result is replaced only by a higher activity attempt: the workflow acts on the result of the
 *   attempt that completed the activity, which is the last one to run, so the row shows what the model saw;
 * - an approval's decision is set once: the first decision wins and a different one is reported, not stored.
 *
 * Each writer returns whether the stored row now holds this write (true for a retry of the same write).
 */

import type { Database, Queryable } from './database.js'
import { AuditConflictError, AuditInputError } from './errors.js'
import type * as Input from './inputs.js'

/** The schemas, loaded with the first write: a store that only reads (the CLI's lists) never loads them. */
let schemas: Promise<typeof Input> | undefined
const inputs = () => {
  schemas ??= import('./inputs.js')
  return schemas
}

/** A run's own policy spec under its digest (the caller computed it; workers check it when they read it). */
export async function storeRunPolicy(db: Queryable, digest: string, spec: unknown): Promise<void> {
  if (!/^[0-9a-f]{64}$/.test(digest)) {
    throw new AuditInputError('storeRunPolicy: digest must be a hex SHA-256 digest (64 characters)')
  }
  await db.query(
    'storeRunPolicy',
    'insert into run_policies (digest, spec) values ($1, $2) on conflict (digest) do nothing',
    [digest, JSON.stringify(spec)],
  )
}

export async function recordRunStarted(db: Queryable, value: Input.RunStarted): Promise<boolean> {
  const input = await inputs()
  const run = input.parse(input.runStarted, value, 'recordRunStarted')
  // The policy first: the run's row names it.
  if (run.effective) {
    await db.query(
      'recordRunStarted',
      'insert into policies (digest, spec) values ($1, $2) on conflict (digest) do nothing',
      [run.effective.digest, run.effective.spec],
    )
  }
  const { rowCount } = await db.query(
    'recordRunStarted',
    `insert into runs (run_id, goal, workspace, contract, policy, task_queue, parent_run_id, started_at, sandbox,
                       execution_id, policy_digest, floor, build_id, namespace)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     on conflict (run_id) do nothing`,
    [
      run.runId,
      run.goal,
      run.workspace,
      run.contract,
      run.policy,
      run.taskQueue ?? null,
      run.parentRunId ?? null,
      run.startedAt,
      run.sandbox ?? null,
      run.executionId ?? null,
      run.effective?.digest ?? null,
      run.floor ?? null,
      run.buildId ?? null,
      run.namespace ?? null,
    ],
  )
  if (rowCount === 1) return true
  if (run.executionId === undefined) return false
  // The row was there: a retry of this execution's own start, or another execution reusing the id.
  const { rows } = await db.query<{ execution_id: string | null; status: string; started_at: Date }>(
    'recordRunStarted',
    'select execution_id, status, started_at from runs where run_id = $1',
    [run.runId],
  )
  const [row] = rows
  const other = row && (row.execution_id ? row.execution_id !== run.executionId : row.status === 'finished')
  if (other) {
    throw new AuditConflictError(
      `run id ${run.runId} already names another run (started ${row.started_at.toISOString()}); ` +
        'a run id is never reused: start this run with a new id',
    )
  }
  return false
}

/** A running run that works in (or inside, or around) a folder another run asked for. */
export interface WorkspaceHolder {
  runId: string
  /** The folder it claimed. */
  path: string
  startedAt: Date
  goal: string
}

/** Any two 32-bit keys unlikely to collide with another application's advisory locks (migrations use 4). */
const CLAIM_LOCK = [0x7e7e7, 12] as const

/**
 * Claims `path` (absolute, resolved) for run `runId`: granted unless a running run of its task queue holds
 * the same folder, one inside it or one around it, which is returned instead. Claims are taken one at a time
 * (a lock held for the transaction), so two runs asking at once never both get a folder. Claiming again is a
 * no-op: a retried layout keeps its folder. `passOver` names runs whose claims do not count (the audit says
 * running, but Temporal knows them no more).
 */
export async function claimWorkspace(
  db: Database,
  runId: string,
  path: string,
  passOver: readonly string[] = [],
): Promise<WorkspaceHolder | undefined> {
  if (!path.startsWith('/')) throw new AuditInputError(`claimWorkspace: ${path} is not an absolute path`)
  return db.together('claimWorkspace', async (tx) => {
    const { rows: runs } = await tx.query<{ queue: string }>(
      'claimWorkspace',
      `select pg_advisory_xact_lock(${CLAIM_LOCK[0]}, ${CLAIM_LOCK[1]}), coalesce(task_queue, '') as queue
         from runs where run_id = $1`,
      [runId],
    )
    const queue = runs[0]?.queue
    if (queue === undefined) {
      throw new AuditInputError(`claimWorkspace: run ${runId} has no row in runs; record its start first`)
    }
    // A folder and one inside it overlap: with a trailing slash each, one is a prefix of the other.
    const { rows } = await tx.query<{ run_id: string; path: string; started_at: Date; goal: string }>(
      'claimWorkspace',
      `select c.run_id, c.path, r.started_at, r.goal
         from workspace_claims c join runs r on r.run_id = c.run_id
        where c.task_queue = $1 and c.run_id <> $2 and r.status = 'running' and c.run_id <> all($4::text[])
          and (starts_with(rtrim($3, '/') || '/', rtrim(c.path, '/') || '/')
               or starts_with(rtrim(c.path, '/') || '/', rtrim($3, '/') || '/'))
        order by r.started_at
        limit 1`,
      [queue, runId, path, passOver],
    )
    const holder = rows[0]
    if (holder) {
      return { runId: holder.run_id, path: holder.path, startedAt: holder.started_at, goal: holder.goal }
    }
    await tx.query(
      'claimWorkspace',
      `insert into workspace_claims (task_queue, path, run_id) values ($1, $2, $3)
       on conflict (task_queue, path) do update set run_id = excluded.run_id, claimed_at = now()
         where workspace_claims.run_id <> excluded.run_id`,
      [queue, path, runId],
    )
    return undefined
  })
}

export async function recordRunFinished(db: Database, value: Input.RunFinished): Promise<boolean> {
  const input = await inputs()
  const run = input.parse(input.runFinished, value, 'recordRunFinished')
  // The finish and the clustering of the run's rows: one commit.
  return db.together('recordRunFinished', async (tx) => {
    const { rows } = await tx.query<{ won: boolean; known: boolean }>(
      'recordRunFinished',
      `with finished as (
         update runs
            set status = 'finished', outcome = $2, reason = $3, steps = $4,
                input_tokens = $5, output_tokens = $6, finished_at = $7, cost_usd = $9
          where run_id = $1 and (finished_at is null or finished_at <= $7)
            and ($8::text is null or execution_id is null or execution_id = $8)
          returning 1
       )
       select exists (select 1 from finished) as won, exists (select 1 from runs where run_id = $1) as known`,
      [
        run.runId,
        run.outcome,
        run.reason ?? null,
        run.steps,
        run.inputTokens,
        run.outputTokens,
        run.finishedAt,
        run.executionId ?? null,
        run.cost ?? null,
      ],
    )
    const [result] = rows
    if (!result?.known) throw unknownRun('recordRunFinished', run.runId)
    // The run's rows are final now: store them together for the per-run reads (migration 5). A retry of
    // this write moves them again, harmlessly.
    if (result.won) await tx.query('recordRunFinished', 'select tether_cluster_run($1)', [run.runId])
    return result.won
  })
}

export async function recordStep(db: Queryable, value: Input.StepRecord): Promise<boolean> {
  const input = await inputs()
  const step = input.parse(input.step, value, 'recordStep')
  const { rowCount } = await db.query(
    'recordStep',
    `insert into steps (run_id, step, tool_calls, decision, observation, input_tokens, output_tokens,
                        started_at, finished_at, model, cached_input_tokens, cost_usd)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     on conflict (run_id, step) do nothing`,
    [
      step.runId,
      step.step,
      step.toolCalls,
      step.decision,
      step.observation,
      step.inputTokens,
      step.outputTokens,
      step.startedAt,
      step.finishedAt,
      step.model ?? null,
      step.cachedInputTokens ?? null,
      step.cost ?? null,
    ],
  )
  return rowCount === 1
}

/** Writes a batch in one statement; returns how many rows were new. */
export async function recordPolicyEvents(
  db: Queryable,
  values: readonly Input.PolicyEvent[],
): Promise<number> {
  const input = await inputs()
  const events = input.parse(input.policyEvents, values, 'recordPolicyEvents')
  if (events.length === 0) return 0
  const rows = policyEventRows(events, 1)
  const { rowCount } = await db.query(
    'recordPolicyEvents',
    `insert into policy_events (${POLICY_EVENT_COLUMNS}) select * from ${rows.source} ${POLICY_EVENT_CONFLICT}`,
    rows.values,
  )
  return rowCount ?? 0
}

/** Each column of a policy event's row: its name, its SQL type and its value, in one place. */
const POLICY_EVENT_FIELDS: ReadonlyArray<[string, string, (event: Input.PolicyEventRow) => unknown]> = [
  ['run_id', 'text', (e) => e.runId],
  ['step', 'int', (e) => e.step],
  ['call', 'int', (e) => e.call],
  ['kind', 'text', (e) => e.kind],
  ['source', 'text', (e) => e.source],
  ['act', 'text', (e) => e.act],
  ['target', 'text', (e) => e.target],
  ['effect', 'text', (e) => e.effect],
  ['rule', 'text', (e) => e.rule ?? null],
  ['layer', 'text', (e) => e.layer ?? null],
  ['decided_by', 'text', (e) => e.decidedBy ?? null],
  ['reason', 'text', (e) => e.reason],
  ['checks', 'json', (e) => e.checks ?? null],
  ['at', 'timestamptz', (e) => e.at],
]
const POLICY_EVENT_COLUMNS = POLICY_EVENT_FIELDS.map(([name]) => name).join(', ')
const POLICY_EVENT_CONFLICT = 'on conflict (run_id, step, call, kind, source) do nothing'

/** Parsed policy events as one `unnest` of column arrays, its parameters numbered from `first`. */
function policyEventRows(events: readonly Input.PolicyEventRow[], first: number) {
  const arrays = POLICY_EVENT_FIELDS.map(([, type], i) => `$${first + i}::${type}[]`).join(', ')
  return {
    source: `unnest(${arrays}) as e(${POLICY_EVENT_COLUMNS})`,
    values: POLICY_EVENT_FIELDS.map(([, , pick]) => events.map(pick)),
  }
}

export async function recordExecResult(db: Queryable, value: Input.ExecResultRecord): Promise<boolean> {
  const input = await inputs()
  const result = input.parse(input.execResult, value, 'recordExecResult')
  const { rowCount } = await db.query(
    'recordExecResult',
    `insert into exec_results as e (run_id, step, call, attempt, argv, cwd, status, exit_code, signal,
                                    duration_ms, stdout_text, stdout_elided, stdout_bytes, stdout_lines,
                                    stdout_sha256, stderr_text, stderr_elided, stderr_bytes, stderr_lines,
                                    stderr_sha256, started_at, finished_at, sandbox, kind)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
             $21, $22, $23, $24)
     on conflict (run_id, step, call) do update
        set attempt = excluded.attempt, argv = excluded.argv, cwd = excluded.cwd, status = excluded.status,
            exit_code = excluded.exit_code, signal = excluded.signal, duration_ms = excluded.duration_ms,
            stdout_text = excluded.stdout_text, stdout_elided = excluded.stdout_elided,
            stdout_bytes = excluded.stdout_bytes, stdout_lines = excluded.stdout_lines,
            stdout_sha256 = excluded.stdout_sha256, stderr_text = excluded.stderr_text,
            stderr_elided = excluded.stderr_elided, stderr_bytes = excluded.stderr_bytes,
            stderr_lines = excluded.stderr_lines, stderr_sha256 = excluded.stderr_sha256,
            started_at = excluded.started_at, finished_at = excluded.finished_at, sandbox = excluded.sandbox
      where e.attempt < excluded.attempt`,
    [
      result.runId,
      result.step,
      result.call,
      result.attempt,
      result.argv,
      result.cwd,
      result.status,
      result.exitCode ?? null,
      result.signal ?? null,
      result.durationMs,
      ...streamColumns(result.stdout),
      ...streamColumns(result.stderr),
      result.startedAt,
      result.finishedAt,
      result.sandbox ?? null,
      result.kind,
    ],
  )
  return rowCount === 1
}

function streamColumns(capture: Input.ExecResultRecord['stdout']) {
  return [capture.text, capture.elided, capture.bytes, capture.lines, capture.sha256]
}

export async function recordGateEvent(db: Database, value: Input.GateEvent): Promise<boolean> {
  const input = await inputs()
  const event = input.parse(input.gateEvent, value, 'recordGateEvent')
  const { rowCount } = await db.query(
    'recordGateEvent',
    `insert into gate_events (run_id, step, kind, detail, at) values ($1, $2, $3, $4, $5)
     on conflict (run_id, step, kind) do nothing`,
    [event.runId, event.step, event.kind, event.detail, event.at],
  )
  return rowCount === 1
}

export async function recordApprovalRequested(db: Database, value: Input.ApprovalRequest): Promise<boolean> {
  const input = await inputs()
  const request = input.parse(input.approvalRequested, value, 'recordApprovalRequested')
  const { rowCount } = await db.query(
    'recordApprovalRequested',
    `insert into approvals (approval_id, run_id, step, call, act, target, tree, rule, layer, approvers,
                            requested_at, deadline, action_digest, approvals_required, remember_offer, identity)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
     on conflict (approval_id) do nothing`,
    [
      request.approvalId,
      request.runId,
      request.step,
      request.call,
      request.act,
      request.target,
      request.tree,
      request.rule ?? null,
      request.layer ?? null,
      request.approvers,
      request.requestedAt,
      request.deadline,
      request.actionDigest ?? null,
      request.approvalsRequired,
      request.rememberOffer ?? null,
      request.identity ?? null,
    ],
  )
  return rowCount === 1
}

/** The decision an approval holds. */
export interface StoredDecision {
  decision: Input.ApprovalDecision
  decidedBy: string
  channel: Input.DecisionChannel
  decidedAt: Date
  reason?: string | undefined
  remember?: string | undefined
}

export interface DecisionOutcome {
  /** True when the approval holds this decision (it was first, or this is a retry of the first). */
  won: boolean
  /** What the approval holds now: this decision, or the earlier one that won. */
  stored: StoredDecision
}

const DECISION_COLUMNS = 'decision, decided_by, channel, decided_at, reason, remember'
/** An approval's decision columns, null while it waits. */
interface DecisionRow {
  decision: Input.ApprovalDecision | null
  decided_by: string | null
  channel: Input.DecisionChannel | null
  decided_at: Date | null
  reason: string | null
  remember: string | null
}

async function storedDecision(db: Queryable, approvalId: string): Promise<DecisionRow> {
  const { rows } = await db.query<DecisionRow>(
    'recordApprovalDecision',
    `select ${DECISION_COLUMNS} from approvals where approval_id = $1`,
    [approvalId],
  )
  return rows[0] as DecisionRow
}

/** What an approval's decision brings into its commit, besides its answers. */
export interface DecisionRows {
  /**
   * Its policy events: stored when this decision is the approval's (first, or a retry of the first); a
   * refusal in any case (the judgement of whichever attempt made it: a command's retry judges again).
   */
  events?: readonly Input.PolicyEvent[]
  /** The approved command's attempt, begun with its decision. */
  begin?: { key: AttemptKey; worker: string }
}

/**
 * Sets an approval's decision once: the first decision wins, and a later different one (a timeout racing an
 * approver, a second answer) is reported with the decision that is stored. The decision, its answers and
 * `rows` are one statement, so one commit and one round trip; nothing is written for an approval never
 * requested.
 */
export async function recordApprovalDecision(
  db: Queryable,
  value: Input.ApprovalDecisionRecord,
  rows: DecisionRows = {},
): Promise<DecisionOutcome> {
  const input = await inputs()
  const operation = 'recordApprovalDecision'
  const decision = input.parse(input.approvalDecision, value, operation)
  // The events' parameters come last ($25 on), after the decision's, its answers' and the attempt's.
  const events = policyEventRows(input.parse(input.policyEvents, rows.events ?? [], operation), 25)
  const answer = <T>(pick: (answer: (typeof decision.answers)[number]) => T) => decision.answers.map(pick)
  const { begin } = rows
  // Every CTE reads the table as it was when the statement began: `prior` is the approval before this write.
  const { rows: found } = await db.query<DecisionRow & { known: boolean; updated: boolean }>(
    operation,
    `with prior as (
       select ${DECISION_COLUMNS} from approvals where approval_id = $1
     ), decided as (
       update approvals
          set decision = $2, decided_by = $3, channel = $4, decided_at = $5, reason = $6, remember = $7,
              replacement = $8, raise_to = $9
        where approval_id = $1 and decision is null
        returning 1
     ), outcome as (
       select exists (select 1 from decided)
           or exists (select 1 from prior
                       where decision = $2 and decided_by = $3 and channel = $4 and decided_at = $5) as won
     ), answers as (
       insert into approval_answers (approval_id, approver, decision, channel, answered_at, reason, remember,
                                     key_fingerprint, public_key, signature, statement)
       select $1, a.* from unnest($10::text[], $11::text[], $12::text[], $13::timestamptz[], $14::text[],
                                  $15::text[], $16::text[], $17::text[], $18::text[], $19::json[]) as a
        where exists (select 1 from decided)
       on conflict (approval_id, approver) do nothing
     ), events as (
       insert into policy_events (${POLICY_EVENT_COLUMNS})
       select e.* from ${events.source}
        where exists (select 1 from prior) and ((select won from outcome) or e.kind = 'refusal')
       ${POLICY_EVENT_CONFLICT}
     ), attempt as (
       insert into exec_attempts (run_id, step, call, attempt, worker, started_at, alive_at)
       select $21::text, $22::int, $23::int, $24::int, $20, now(), now()
        where $20::text is not null and exists (select 1 from prior)
       on conflict (run_id, step, call, attempt) do update set worker = excluded.worker, alive_at = now()
     )
     select exists (select 1 from prior) as known,
            exists (select 1 from decided) as updated,
            p.decision, p.decided_by, p.channel, p.decided_at, p.reason, p.remember
       from (select 1) as one left join prior as p on true`,
    [
      decision.approvalId,
      decision.decision,
      decision.decidedBy,
      decision.channel,
      decision.decidedAt,
      decision.reason ?? null,
      decision.remember ?? null,
      decision.replacement ?? null,
      decision.raiseTo ?? null,
      answer((a) => a.approver),
      answer((a) => a.decision),
      answer((a) => a.channel),
      answer((a) => a.answeredAt),
      answer((a) => a.reason ?? null),
      answer((a) => a.remember ?? null),
      answer((a) => a.signed?.fingerprint ?? null),
      answer((a) => a.signed?.key ?? null),
      answer((a) => a.signed?.signature ?? null),
      answer((a) => a.signed?.statement ?? null),
      begin?.worker ?? null,
      begin?.key.runId ?? null,
      begin?.key.step ?? null,
      begin?.key.call ?? null,
      begin?.key.attempt ?? null,
      ...events.values,
    ],
  )
  const [row] = found
  if (!row?.known) {
    throw new AuditInputError(
      `recordApprovalDecision: approval '${decision.approvalId}' was never requested; record the request (recordApprovalRequested) first`,
    )
  }
  if (row.updated) {
    const { decision: outcome, decidedBy, channel, decidedAt, reason, remember } = decision
    return { won: true, stored: { decision: outcome, decidedBy, channel, decidedAt, reason, remember } }
  }
  // Undecided when this statement began, decided by another before its update: read what that one stored.
  const stored = row.decision !== null ? row : await storedDecision(db, decision.approvalId)
  const same =
    stored.decision === decision.decision &&
    stored.decided_by === decision.decidedBy &&
    stored.channel === decision.channel &&
    stored.decided_at?.getTime() === decision.decidedAt.getTime()
  return {
    won: same,
    stored: {
      decision: stored.decision as Input.ApprovalDecision,
      decidedBy: stored.decided_by as string,
      channel: stored.channel as Input.DecisionChannel,
      decidedAt: stored.decided_at as Date,
      reason: stored.reason ?? undefined,
      remember: stored.remember ?? undefined,
    },
  }
}

/**
 * Stores transcript messages at `fromSeq`, `fromSeq + 1`, …; returns how many rows were written (new or
 * replaced). The transcript has no gaps: a batch starts at or before the end of what is stored (seq 0 for a
 * new run), so `loadMessages(runId, { limit: n })` is exactly messages 0 … n−1.
 *
 * A message already stored at its sequence number is kept when this write is identical (a retry) or comes
 * from an older `attempt`; it is replaced by a higher attempt (a tool activity retried after a crash re-runs
 * its command, and the workflow acts on that last attempt's result). The same attempt with different content
 * throws AuditConflictError and keeps the stored message. A model activity that retries after storing its
 * reply should reuse that reply (loadMessages) rather than ask the provider again.
 */
export async function appendMessages(
  db: Queryable,
  runId: string,
  fromSeq: number,
  values: readonly unknown[],
  options: { attempt?: number } = {},
): Promise<number> {
  const input = await inputs()
  const batch = input.parse(
    input.messages,
    { runId, fromSeq, messages: values, attempt: options.attempt },
    'appendMessages',
  )
  if (batch.messages.length === 0) return 0
  const params = [
    batch.runId,
    batch.fromSeq,
    batch.messages.map((m) => m.role),
    batch.messages.map((m) => m.content),
    batch.attempt,
  ]
  const given = `unnest($3::text[], $4::text[]) with ordinality as given (role, content, ordinal)`
  const written = await db.query(
    'appendMessages',
    `insert into messages as m (run_id, seq, role, content, attempt)
     select $1, $2 + ordinal::int - 1, role, content::json, $5 from ${given}
      where $2 = 0 or exists (select 1 from messages where run_id = $1 and seq = $2 - 1)
     on conflict (run_id, seq) do update
        set role = excluded.role, content = excluded.content, attempt = excluded.attempt
      where m.attempt < excluded.attempt`,
    params,
  )
  const count = written.rowCount ?? 0
  if (count === batch.messages.length) return count
  const { rows } = await db.query<{ seq: number; differs: boolean | null; attempt: number | null }>(
    'appendMessages',
    `select $2 + ordinal::int - 1 as seq, m.content::text <> given.content as differs, m.attempt
       from ${given}
       left join messages m on m.run_id = $1 and m.seq = $2 + ordinal::int - 1
      order by ordinal`,
    params.slice(0, 4),
  )
  if (rows.some((row) => row.attempt === null)) {
    throw new AuditConflictError(
      `appendMessages: run '${runId}' has no message at seq ${fromSeq - 1}, so seq ${fromSeq} would leave a gap; append from messageCount()`,
    )
  }
  const conflict = rows.find((row) => row.differs && row.attempt === batch.attempt)
  if (conflict) {
    throw new AuditConflictError(
      `appendMessages: run '${runId}' already has a different message at seq ${conflict.seq} from the same attempt; reload the transcript from there instead of writing over it`,
    )
  }
  return count
}

function unknownRun(operation: string, runId: string): AuditInputError {
  return new AuditInputError(
    `${operation}: run '${runId}' was never recorded; record its start (recordRunStarted) first`,
  )
}

/** One attempt of one command (a step's call, or the gate as call -1). */
export interface AttemptKey {
  runId: string
  step: number
  call: number
  attempt: number
}

/**
 * Records that an attempt is starting (idempotent: a retried activity call of the same attempt reuses it).
 * A model turn writes attempt 1 of each command it allowed this way, with its reply: one commit.
 */
export async function beginExecAttempt(db: Queryable, key: AttemptKey, worker: string): Promise<void> {
  await db.query(
    'beginExecAttempt',
    `insert into exec_attempts (run_id, step, call, attempt, worker, started_at, alive_at)
     values ($1, $2, $3, $4, $5, now(), now())
     on conflict (run_id, step, call, attempt) do update set worker = excluded.worker, alive_at = now()`,
    [key.runId, key.step, key.call, key.attempt, worker],
  )
}

/**
 * What is on record of a command as an attempt of it starts, in one round trip: its observation (message
 * `seq` of the transcript, absent until stored) and whether attempt `key` is begun and not ended.
 */
export async function commandRecords(
  db: Database,
  key: AttemptKey,
  seq: number,
): Promise<{ observation: unknown; open: boolean }> {
  const { rows } = await db.query<{ observation: unknown; open: boolean }>(
    'commandRecords',
    `select (select content from messages where run_id = $1 and seq = $5) as observation,
            exists (
              select 1 from exec_attempts
               where run_id = $1 and step = $2 and call = $3 and attempt = $4 and ended_at is null
            ) as open`,
    [key.runId, key.step, key.call, key.attempt, seq],
  )
  return { observation: rows[0]?.observation ?? undefined, open: rows[0]?.open === true }
}

/**
 * Whether an attempt is recorded as begun and not ended (attempt 1 of a command its model turn allowed, or of
 * an approved one, begun with its decision).
 */
export async function execAttemptOpen(db: Database, key: AttemptKey): Promise<boolean> {
  const { rows } = await db.query<{ open: boolean }>(
    'execAttemptOpen',
    `select exists (
       select 1 from exec_attempts
        where run_id = $1 and step = $2 and call = $3 and attempt = $4 and ended_at is null
     ) as open`,
    [key.runId, key.step, key.call, key.attempt],
  )
  return rows[0]?.open === true
}

/**
 * Marks an attempt alive, run by `worker`, and says whether a later attempt of the same command has begun
 * (then this one must stop: the later one is waiting for it to be gone).
 */
export async function touchExecAttempt(
  db: Database,
  key: AttemptKey,
  worker: string,
): Promise<{ superseded: boolean }> {
  const { rows } = await db.query<{ superseded: boolean }>(
    'touchExecAttempt',
    `with touched as (
       update exec_attempts set alive_at = now(), worker = $5
        where run_id = $1 and step = $2 and call = $3 and attempt = $4 and ended_at is null
     )
     select exists (
       select 1 from exec_attempts where run_id = $1 and step = $2 and call = $3 and attempt > $4
     ) as superseded`,
    [key.runId, key.step, key.call, key.attempt, worker],
  )
  return { superseded: rows[0]?.superseded === true }
}

/**
 * Earlier attempts of the same command that have not ended: those seen alive within `staleMs` are still
 * running somewhere (the caller waits for them); older ones belonged to a worker that died with its
 * commands, and are closed here as `lost`.
 */
export async function runningEarlierAttempts(
  db: Database,
  key: AttemptKey,
  staleMs: number,
): Promise<Array<{ attempt: number; worker: string }>> {
  const { rows } = await db.query<{ attempt: number; worker: string }>(
    'runningEarlierAttempts',
    `with lost as (
       update exec_attempts set ended_at = now(), outcome = 'lost'
        where run_id = $1 and step = $2 and call = $3 and attempt < $4 and ended_at is null
          and alive_at < now() - make_interval(secs => $5::double precision / 1000)
     )
     select attempt, worker from exec_attempts
      where run_id = $1 and step = $2 and call = $3 and attempt < $4 and ended_at is null
        and alive_at >= now() - make_interval(secs => $5::double precision / 1000)
      order by attempt`,
    [key.runId, key.step, key.call, key.attempt, staleMs],
  )
  return rows
}

/** Who ran an attempt and when its command started: set with its end (the model turn wrote its begin). */
export interface AttemptRan {
  worker: string
  startedAt?: Date | undefined
}

export async function endExecAttempt(
  db: Queryable,
  key: AttemptKey,
  outcome: string,
  ran?: AttemptRan,
): Promise<void> {
  await db.query(
    'endExecAttempt',
    `update exec_attempts
        set ended_at = now(), alive_at = now(), outcome = $5, worker = coalesce($6, worker),
            started_at = coalesce($7, started_at)
      where run_id = $1 and step = $2 and call = $3 and attempt = $4 and ended_at is null`,
    [key.runId, key.step, key.call, key.attempt, outcome, ran?.worker ?? null, ran?.startedAt ?? null],
  )
}
