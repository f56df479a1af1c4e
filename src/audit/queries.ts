/**
 * The audit queries, with typed results. Each one is a single indexed read (see the indexes in
 * migrations.ts): per-run queries walk a primary-key or per-run index range, the cross-run lists walk a
 * newest-first index and page with a keyset cursor, so a page costs the same on the first and the
 * thousandth call.
 */
import type { Database } from './database.js'
import { AuditInputError } from './errors.js'
import type {
  Act,
  ApprovalDecision,
  DecisionChannel,
  Effect,
  ExecStatus,
  GateKind,
  PolicyEventSource,
} from './inputs.js'

export interface Page<T> {
  items: T[]
  /** Pass as `before` to get the next (older) page; absent on the last page. */
  next?: string | undefined
}

export interface PolicyEventRow {
  id: number
  runId: string
  step: number
  call: number
  kind: 'refusal' | 'decision'
  source: PolicyEventSource
  act: Act
  target: string
  effect: Effect
  rule?: string | undefined
  layer?: string | undefined
  decidedBy?: string | undefined
  reason: string
  checks?: unknown
  at: Date
}

export interface StreamSummary {
  text: string
  elided: number
  bytes: number
  lines: number
  sha256: string
}

export interface ExecutedCommand {
  runId: string
  step: number
  call: number
  attempt: number
  argv: string[]
  cwd: string
  status: ExecStatus
  exitCode?: number | undefined
  signal?: string | undefined
  durationMs: number
  stdout: StreamSummary
  stderr: StreamSummary
  startedAt: Date
  finishedAt: Date
}

export interface StepRow {
  runId: string
  step: number
  toolCalls: Array<{ id: string; name: string; args: unknown }>
  decision: string
  observation: string
  inputTokens: number
  outputTokens: number
  startedAt: Date
  finishedAt: Date
}

export interface GateEventRow {
  runId: string
  step: number
  kind: GateKind
  detail: string
  at: Date
}

export interface ApprovalRow {
  approvalId: string
  runId: string
  step: number
  call: number
  act: Act
  target: string
  tree: unknown
  rule?: string | undefined
  layer?: string | undefined
  /** Who may answer; empty means anyone. */
  approvers: string[]
  requestedAt: Date
  deadline: Date
  decision?: ApprovalDecision | undefined
  decidedBy?: string | undefined
  channel?: DecisionChannel | undefined
  decidedAt?: Date | undefined
  reason?: string | undefined
  remember?: string | undefined
}

export type TimelineEntry =
  | ({ type: 'step' } & StepRow)
  | ({ type: 'policy' } & PolicyEventRow)
  | ({ type: 'exec' } & ExecutedCommand)
  | ({ type: 'gate' } & GateEventRow)
  | ({ type: 'approval' } & ApprovalRow)

export type RunStatus = 'running' | 'finished'

export interface RunRow {
  runId: string
  goal: string
  workspace: string
  status: RunStatus
  outcome?: string | undefined
  reason?: string | undefined
  taskQueue?: string | undefined
  parentRunId?: string | undefined
  startedAt: Date
  finishedAt?: Date | undefined
}

export interface RunSummary extends RunRow {
  /** The run's final counts once finished; while it runs, the sums over its recorded steps. */
  steps: number
  inputTokens: number
  outputTokens: number
  /** finishedAt − startedAt in workflow time; absent while the run is going. */
  durationMs?: number | undefined
  refusals: number
  commands: number
  pendingApprovals: number
}

export const MAX_PAGE = 1000

const cursorTimestamp = `to_char(%s at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

/** `at` in microseconds as text (exact, unlike a JS Date) plus a tiebreak key, as an opaque string. */
function encodeCursor(at: string, key: string | number): string {
  return Buffer.from(JSON.stringify([at, key])).toString('base64url')
}

function decodeCursor(cursor: string, operation: string): [string, string | number] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(value[0]) &&
      (typeof value[1] === 'string' || Number.isSafeInteger(value[1]))
    ) {
      return [value[0], value[1]]
    }
  } catch {
    // reported below
  }
  throw new AuditInputError(
    `${operation}: before: not a cursor returned by ${operation}; pass the 'next' of a page`,
  )
}

function pageLimit(limit: number | undefined, fallback: number, operation: string): number {
  const value = limit ?? fallback
  if (!Number.isInteger(value) || value < 1 || value > MAX_PAGE) {
    throw new AuditInputError(`${operation}: limit must be an integer from 1 to ${MAX_PAGE} (got ${limit})`)
  }
  return value
}

function requireId(value: unknown, field: string, operation: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new AuditInputError(`${operation}: ${field} must be a non-empty string`)
  }
  return value
}

/** A null column becomes an absent field. */
const opt = <T>(value: T | null): T | undefined => value ?? undefined

type Row = Record<string, unknown>

const POLICY_COLUMNS = `id, run_id, step, call, kind, source, act, target, effect, rule, layer, decided_by, reason,
  checks, at, ${cursorTimestamp.replace('%s', 'at')} as cursor_at`

function policyEvent(row: Row): PolicyEventRow {
  return {
    id: row.id as number,
    runId: row.run_id as string,
    step: row.step as number,
    call: row.call as number,
    kind: row.kind as PolicyEventRow['kind'],
    source: row.source as string,
    act: row.act as Act,
    target: row.target as string,
    effect: row.effect as Effect,
    rule: opt(row.rule as string | null),
    layer: opt(row.layer as string | null),
    decidedBy: opt(row.decided_by as string | null),
    reason: row.reason as string,
    checks: opt(row.checks),
    at: row.at as Date,
  }
}

/**
 * "What was refused": policy refusals and human denials (rows with `refused`), newest first, across all
 * runs or for one, paged by `before`.
 */
export async function refusedActions(
  db: Database,
  options: { runId?: string; limit?: number; before?: string } = {},
): Promise<Page<PolicyEventRow>> {
  const operation = 'refusedActions'
  const limit = pageLimit(options.limit, 100, operation)
  const values: unknown[] = []
  const where = ['refused']
  if (options.runId !== undefined) {
    values.push(requireId(options.runId, 'runId', operation))
    where.push(`run_id = $${values.length}`)
  }
  if (options.before !== undefined) {
    const [at, id] = decodeCursor(options.before, operation)
    values.push(at, id)
    where.push(`(at, id) < ($${values.length - 1}::timestamptz, $${values.length}::bigint)`)
  }
  values.push(limit + 1)
  const { rows } = await db.query<Row>(
    operation,
    `select ${POLICY_COLUMNS} from policy_events where ${where.join(' and ')}
      order by at desc, id desc limit $${values.length}`,
    values,
  )
  return page(rows, limit, policyEvent, (row) => encodeCursor(row.cursor_at as string, row.id as number))
}

function page<T>(rows: Row[], limit: number, map: (row: Row) => T, cursor: (row: Row) => string): Page<T> {
  const items = rows.slice(0, limit)
  const last = items[items.length - 1]
  return { items: items.map(map), next: rows.length > limit && last ? cursor(last) : undefined }
}

const EXEC_COLUMNS = `run_id, step, call, attempt, argv, cwd, status, exit_code, signal, duration_ms,
  stdout_text, stdout_elided, stdout_bytes, stdout_lines, stdout_sha256,
  stderr_text, stderr_elided, stderr_bytes, stderr_lines, stderr_sha256, started_at, finished_at`

function stream(row: Row, prefix: 'stdout' | 'stderr'): StreamSummary {
  return {
    text: row[`${prefix}_text`] as string,
    elided: row[`${prefix}_elided`] as number,
    bytes: row[`${prefix}_bytes`] as number,
    lines: row[`${prefix}_lines`] as number,
    sha256: row[`${prefix}_sha256`] as string,
  }
}

function executedCommand(row: Row): ExecutedCommand {
  return {
    runId: row.run_id as string,
    step: row.step as number,
    call: row.call as number,
    attempt: row.attempt as number,
    argv: row.argv as string[],
    cwd: row.cwd as string,
    status: row.status as ExecStatus,
    exitCode: opt(row.exit_code as number | null),
    signal: opt(row.signal as string | null),
    durationMs: row.duration_ms as number,
    stdout: stream(row, 'stdout'),
    stderr: stream(row, 'stderr'),
    startedAt: row.started_at as Date,
    finishedAt: row.finished_at as Date,
  }
}

/** "What actually ran" in one run: every command with its status, exit, duration and output, in order. */
export async function executedCommands(
  db: Database,
  options: { runId: string; limit?: number },
): Promise<ExecutedCommand[]> {
  const operation = 'executedCommands'
  const runId = requireId(options?.runId, 'runId', operation)
  const limit = pageLimit(options.limit, MAX_PAGE, operation)
  const { rows } = await db.query<Row>(
    operation,
    `select ${EXEC_COLUMNS} from exec_results where run_id = $1 order by step, call limit $2`,
    [runId, limit],
  )
  return rows.map(executedCommand)
}

const APPROVAL_COLUMNS = `approval_id, run_id, step, call, act, target, tree, rule, layer, approvers,
  requested_at, deadline, decision, decided_by, channel, decided_at, reason, remember`

function approval(row: Row): ApprovalRow {
  return {
    approvalId: row.approval_id as string,
    runId: row.run_id as string,
    step: row.step as number,
    call: row.call as number,
    act: row.act as Act,
    target: row.target as string,
    tree: row.tree,
    rule: opt(row.rule as string | null),
    layer: opt(row.layer as string | null),
    approvers: row.approvers as string[],
    requestedAt: row.requested_at as Date,
    deadline: row.deadline as Date,
    decision: opt(row.decision as ApprovalDecision | null),
    decidedBy: opt(row.decided_by as string | null),
    channel: opt(row.channel as DecisionChannel | null),
    decidedAt: opt(row.decided_at as Date | null),
    reason: opt(row.reason as string | null),
    remember: opt(row.remember as string | null),
  }
}

/**
 * "What is waiting for me": undecided approvals, oldest request first. With `approver`, only those that
 * person may answer (they are on the approval's list, or the list is empty = anyone).
 */
export async function pendingApprovals(
  db: Database,
  options: { approver?: string; runId?: string; limit?: number } = {},
): Promise<ApprovalRow[]> {
  const operation = 'pendingApprovals'
  const limit = pageLimit(options.limit, MAX_PAGE, operation)
  const values: unknown[] = []
  const where = ['decision is null']
  if (options.approver !== undefined) {
    values.push(requireId(options.approver, 'approver', operation))
    where.push(`(cardinality(approvers) = 0 or $${values.length} = any (approvers))`)
  }
  if (options.runId !== undefined) {
    values.push(requireId(options.runId, 'runId', operation))
    where.push(`run_id = $${values.length}`)
  }
  values.push(limit)
  const { rows } = await db.query<Row>(
    operation,
    `select ${APPROVAL_COLUMNS} from approvals where ${where.join(' and ')}
      order by requested_at, approval_id limit $${values.length}`,
    values,
  )
  return rows.map(approval)
}

function stepRow(row: Row): StepRow {
  return {
    runId: row.run_id as string,
    step: row.step as number,
    toolCalls: row.tool_calls as StepRow['toolCalls'],
    decision: row.decision as string,
    observation: row.observation as string,
    inputTokens: row.input_tokens as number,
    outputTokens: row.output_tokens as number,
    startedAt: row.started_at as Date,
    finishedAt: row.finished_at as Date,
  }
}

function gateEvent(row: Row): GateEventRow {
  return {
    runId: row.run_id as string,
    step: row.step as number,
    kind: row.kind as GateKind,
    detail: row.detail as string,
    at: row.at as Date,
  }
}

/** Where an entry sits inside its step: the model's turn, then each call's events, then the gate. */
function timelineKey(entry: TimelineEntry): [number, number, number, number] {
  switch (entry.type) {
    case 'step':
      return [0, 0, 0, 0]
    case 'approval':
      return [1, entry.call, entry.requestedAt.getTime(), 0]
    case 'policy':
      return [1, entry.call, entry.at.getTime(), 1]
    case 'exec':
      return [1, entry.call, entry.startedAt.getTime(), 2]
    case 'gate':
      return [2, 0, entry.at.getTime(), 0]
  }
}

function compareTimeline(a: TimelineEntry, b: TimelineEntry): number {
  if (a.step !== b.step) return a.step - b.step
  const ka = timelineKey(a)
  const kb = timelineKey(b)
  for (let i = 0; i < ka.length; i++) {
    const d = (ka[i] ?? 0) - (kb[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/**
 * A run's history in order: per step, the model's turn, then each call's approval, policy events and
 * command, then the verification gate.
 */
export async function runTimeline(db: Database, runId: string): Promise<TimelineEntry[]> {
  const operation = 'runTimeline'
  requireId(runId, 'runId', operation)
  const [steps, events, commands, gates, approvals] = await Promise.all([
    db.query<Row>(operation, 'select * from steps where run_id = $1', [runId]),
    db.query<Row>(operation, `select ${POLICY_COLUMNS} from policy_events where run_id = $1`, [runId]),
    db.query<Row>(operation, `select ${EXEC_COLUMNS} from exec_results where run_id = $1`, [runId]),
    db.query<Row>(operation, 'select * from gate_events where run_id = $1', [runId]),
    db.query<Row>(operation, `select ${APPROVAL_COLUMNS} from approvals where run_id = $1`, [runId]),
  ])
  const entries: TimelineEntry[] = [
    ...steps.rows.map((row) => ({ type: 'step' as const, ...stepRow(row) })),
    ...events.rows.map((row) => ({ type: 'policy' as const, ...policyEvent(row) })),
    ...commands.rows.map((row) => ({ type: 'exec' as const, ...executedCommand(row) })),
    ...gates.rows.map((row) => ({ type: 'gate' as const, ...gateEvent(row) })),
    ...approvals.rows.map((row) => ({ type: 'approval' as const, ...approval(row) })),
  ]
  return entries.sort(compareTimeline)
}

const RUN_COLUMNS = `run_id, goal, workspace, status, outcome, reason, task_queue, parent_run_id, started_at,
  finished_at`

function runRow(row: Row): RunRow {
  return {
    runId: row.run_id as string,
    goal: row.goal as string,
    workspace: row.workspace as string,
    status: row.status as RunStatus,
    outcome: opt(row.outcome as string | null),
    reason: opt(row.reason as string | null),
    taskQueue: opt(row.task_queue as string | null),
    parentRunId: opt(row.parent_run_id as string | null),
    startedAt: row.started_at as Date,
    finishedAt: opt(row.finished_at as Date | null),
  }
}

/** A run's outcome, steps, tokens and duration, with counts of its refusals, commands and open approvals. */
export async function runSummary(db: Database, runId: string): Promise<RunSummary | undefined> {
  const operation = 'runSummary'
  requireId(runId, 'runId', operation)
  const { rows } = await db.query<Row>(
    operation,
    `select ${RUN_COLUMNS},
            coalesce(r.steps, s.steps) as steps,
            coalesce(r.input_tokens, s.input_tokens) as input_tokens,
            coalesce(r.output_tokens, s.output_tokens) as output_tokens,
            (extract(epoch from r.finished_at - r.started_at) * 1000)::bigint as duration_ms,
            (select count(*) from policy_events p where p.run_id = r.run_id and p.refused) as refusals,
            (select count(*) from exec_results e where e.run_id = r.run_id) as commands,
            (select count(*) from approvals a where a.run_id = r.run_id and a.decision is null) as pending
       from runs r
       cross join lateral (
         select count(*) as steps, coalesce(sum(input_tokens), 0)::bigint as input_tokens,
                coalesce(sum(output_tokens), 0)::bigint as output_tokens
           from steps where run_id = r.run_id
       ) s
      where r.run_id = $1`,
    [runId],
  )
  const [row] = rows
  if (!row) return undefined
  return {
    ...runRow(row),
    steps: row.steps as number,
    inputTokens: row.input_tokens as number,
    outputTokens: row.output_tokens as number,
    durationMs: opt(row.duration_ms as number | null),
    refusals: row.refusals as number,
    commands: row.commands as number,
    pendingApprovals: row.pending as number,
  }
}

/** Runs, newest first, optionally only those still running or finished; paged by `before`. */
export async function listRuns(
  db: Database,
  options: { limit?: number; status?: RunStatus; before?: string } = {},
): Promise<Page<RunRow>> {
  const operation = 'listRuns'
  const limit = pageLimit(options.limit, 100, operation)
  const values: unknown[] = []
  const where: string[] = []
  if (options.status !== undefined) {
    if (options.status !== 'running' && options.status !== 'finished') {
      throw new AuditInputError(
        `${operation}: status must be 'running' or 'finished' (got '${options.status}')`,
      )
    }
    values.push(options.status)
    where.push(`status = $${values.length}`)
  }
  if (options.before !== undefined) {
    const [at, runId] = decodeCursor(options.before, operation)
    values.push(at, String(runId))
    where.push(`(started_at, run_id) < ($${values.length - 1}::timestamptz, $${values.length})`)
  }
  values.push(limit + 1)
  const { rows } = await db.query<Row>(
    operation,
    `select ${RUN_COLUMNS}, ${cursorTimestamp.replace('%s', 'started_at')} as cursor_at from runs
      ${where.length ? `where ${where.join(' and ')}` : ''}
      order by started_at desc, run_id desc limit $${values.length}`,
    values,
  )
  return page(rows, limit, runRow, (row) => encodeCursor(row.cursor_at as string, row.run_id as string))
}

export interface StoredMessage {
  seq: number
  /** The message's `role`, when it has one. */
  role?: string | undefined
  /** The message exactly as appended. */
  content: unknown
}

/** Transcript messages of a run from `fromSeq` on, in sequence order. */
export async function loadMessages(
  db: Database,
  runId: string,
  options: { fromSeq?: number; limit?: number } = {},
): Promise<StoredMessage[]> {
  const operation = 'loadMessages'
  requireId(runId, 'runId', operation)
  const fromSeq = options.fromSeq ?? 0
  if (!Number.isInteger(fromSeq) || fromSeq < 0) {
    throw new AuditInputError(`${operation}: fromSeq must be a non-negative integer (got ${fromSeq})`)
  }
  if (options.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 1)) {
    throw new AuditInputError(`${operation}: limit must be a positive integer (got ${options.limit})`)
  }
  const { rows } = await db.query<{ seq: number; role: string | null; content: unknown }>(
    operation,
    'select seq, role, content from messages where run_id = $1 and seq >= $2 order by seq limit $3',
    [runId, fromSeq, options.limit ?? null],
  )
  return rows.map((row) => ({ seq: row.seq, role: opt(row.role), content: row.content }))
}

/** How many messages the run's transcript holds: the sequence number the next append starts at. */
export async function messageCount(db: Database, runId: string): Promise<number> {
  requireId(runId, 'runId', 'messageCount')
  const { rows } = await db.query<{ count: number }>(
    'messageCount',
    'select coalesce(max(seq) + 1, 0)::int as count from messages where run_id = $1',
    [runId],
  )
  return rows[0]?.count ?? 0
}
