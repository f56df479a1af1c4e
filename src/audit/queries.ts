/**
 * The audit queries, with typed results. Each one is a single indexed read (see the indexes in
 * migrations.ts): per-run queries walk a primary-key or per-run index range, the cross-run lists walk a
 * newest-first index and page with a keyset cursor, so a page costs the same on the first and the
 * thousandth call.
 */
import type { StreamCapture } from '../exec/index.js'
import type { Database } from './database.js'
import { AuditInputError } from './errors.js'
import {
  type Act,
  type ApprovalAct,
  type ApprovalDecision,
  type DecisionChannel,
  decisionChannels,
  type Effect,
  type ExecStatus,
  type GateKind,
  type PolicyEventSource,
} from './vocabulary.js'

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
  stdout: StreamCapture
  stderr: StreamCapture
  startedAt: Date
  finishedAt: Date
  /** What the sandbox saw (variable names passed, limits, the limit hit, network); absent when off. */
  sandbox?: unknown
  /** `gate`: the verification command (call -1 of its step); `tool`: the model's exec call. */
  kind: 'tool' | 'gate' | 'workspace'
}

export interface StepRow {
  runId: string
  step: number
  toolCalls: Array<{ id: string; name: string; args: unknown }>
  decision: string
  observation: string
  inputTokens: number
  outputTokens: number
  /** Prompt-cache reads (part of `inputTokens`); absent before costs were recorded. */
  cachedInputTokens?: number | undefined
  /** The model asked, as a provider id (`anthropic:claude-sonnet-4-5`). */
  model?: string | undefined
  /** What the turn cost in micro-dollars; absent when its model had no price. */
  cost?: number | undefined
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

/**
 * What became of the workspace before a call, as a person should hear it: `outside-edit`, found other than
 * its last recorded tree (an edit made outside the run, or what an attempt cut off did; recorded as a
 * snapshot of its own and told to the model); `restore`, missing on the worker that took the call, which
 * laid the recorded tree out from the store and checked its hash.
 */
export interface WorkspaceEventRow {
  runId: string
  step: number
  call: number
  kind: 'outside-edit' | 'restore'
  /** The tree it was found as, or restored. */
  root: string
  files: number
  bytes: number
  /** What changed, as `M path, A path, …`; for a restore, the machine (`on HOST`). */
  detail: string
  at: Date
}

export interface ApprovalRow {
  approvalId: string
  runId: string
  step: number
  /** The call's index in its step; -1 for a budget approval. */
  call: number
  /** `budget`: the run reached its cost cap and waits for a budget approver to raise it. */
  act: ApprovalAct
  target: string
  tree: unknown
  rule?: string | undefined
  layer?: string | undefined
  /** Who may answer; empty means anyone. */
  approvers: string[]
  requestedAt: Date
  /** When the wait ends: the approval timeout, or the run's wall-time budget when that ends first. */
  deadline: Date
  /** Which limit sets `deadline`. */
  deadlineBy?: 'approval timeout' | 'wall-time budget' | undefined
  decision?: ApprovalDecision | undefined
  decidedBy?: string | undefined
  channel?: DecisionChannel | undefined
  decidedAt?: Date | undefined
  reason?: string | undefined
  remember?: string | undefined
  /** SHA-256 of the judged action: what a signed answer must cover (absent before identity existed). */
  actionDigest?: string | undefined
  /** Distinct approvers the ask needs. */
  approvalsRequired: number
  /** What "remember" was offered before anyone answered: `{ exact, wider? }` or `{ refused }`. */
  rememberOffer?: { exact: string; wider?: string } | { refused: string } | undefined
  /** Whether answers had to be signed. */
  identity?: 'signed' | 'unsigned' | undefined
  /** The edited command approved instead of the asked one (the asked one stays in target and tree). */
  replacement?: string[] | undefined
  /** A budget approval's approved cap, as signed (`"50 USD"`). */
  raiseTo?: string | undefined
  /** Whether the rule that asked is one of the worker's floor (the operator's), not the run's own. */
  fromFloor: boolean
}

/** One attempt of one command (call -1: the gate). */
export interface ExecAttemptRow {
  runId: string
  step: number
  call: number
  attempt: number
  worker: string
  startedAt: Date
  aliveAt: Date
  endedAt?: Date | undefined
  /** How it ended: the command's status, `superseded` (a later attempt took over) or `lost` (its worker died). */
  outcome?: string | undefined
}

/** One person's answer to an approval, with its proof when signed. */
export interface ApprovalAnswerRow {
  approvalId: string
  approver: string
  decision: 'approve' | 'deny'
  channel: 'update' | 'signal'
  answeredAt: Date
  reason?: string | undefined
  remember?: string | undefined
  keyFingerprint?: string | undefined
  publicKey?: string | undefined
  signature?: string | undefined
  statement?: unknown
}

export type TimelineEntry =
  | ({ type: 'step' } & StepRow)
  | ({ type: 'policy' } & PolicyEventRow)
  | ({ type: 'exec' } & ExecutedCommand)
  | ({ type: 'gate' } & GateEventRow)
  | ({ type: 'approval' } & ApprovalRow)
  | ({ type: 'workspace' } & WorkspaceEventRow)

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
  /** The sandbox mode of the run's policy; absent for runs recorded before the sandbox existed. */
  sandbox?: 'enforce' | 'off' | undefined
  /** The digest of the effective policy (floor + run) the run works under; absent for runs before floors. */
  policyDigest?: string | undefined
  /** The floor it stands on: the worker's floor file, or `built-in`. */
  floor?: string | undefined
  /**
   * What its priced model turns cost, in micro-dollars: the run's total once finished, the sum of its
   * recorded steps while it runs; absent when no turn had a price.
   */
  cost?: number | undefined
  /** The Worker Deployment build it started on (Worker Versioning). */
  buildId?: string | undefined
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

type Row = Record<string, unknown>

/** A WHERE clause built from optional filters, with numbered parameters. */
class Conditions {
  readonly values: unknown[] = []
  constructor(readonly clauses: string[] = []) {}

  /** Adds `value` as the next parameter and returns its placeholder. */
  param(value: unknown): string {
    this.values.push(value)
    return `$${this.values.length}`
  }

  get sql(): string {
    return this.clauses.length ? `where ${this.clauses.join(' and ')}` : ''
  }
}

/**
 * A newest-first page by keyset: rows before the cursor's (time, tiebreak), the next cursor taken from the
 * last row. The cursor carries the time as microsecond text (exact, unlike a JS Date) and is opaque to
 * callers.
 */
async function keysetPage<T>(
  db: Database,
  operation: string,
  query: {
    columns: string
    table: string
    conditions: Conditions
    time: string
    tiebreak: { column: string; type: 'bigint' | 'text' }
    before: string | undefined
    limit: number
    map: (row: Row) => T
  },
): Promise<Page<T>> {
  const { conditions, time, tiebreak } = query
  if (query.before !== undefined) {
    const [at, key] = decodeCursor(query.before, operation)
    conditions.clauses.push(
      `(${time}, ${tiebreak.column}) < (${conditions.param(at)}::timestamptz, ${conditions.param(key)}::${tiebreak.type})`,
    )
  }
  const limit = conditions.param(query.limit + 1)
  const { rows } = await db.query<Row>(
    operation,
    `select ${query.columns}, to_char(${time} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at
       from ${query.table} ${conditions.sql}
      order by ${time} desc, ${tiebreak.column} desc limit ${limit}`,
    conditions.values,
  )
  const items = rows.slice(0, query.limit)
  const last = items[items.length - 1]
  const next =
    rows.length > query.limit && last
      ? Buffer.from(JSON.stringify([last.cursor_at, last[tiebreak.column]])).toString('base64url')
      : undefined
  return { items: items.map(query.map), next }
}

/** Timestamp columns: Date objects from the driver, ISO strings inside to_json rows. */
const TIMESTAMPS = new Set([
  'at',
  'started_at',
  'finished_at',
  'requested_at',
  'deadline',
  'decided_at',
  'answered_at',
  'alive_at',
  'ended_at',
])
/**
 * Columns that serve the query (paging, filtering) and are not part of the result; `cost_usd` is a step's
 * cost as stored, in dollars, which its row carries as micro-dollars (`cost`) instead.
 */
const INTERNAL = new Set(['cursor_at', 'refused', 'cost_usd'])

/**
 * A row as a result object: snake_case columns become camelCase fields, NULL an absent field, timestamps
 * Dates. The column lists below are the contract with the result interfaces above.
 */
function record<T>(row: Row): T {
  const result: Row = {}
  for (const column in row) {
    if (INTERNAL.has(column)) continue
    const value = row[column]
    result[fieldName(column)] =
      value === null
        ? undefined
        : TIMESTAMPS.has(column) && !(value instanceof Date)
          ? new Date(value as string)
          : value
  }
  return result as T
}

const fieldNames = new Map<string, string>()

/** `decided_by` → `decidedBy`, remembered: the same few dozen columns are named on every row. */
function fieldName(column: string): string {
  let field = fieldNames.get(column)
  if (field === undefined) {
    field = column.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())
    fieldNames.set(column, field)
  }
  return field
}

const STREAM_FIELDS = ['text', 'elided', 'bytes', 'lines', 'sha256'] as const

/** An exec_results row, its per-stream columns (`stdout_text`, …) gathered into `stdout` and `stderr`. */
function executedCommand(row: Row): ExecutedCommand {
  const flat: Row = { ...row }
  const streams: Record<string, Row> = { stdout: {}, stderr: {} }
  for (const [name, stream] of Object.entries(streams)) {
    for (const field of STREAM_FIELDS) {
      stream[field] = row[`${name}_${field}`]
      delete flat[`${name}_${field}`]
    }
  }
  return { ...record<Omit<ExecutedCommand, 'stdout' | 'stderr'>>(flat), ...streams } as ExecutedCommand
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
  const conditions = new Conditions(['refused'])
  if (options.runId !== undefined) {
    conditions.clauses.push(`run_id = ${conditions.param(requireId(options.runId, 'runId', operation))}`)
  }
  return keysetPage(db, operation, {
    columns:
      'id, run_id, step, call, kind, source, act, target, effect, rule, layer, decided_by, reason, checks, at',
    table: 'policy_events',
    conditions,
    time: 'at',
    tiebreak: { column: 'id', type: 'bigint' },
    before: options.before,
    limit: pageLimit(options.limit, 100, operation),
    map: record<PolicyEventRow>,
  })
}

const EXEC_COLUMNS = `run_id, step, call, attempt, argv, cwd, status, exit_code, signal, duration_ms,
  stdout_text, stdout_elided, stdout_bytes, stdout_lines, stdout_sha256,
  stderr_text, stderr_elided, stderr_bytes, stderr_lines, stderr_sha256, started_at, finished_at, sandbox, kind`

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
    // In each step its calls in order, then the gate (call -1).
    `select ${EXEC_COLUMNS} from exec_results where run_id = $1 order by step, call < 0, call limit $2`,
    [runId, limit],
  )
  return rows.map(executedCommand)
}

/**
 * When the run's wall-time budget ends (the run's start plus its contract's budget): an approval's wait
 * ends then too, when that is before its own timeout — also for requests recorded before they said so.
 */
const BUDGET_END = `(select r.started_at + (r.contract->'budgets'->>'maxWallTime')::bigint * interval '1 millisecond'
     from runs r where r.run_id = approvals.run_id
      and json_typeof(r.contract->'budgets'->'maxWallTime') = 'number')`

// deadline: when the wait really ends (deadline_by says which limit sets it); from_floor: whether the
// deciding rule's layer is one of the worker's floor in the run's effective policy.
const APPROVAL_COLUMNS = `approval_id, run_id, step, call, act, target, tree, rule, layer, approvers,
  requested_at, least(deadline, ${BUDGET_END}) as deadline,
  case when ${BUDGET_END} <= deadline then 'wall-time budget' else 'approval timeout' end as deadline_by,
  decision, decided_by, channel, decided_at, reason, remember, action_digest,
  approvals_required, remember_offer, identity, replacement, raise_to,
  coalesce((select bool_or(l->>'origin' = 'floor')
              from runs r join policies p on p.digest = r.policy_digest,
                   jsonb_array_elements(p.spec->'layers') l
             where r.run_id = approvals.run_id and l->>'name' = approvals.layer), false) as from_floor`

export async function execAttempts(db: Database, runId: string): Promise<ExecAttemptRow[]> {
  const operation = 'execAttempts'
  requireId(runId, 'runId', operation)
  const { rows } = await db.query<Row>(
    operation,
    `select run_id, step, call, attempt, worker, started_at, alive_at, ended_at, outcome
       from exec_attempts where run_id = $1 order by step, call, attempt`,
    [runId],
  )
  return rows.map(record<ExecAttemptRow>)
}

/** One approval by id, answered or not. */
export async function approval(db: Database, approvalId: string): Promise<ApprovalRow | undefined> {
  const operation = 'approval'
  requireId(approvalId, 'approvalId', operation)
  const { rows } = await db.query<Row>(
    operation,
    `select ${APPROVAL_COLUMNS} from approvals where approval_id = $1`,
    [approvalId],
  )
  return rows[0] ? record<ApprovalRow>(rows[0]) : undefined
}

/** An answer with what it is checked against: its approval, its run's own policy and effective one. */
export interface RecordedAnswer {
  approval: ApprovalRow
  answer: ApprovalAnswerRow
  /** The run's own policy, as its starter gave it. */
  policy: unknown
  /** The run's effective policy: its digest, and the spec stored under it (absent when none is). */
  effective?: { digest: string; spec?: unknown } | undefined
}

/**
 * Answers with the approval they answer and the policies their run recorded, oldest first: what offline
 * re-verification of signed decisions reads.
 */
export async function approvalAnswers(
  db: Database,
  options: { runId?: string; limit?: number } = {},
): Promise<RecordedAnswer[]> {
  const operation = 'approvalAnswers'
  const limit = pageLimit(options.limit, MAX_PAGE, operation)
  const conditions = new Conditions()
  if (options.runId !== undefined) {
    conditions.clauses.push(`a.run_id = ${conditions.param(requireId(options.runId, 'runId', operation))}`)
  }
  const { rows } = await db.query<{
    approval: Row
    answer: Row
    policy: unknown
    policy_digest: string | null
    effective: unknown
  }>(
    operation,
    `select to_json(a) as approval, to_json(w) as answer, r.policy, r.policy_digest, p.spec as effective
       from approval_answers w
       join approvals a using (approval_id)
       join runs r on r.run_id = a.run_id
       left join policies p on p.digest = r.policy_digest
     ${conditions.sql}
      order by w.answered_at, w.approval_id, w.approver limit ${conditions.param(limit)}`,
    conditions.values,
  )
  return rows.map((row) => ({
    approval: record<ApprovalRow>(row.approval),
    answer: record<ApprovalAnswerRow>(row.answer),
    policy: row.policy,
    ...(row.policy_digest
      ? {
          effective: {
            digest: row.policy_digest,
            ...(row.effective !== null ? { spec: row.effective } : {}),
          },
        }
      : {}),
  }))
}

/**
 * "What is waiting for me": undecided approvals, oldest request first. With `approver`, only those that
 * person may answer (they are on the approval's list, or the list is empty = anyone).
 */
export async function pendingApprovals(
  db: Database,
  options: {
    approver?: string
    runId?: string
    limit?: number
    /** The next page: approvals requested after this one (the last of the previous page). */
    after?: Pick<ApprovalRow, 'requestedAt' | 'approvalId'>
  } = {},
): Promise<ApprovalRow[]> {
  const operation = 'pendingApprovals'
  const limit = pageLimit(options.limit, MAX_PAGE, operation)
  const conditions = new Conditions(['decision is null'])
  if (options.approver !== undefined) {
    const approver = conditions.param(requireId(options.approver, 'approver', operation))
    conditions.clauses.push(`(cardinality(approvers) = 0 or ${approver} = any (approvers))`)
  }
  if (options.runId !== undefined) {
    conditions.clauses.push(`run_id = ${conditions.param(requireId(options.runId, 'runId', operation))}`)
  }
  if (options.after !== undefined) {
    const at = conditions.param(options.after.requestedAt)
    const id = conditions.param(requireId(options.after.approvalId, 'after.approvalId', operation))
    conditions.clauses.push(`(requested_at, approval_id) > (${at}::timestamptz, ${id})`)
  }
  const { rows } = await db.query<Row>(
    operation,
    `select ${APPROVAL_COLUMNS} from approvals ${conditions.sql}
      order by requested_at, approval_id limit ${conditions.param(limit)}`,
    conditions.values,
  )
  return rows.map(record<ApprovalRow>)
}

/** A pending approval with what an inbox shows beside it: its run's goal and workspace. */
export interface InboxApproval extends ApprovalRow {
  goal: string
  workspace: string
  /** `viewer` may answer it: they are on its approver list, or the list is empty. */
  forMe: boolean
}

/**
 * The inbox: undecided approvals across runs, those `viewer` may answer first, then by deadline (the most
 * urgent first); a page of `limit` from `offset`, with how many there are in all and for the viewer.
 */
export async function inboxApprovals(
  db: Database,
  options: { viewer?: string | undefined; limit?: number; offset?: number } = {},
): Promise<{ items: InboxApproval[]; total: number; forMe: number }> {
  const operation = 'inboxApprovals'
  const limit = pageLimit(options.limit, 50, operation)
  const offset = options.offset ?? 0
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new AuditInputError(`${operation}: offset must be a non-negative integer (got ${offset})`)
  }
  const viewer = options.viewer === undefined ? null : requireId(options.viewer, 'viewer', operation)
  const forMe = '($1::text is not null and (cardinality(approvers) = 0 or $1::text = any (approvers)))'
  const [page, counts] = await Promise.all([
    db.query<Row>(
      operation,
      `select a.*, r.goal, r.workspace
         from (select ${APPROVAL_COLUMNS}, ${forMe} as for_me from approvals where decision is null) a
         join runs r using (run_id)
        order by a.for_me desc, a.deadline, a.approval_id
        limit $2 offset $3`,
      [viewer, limit, offset],
    ),
    db.query<{ total: number; for_me: number }>(
      operation,
      `select count(*)::int as total, (count(*) filter (where ${forMe}))::int as for_me
         from approvals where decision is null`,
      [viewer],
    ),
  ])
  const [count] = counts.rows
  return {
    items: page.rows.map(record<InboxApproval>),
    total: count?.total ?? 0,
    forMe: count?.for_me ?? 0,
  }
}

/**
 * One statement (one snapshot, one round trip): each table's rows as JSON (json, never jsonb, which refuses
 * the \u0000 a model's tool call may hold) with their place in the run —
 * per step, the model's turn first, then each call's approval, policy events and command in time order
 * (a decision before a refusal at the same instant), then the gate. tether's own commands on the workspace
 * (calls -2 and below: a clone, its checkout, a cache rebuild) come first, in the order they ran.
 */
const TIMELINE = `
  select 'step' as type, to_json(s) as row, step, 0 as section, 0 as call, started_at as at, 0 as rank,
         '' as tiebreak
    from (select *, (cost_usd * 1000000)::bigint as cost from steps where run_id = $1) s
  union all
  select 'approval', (select to_json(a) from (select ${APPROVAL_COLUMNS}) a), step, 1, call, requested_at, 0, ''
    from approvals where run_id = $1
  union all
  select 'policy', to_json(p), step, 1, call, at, 1, kind || source from policy_events p where run_id = $1
  union all
  select 'exec', to_json(e), step, 1, greatest(call, -2), started_at, 2, '' from exec_results e where run_id = $1
  union all
  select 'gate', to_json(g), step, 2, 0, at, 0, kind from gate_events g where run_id = $1
  union all
  select 'workspace', json_build_object('run_id', run_id, 'step', step, 'call', call, 'kind', kind, 'root', root,
           'files', files, 'bytes', bytes, 'detail', coalesce(detail, ''), 'at', taken_at), step, 1, call, taken_at,
         0, ''
    from workspace_snapshots where run_id = $1 and kind in ('outside-edit', 'restore')
  order by step, section, call, at, rank, tiebreak`

const timelineRow = (type: TimelineEntry['type'], row: Row) =>
  type === 'exec' ? executedCommand(row) : record<object>(row)

/** A run's history in order (see TIMELINE). */
export async function runTimeline(db: Database, runId: string): Promise<TimelineEntry[]> {
  const operation = 'runTimeline'
  requireId(runId, 'runId', operation)
  const { rows } = await db.query<{ type: TimelineEntry['type']; row: Row }>(operation, TIMELINE, [runId])
  return rows.map(({ type, row }) => ({ type, ...timelineRow(type, row) }) as TimelineEntry)
}

/** The columns of a run's row (`runs` as `table`), its spend in micro-dollars among them (`runCost`). */
const runColumns = (table: string) => `${table}.run_id, goal, workspace, status, outcome, reason, task_queue,
  parent_run_id, sandbox, policy_digest, floor, build_id, started_at, ${table}.finished_at, ${runCost(table)}`

/** A run's spend in micro-dollars: its total once finished, else the sum of its steps so far. */
const runCost = (table: string) =>
  `(coalesce(${table}.cost_usd, (select sum(s.cost_usd) from steps s where s.run_id = ${table}.run_id))
     * 1000000)::bigint as cost`

const ANSWER_CHANNELS: ReadonlySet<string> = new Set(decisionChannels)

/**
 * Whether a timeline entry says something no other entry says, for a timeline a person reads. Left out: the
 * policy record of an approval's answer (the approval's own entry shows who answered, how, and what was
 * remembered) and the gate's output record (the gate command's entry shows its status and size; the
 * output is in "what ran").
 */
export function tellsSomethingNew(entry: TimelineEntry): boolean {
  if (entry.type === 'policy') return !(entry.kind === 'decision' && ANSWER_CHANNELS.has(entry.source))
  if (entry.type === 'gate') return entry.kind !== 'gate_output'
  return true
}

/**
 * The contract and policy a run was started with, as recorded (the run's own policy, and the digest of the
 * effective one when it has one); undefined for an unknown run.
 */
export async function runConfig(
  db: Database,
  runId: string,
): Promise<{ contract: unknown; policy: unknown; policyDigest?: string | undefined } | undefined> {
  const operation = 'runConfig'
  requireId(runId, 'runId', operation)
  const { rows } = await db.query<{ contract: unknown; policy: unknown; policy_digest: string | null }>(
    operation,
    'select contract, policy, policy_digest from runs where run_id = $1',
    [runId],
  )
  const row = rows[0]
  if (!row) return undefined
  return {
    contract: row.contract,
    policy: row.policy,
    ...(row.policy_digest ? { policyDigest: row.policy_digest } : {}),
  }
}

/**
 * A policy's spec by its digest, as stored (the caller checks that it still matches it): an effective one
 * (`policies`), or a run's own stored by reference (`run_policies`).
 */
export async function policyByDigest(
  db: Database,
  digest: string,
  table: 'policies' | 'run_policies' = 'policies',
): Promise<unknown> {
  const operation = table === 'policies' ? 'policyByDigest' : 'runPolicyByDigest'
  requireId(digest, 'digest', operation)
  const { rows } = await db.query<{ spec: unknown }>(
    operation,
    `select spec from ${table} where digest = $1`,
    [digest],
  )
  return rows[0]?.spec
}

/**
 * A run's outcome, steps, tokens and duration, with counts of its refusals, commands and open approvals.
 * A finished run's counts come from its row (COALESCE evaluates the step sums only while it runs).
 */
export async function runSummary(db: Database, runId: string): Promise<RunSummary | undefined> {
  const operation = 'runSummary'
  requireId(runId, 'runId', operation)
  const { rows } = await db.query<Row>(
    operation,
    `select ${runColumns('r')},
            coalesce(r.steps, (select count(*) from steps s where s.run_id = r.run_id)) as steps,
            coalesce(r.input_tokens, (select sum(input_tokens) from steps s where s.run_id = r.run_id), 0)
              as input_tokens,
            coalesce(r.output_tokens, (select sum(output_tokens) from steps s where s.run_id = r.run_id), 0)
              as output_tokens,
            (extract(epoch from r.finished_at - r.started_at) * 1000)::bigint as duration_ms,
            (select count(*) from policy_events p where p.run_id = r.run_id and p.refused) as refusals,
            (select count(*) from exec_results e where e.run_id = r.run_id) as commands,
            (select count(*) from approvals a where a.run_id = r.run_id and a.decision is null)
              as pending_approvals
       from runs r
      where r.run_id = $1`,
    [runId],
  )
  const [row] = rows
  if (!row) return undefined
  return record<RunSummary>(row)
}

/**
 * Up to `limit` run or approval ids that start with `prefix`, in order: a person may type only the start of
 * an id (`tether audit approvals` shows eight characters). An exact id is among them when it exists.
 */
export async function idsStartingWith(
  db: Database,
  kind: 'run' | 'approval',
  prefix: string,
  limit = 10,
): Promise<string[]> {
  const operation = 'idsStartingWith'
  requireId(prefix, 'prefix', operation)
  const [table, column] = kind === 'run' ? ['runs', 'run_id'] : ['approvals', 'approval_id']
  const { rows } = await db.query<{ id: string }>(
    operation,
    `select ${column} as id from ${table} where starts_with(${column}, $1) order by ${column} limit $2`,
    [prefix, pageLimit(limit, MAX_PAGE, operation)],
  )
  return rows.map((row) => row.id)
}

/**
 * The names recorded effective policies give the approver key `publicKey` (`ed25519:…`): who a person who
 * holds that key is, as far as the runs are concerned. Usually one; none for a key on no list.
 */
export async function approverNames(db: Database, publicKey: string): Promise<string[]> {
  const operation = 'approverNames'
  requireId(publicKey, 'publicKey', operation)
  const { rows } = await db.query<{ name: string }>(
    operation,
    `select distinct a->>'name' as name
       from policies p,
            jsonb_array_elements(case when jsonb_typeof(p.spec->'approvers') = 'array'
                                      then p.spec->'approvers' else '[]'::jsonb end) a
      where jsonb_typeof(a) = 'object' and a->'keys' ? $1
      order by 1 limit 10`,
    [publicKey],
  )
  return rows.map((row) => row.name)
}

const WAITING = 'exists (select 1 from approvals a where a.run_id = runs.run_id and a.decision is null)'

/** The runs on a task queue the audit holds as running, by run id, paged by `after`: what a worker checks against Temporal. */
export async function runningRuns(
  db: Database,
  options: { taskQueue: string; limit?: number; after?: string },
): Promise<
  Array<{
    runId: string
    executionId?: string | undefined
    waiting: boolean
    namespace?: string | undefined
    startedAt: Date
    /** Its folder, or the source it was laid out from (`git URL at ref`, `run ID at step N`). */
    workspace: string
  }>
> {
  const operation = 'runningRuns'
  const { rows } = await db.query<{
    run_id: string
    execution_id: string | null
    waiting: boolean
    namespace: string | null
    started_at: Date
    workspace: string
  }>(
    operation,
    `select run_id, execution_id, ${WAITING} as waiting, namespace, started_at, workspace from runs
      where status = 'running' and task_queue = $1 and ($3::text is null or run_id > $3)
      order by run_id limit $2`,
    [
      requireId(options.taskQueue, 'taskQueue', operation),
      pageLimit(options.limit, MAX_PAGE, operation),
      options.after === undefined ? null : requireId(options.after, 'after', operation),
    ],
  )
  return rows.map((row) => ({
    runId: row.run_id,
    ...(row.execution_id ? { executionId: row.execution_id } : {}),
    waiting: row.waiting,
    ...(row.namespace ? { namespace: row.namespace } : {}),
    startedAt: row.started_at,
    workspace: row.workspace,
  }))
}

/**
 * Runs, newest first, optionally only those still running or finished, with one outcome, or waiting for
 * an approval (`waiting`: true) or not (false); paged by `before`. Each says whether it is waiting.
 */
export async function listRuns(
  db: Database,
  options: { limit?: number; status?: RunStatus; outcome?: string; waiting?: boolean; before?: string } = {},
): Promise<Page<RunRow & { waiting: boolean }>> {
  const operation = 'listRuns'
  const conditions = new Conditions()
  if (options.status !== undefined) {
    if (options.status !== 'running' && options.status !== 'finished') {
      throw new AuditInputError(
        `${operation}: status must be 'running' or 'finished' (got '${options.status}')`,
      )
    }
    conditions.clauses.push(`status = ${conditions.param(options.status)}`)
  }
  if (options.outcome !== undefined) {
    conditions.clauses.push(`outcome = ${conditions.param(requireId(options.outcome, 'outcome', operation))}`)
  }
  if (options.waiting !== undefined) conditions.clauses.push(options.waiting ? WAITING : `not ${WAITING}`)
  return keysetPage(db, operation, {
    columns: `${runColumns('runs')}, ${WAITING} as waiting`,
    table: 'runs',
    conditions,
    time: 'started_at',
    tiebreak: { column: 'run_id', type: 'text' },
    before: options.before,
    limit: pageLimit(options.limit, 100, operation),
    map: record<RunRow & { waiting: boolean }>,
  })
}

export interface StoredMessage {
  seq: number
  /** The message's `role`, when it has one. */
  role?: string | undefined
  /** The message exactly as appended. */
  content: unknown
}

/** A window of a transcript: it starts at a sequence number from 0 and, when bounded, holds one or more. */
function requireWindow(operation: string, fromSeq: number, limit: number | undefined): void {
  if (!Number.isInteger(fromSeq) || fromSeq < 0) {
    throw new AuditInputError(`${operation}: fromSeq must be a non-negative integer (got ${fromSeq})`)
  }
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    throw new AuditInputError(`${operation}: limit must be a positive integer (got ${limit})`)
  }
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
  requireWindow(operation, fromSeq, options.limit)
  const { rows } = await db.query<{ seq: number; role: string | null; content: unknown }>(
    operation,
    'select seq, role, content from messages where run_id = $1 and seq >= $2 order by seq limit $3',
    [runId, fromSeq, options.limit ?? null],
  )
  // Not record(): a message may itself be JSON null, which must come back as null.
  return rows.map(({ seq, role, content }) => ({ seq, role: role ?? undefined, content }))
}

/** A run's messages from a sequence number on, and a mark of the messages before them. */
export interface MessageTail {
  /**
   * The messages before `fromSeq`: how many there are, and their attempts summed. A message is only ever
   * replaced by a later attempt of the activity that wrote it, so a reader that kept those messages knows
   * them unchanged while both figures are what it counted.
   */
  before: { count: number; attempts: number }
  /** The messages from `fromSeq` on, with their attempt and the length of their content in bytes (as text). */
  messages: Array<StoredMessage & { attempt: number; bytes: number }>
}

/** Messages `fromSeq` … `fromSeq + limit − 1` of a run, and the mark of those before, in one round trip. */
export async function messageTail(
  db: Database,
  runId: string,
  fromSeq: number,
  limit: number,
): Promise<MessageTail> {
  const operation = 'messageTail'
  requireId(runId, 'runId', operation)
  requireWindow(operation, fromSeq, limit)
  const { rows } = await db.query<{
    count: number
    attempts: number
    seq: number | null
    role: string | null
    content: unknown
    attempt: number | null
    bytes: number | null
  }>(
    operation,
    `with before as (
       select count(*)::int as count, coalesce(sum(attempt), 0)::float8 as attempts
         from messages where run_id = $1 and seq < $2),
     tail as (
       select seq, role, content, attempt, octet_length(content::text) as bytes
         from messages where run_id = $1 and seq >= $2 order by seq limit $3)
     select before.count, before.attempts, tail.seq, tail.role, tail.content, tail.attempt, tail.bytes
       from before left join tail on true order by tail.seq`,
    [runId, fromSeq, limit],
  )
  const [first] = rows
  return {
    before: { count: first?.count ?? 0, attempts: first?.attempts ?? 0 },
    messages: rows.flatMap(({ seq, role, content, attempt, bytes }) =>
      seq === null
        ? []
        : [{ seq, role: role ?? undefined, content, attempt: attempt ?? 1, bytes: bytes ?? 0 }],
    ),
  }
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

/** A run's audit rows as stored: each table's rows with their column names, as `to_json` gives them. */
export interface StoredRunRows {
  runs: Row[]
  steps: Row[]
  policy_events: Row[]
  exec_results: Row[]
  approvals: Row[]
  approval_answers: Row[]
  /** The effective policies stored under `digests` (those the run's history names). */
  policies: Row[]
}

/**
 * Every row of one run that history determines, and the policies stored under `digests`, in one snapshot:
 * what `tether audit verify` compares with the run's Temporal history.
 */
export async function runRows(
  db: Database,
  runId: string,
  digests: readonly string[],
): Promise<StoredRunRows> {
  const operation = 'runRows'
  requireId(runId, 'runId', operation)
  const { rows } = await db.query<{ kind: keyof StoredRunRows; row: Row }>(
    operation,
    `select 'runs' as kind, to_json(t) as row from runs t where run_id = $1
     union all select 'steps', to_json(t) from steps t where run_id = $1
     union all select 'policy_events', to_json(t) from policy_events t where run_id = $1
     union all select 'exec_results', to_json(t) from exec_results t where run_id = $1 and kind <> 'workspace'
     union all select 'approvals', to_json(t) from approvals t where run_id = $1
     union all select 'approval_answers', to_json(w)
                 from approval_answers w join approvals a using (approval_id) where a.run_id = $1
     union all select 'policies', json_build_object('digest', digest, 'spec', spec)
                 from policies where digest = any ($2::text[])`,
    [runId, [...digests]],
  )
  const stored: StoredRunRows = {
    runs: [],
    steps: [],
    policy_events: [],
    exec_results: [],
    approvals: [],
    approval_answers: [],
    policies: [],
  }
  for (const { kind, row } of rows) stored[kind].push(row)
  return stored
}
