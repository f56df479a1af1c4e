/**
 * The audit checked against something it does not control: a run's Temporal history. Pure: given what the
 * workflow did in each execution of the run (the activity calls replaying its history shows, history.ts)
 * and the run's rows as the database holds them, it works out the rows the projections wrote for those
 * calls (records.ts, the same mapping the activities use) and reports every row that was deleted (history
 * has it, the database does not), added (the database has it, history does not) or edited (a column
 * differs), naming the table, the row and the column.
 *
 * Answers are proven again too, trusting no row: who could answer and how comes from the run's preparation
 * in history (and the effective policy stored under the digest history names must still hash to it), and
 * each answer the database holds is checked against the approval history requested (verify.ts).
 *
 * Covered: runs, steps, policy_events, exec_results (which command, its status and exit code), approvals,
 * approval_answers, and the policies history names. Not covered, because history does not hold them:
 * command output and durations, the transcript (messages), gate_events and exec_attempts, and what the
 * worker records of the workspace itself (workspace_snapshots, and exec_results of kind `workspace`).
 */

import { canonicalJson } from '../identity/index.js'
import { Policy, PolicyError } from '../policy/index.js'
import {
  type ApprovedCall,
  approvedDecision,
  type GateSummary,
  type RunPreparation,
  type TaskContract,
  type TetherActivities,
  type ToolSummary,
  workspaceOf,
} from '../run/index.js'
import * as input from './inputs.js'
import type { ApprovalAnswerRow, StoredRunRows } from './queries.js'
import * as records from './records.js'
import { boundedText } from './text.js'
import { type AnswerCheck, type AnsweredApproval, type AnswerIdentity, checkAnswer } from './verify.js'

/** The tables compared with history. */
/** One activity call of the workflow, as the replay saw it. */
export interface ReplayedCall {
  type: string
  local: boolean
  input: unknown
  /** How it ended: `completed` (with `result`), `failed`, or `open` (still running when history ends). */
  state: 'completed' | 'failed' | 'open'
  result?: unknown
}

/** One execution of a run's chain, with the calls its workflow made, in order. */
export interface ReplayedExecution {
  /** Temporal's run id of this execution. */
  runId: string
  /** The chain's first execution (what the audit's `runs.execution_id` names). */
  firstExecutionRunId: string
  /** The task queue it ran on, from history (a replay runs on a queue of its own). */
  taskQueue?: string | undefined
  calls: ReplayedCall[]
  /** Temporal closed it (terminated, timed out) without the workflow finishing the run itself. */
  closedBy?: 'terminated' | 'timed-out' | undefined
}

export const ANCHORED_TABLES = [
  'runs',
  'policies',
  'steps',
  'policy_events',
  'exec_results',
  'approvals',
  'approval_answers',
] as const
export type AnchoredTable = (typeof ANCHORED_TABLES)[number]

/** One row that does not match history. */
export interface Finding {
  table: AnchoredTable
  /** The row: `step 3`, `step 1 call 0`, an approval id, `<approval id> <approver>`, … */
  key: string
  /**
   * `deleted`: history has the row, the database does not; `added`: the reverse; `edited`: `column` differs;
   * `failed`: an answer's proof does not hold.
   */
  problem: 'deleted' | 'added' | 'edited' | 'failed'
  column?: string
  /** The column's value in the database and in history (`edited`). */
  database?: unknown
  history?: unknown
  /** One line for a person. */
  detail: string
}

/** An answer the database holds, and how its proof checks against history. */
export interface AnchoredAnswer {
  approvalId: string
  approver: string
  check: AnswerCheck
}

export interface AnchorReport {
  runId: string
  /** Temporal's run ids of the executions compared, first to last. */
  executions: string[]
  /** Rows of each table that history determines and were compared. */
  checked: Record<AnchoredTable, number>
  findings: Finding[]
  /** Every answer the database holds for the run, checked against history. */
  answers: AnchoredAnswer[]
}

type Row = Record<string, unknown>
type Input<Name extends keyof TetherActivities> = Parameters<TetherActivities[Name]>[0]

/** JSON columns: compared as values, whatever their spelling. */
const JSON_COLUMNS = new Set([
  'contract',
  'policy',
  'tool_calls',
  'checks',
  'tree',
  'remember_offer',
  'statement',
])
const TIME_COLUMNS = new Set([
  'at',
  'started_at',
  'finished_at',
  'requested_at',
  'deadline',
  'decided_at',
  'answered_at',
])
const EXEC_STATUSES = new Set<string>(input.execStatuses)
/** Decimal columns (dollars): compared as numbers, however the database spells them. */
const DECIMAL_COLUMNS = new Set(['cost_usd'])

const RUN_START = [
  'goal',
  'workspace',
  'contract',
  'policy',
  'task_queue',
  'parent_run_id',
  'build_id',
  'started_at',
]
const RUN_FINISH = [
  'status',
  'outcome',
  'reason',
  'steps',
  'input_tokens',
  'output_tokens',
  'cost_usd',
  'finished_at',
]
const STEP = [
  'tool_calls',
  'decision',
  'observation',
  'input_tokens',
  'output_tokens',
  'cached_input_tokens',
  'model',
  'cost_usd',
  'started_at',
  'finished_at',
]
const POLICY_EVENT = ['act', 'target', 'effect', 'rule', 'layer', 'decided_by', 'reason', 'checks', 'at']
const REQUEST = [
  'run_id',
  'step',
  'call',
  'act',
  'target',
  'tree',
  'rule',
  'layer',
  'approvers',
  'requested_at',
  'deadline',
  'action_digest',
  'approvals_required',
  'remember_offer',
  'identity',
]
const DECISION = [
  'decision',
  'decided_by',
  'channel',
  'decided_at',
  'reason',
  'remember',
  'replacement',
  'raise_to',
]
const ANSWER = ['decision', 'channel', 'answered_at', 'reason', 'remember']

/** A row history determines: the columns to compare (absent = not known), and whether it must exist. */
interface Expected {
  columns: Row
  required: boolean
}

/** The rows history determines, per table and key, written as the writers write them. */
class Expectations {
  readonly tables = new Map<AnchoredTable, Map<string, Expected>>(ANCHORED_TABLES.map((t) => [t, new Map()]))

  /** An insert that does nothing when the row exists: the first write of a key stands. */
  insert(table: AnchoredTable, key: string, columns: Row, required: boolean): void {
    const rows = this.table(table)
    const existing = rows.get(key)
    if (existing) existing.required ||= required
    else rows.set(key, { columns, required })
  }

  get(table: AnchoredTable, key: string): Expected | undefined {
    return this.table(table).get(key)
  }

  table(table: AnchoredTable): Map<string, Expected> {
    return this.tables.get(table) as Map<string, Expected>
  }
}

/** What history says about one approval: its request, the identity it was asked under, its decision. */
interface HistoryApproval {
  request: Input<'tetherApprovalRequested'>['request']
  identity: AnswerIdentity
  decided?: { input: Input<'tetherApprovalDecided'>; settled: boolean }
}

/** `columns` of a parsed writer input, NULL for an absent field, JSON columns as values. */
function pick(parsed: Record<string, unknown>, columns: readonly string[]): Row {
  const row: Row = {}
  for (const column of columns) {
    // Costs are written as micro-dollars (`cost`) and stored as dollars (`cost_usd`).
    const field =
      column === 'cost_usd'
        ? 'cost'
        : column.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase())
    const value = parsed[field]
    row[column] =
      value === undefined
        ? null
        : JSON_COLUMNS.has(column) && typeof value === 'string'
          ? JSON.parse(value)
          : value
  }
  return row
}

function parsed<Schema extends Parameters<typeof input.parse>[0]>(schema: Schema, value: unknown) {
  return input.parse(schema, value, 'verify') as Record<string, unknown>
}

/** A refused answer's event source without the per-worker count that keeps two at one instant apart. */
const REJECTED = /^(\w+-rejected:-?\d+:)(\d+)$/

function policyEventKey(step: unknown, call: unknown, kind: unknown, source: string): string {
  return `step ${step} call ${call} ${kind} ${source}`
}

function execKey(step: unknown, call: unknown): string {
  return call === -1 ? `step ${step} gate` : `step ${step} call ${call}`
}

/** Each stored row of a run by the key history gives it. */
function storedKeys(rows: StoredRunRows): Map<AnchoredTable, Map<string, Row>> {
  const keyed = new Map<AnchoredTable, Map<string, Row>>(ANCHORED_TABLES.map((t) => [t, new Map()]))
  const put = (table: AnchoredTable, key: string, row: Row) => keyed.get(table)?.set(key, row)
  for (const row of rows.runs) put('runs', String(row.run_id), row)
  for (const row of rows.policies) put('policies', String(row.digest), row)
  for (const row of rows.steps) put('steps', `step ${row.step}`, row)
  for (const row of rows.exec_results) put('exec_results', execKey(row.step, row.call), row)
  for (const row of rows.approvals) put('approvals', String(row.approval_id), row)
  for (const row of rows.approval_answers) put('approval_answers', `${row.approval_id} ${row.approver}`, row)
  // Refused answers: numbered in the order their worker counted them, per step and instant.
  const rejected = new Map<string, Row[]>()
  for (const row of rows.policy_events) {
    const match = REJECTED.exec(String(row.source))
    if (!match) {
      put('policy_events', policyEventKey(row.step, row.call, row.kind, String(row.source)), row)
      continue
    }
    const prefix = policyEventKey(row.step, row.call, row.kind, match[1] as string)
    rejected.set(prefix, [...(rejected.get(prefix) ?? []), row])
  }
  for (const [prefix, group] of rejected) {
    const count = (row: Row) => Number(REJECTED.exec(String(row.source))?.[2])
    group.sort((a, b) => count(a) - count(b))
    group.forEach((row, index) => {
      put('policy_events', `${prefix}#${index + 1}`, row)
    })
  }
  return keyed
}

/** A value in the form compared: times as milliseconds, everything else as canonical JSON. */
function comparable(column: string, value: unknown): string {
  if (value === null || value === undefined) return 'null'
  if (DECIMAL_COLUMNS.has(column)) return String(Number(value))
  if (TIME_COLUMNS.has(column)) {
    const ms =
      value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number(value)
    return String(ms)
  }
  return canonicalJson(value)
}

/** A value as a person reads it in a finding. */
function shown(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : (value ?? null)
}

function identityOf(preparation: RunPreparation | undefined): AnswerIdentity {
  // Runs recorded before identity existed trusted the names their policy listed (as the workflow does).
  return (
    preparation?.identity ?? {
      mode: 'unsigned',
      approvers: (preparation?.approvers ?? []).map((name) => ({ name, keys: [] })),
    }
  )
}

/**
 * A start by reference names the run's own policy by digest: the row must hold a spec that hashes to it (the
 * reference itself when the spec was not readable, as the activity records a rejected run), else it was edited.
 */
function ownPolicyOf(start: Input<'tetherStartRun'>, rows: StoredRunRows): Input<'tetherStartRun'> {
  const ref = start.policyRef
  if (start.policy !== undefined || ref === undefined) return start
  const stored = rows.runs.find((row) => row.run_id === start.runId)?.policy
  let hashes = false
  try {
    hashes = Policy.fromSpec(stored).digest === ref
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error
  }
  return { ...start, policy: hashes ? stored : records.policyReference(ref) }
}

/** The effective policy stored under `digest`, when it still hashes to it. */
function storedPolicy(
  rows: StoredRunRows,
  digest: string,
): { policy: Policy } | { finding: Omit<Finding, 'table' | 'key'> } {
  const row = rows.policies.find((p) => p.digest === digest)
  if (!row) {
    return {
      finding: {
        problem: 'deleted',
        detail: 'history names this effective policy, but the policies table does not hold it',
      },
    }
  }
  try {
    const policy = Policy.fromSpec(row.spec)
    if (policy.digest === digest) return { policy }
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error
  }
  return {
    finding: {
      problem: 'edited',
      column: 'spec',
      detail: 'the spec stored under this digest no longer hashes to it: the policy was edited',
    },
  }
}

/** An answer from history in the shape of its row. */
function answerRow(
  approvalId: string,
  answer: NonNullable<input.ApprovalDecisionRecord['answers']>[number],
): ApprovalAnswerRow {
  return {
    approvalId,
    approver: answer.approver,
    decision: answer.decision,
    channel: answer.channel,
    answeredAt: new Date(answer.answeredAt),
    reason: answer.reason,
    remember: answer.remember,
    keyFingerprint: answer.signed?.fingerprint,
    publicKey: answer.signed?.key,
    signature: answer.signed?.signature,
    statement: answer.signed?.statement,
  }
}

/** A stored answer row as `checkAnswer` reads it. */
function storedAnswer(row: Row): ApprovalAnswerRow {
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
  return {
    approvalId: String(row.approval_id),
    approver: String(row.approver),
    decision: row.decision as ApprovalAnswerRow['decision'],
    channel: row.channel as ApprovalAnswerRow['channel'],
    answeredAt: new Date(String(row.answered_at)),
    reason: text(row.reason),
    remember: text(row.remember),
    keyFingerprint: text(row.key_fingerprint),
    publicKey: text(row.public_key),
    signature: text(row.signature),
    statement: row.statement ?? undefined,
  }
}

/** The approval an answer answered, as history requested it. */
function answeredApproval(runId: string, approval: HistoryApproval): AnsweredApproval {
  const { request } = approval
  return {
    runId,
    approvalId: request.approvalId,
    act: request.act,
    target: request.target,
    tree: request.tree,
    requestedAt: new Date(request.requestedAt),
    deadline: new Date(request.deadline),
    replacement: approval.decided?.input.resolution.replacement,
    raiseTo: approval.decided?.input.resolution.raiseTo,
    identity: request.identity,
  }
}

/** The same approval as the database holds it (one history never requested). */
function storedApproval(row: Row): AnsweredApproval {
  return {
    runId: String(row.run_id),
    approvalId: String(row.approval_id),
    act: row.act as AnsweredApproval['act'],
    target: String(row.target),
    tree: row.tree,
    requestedAt: new Date(String(row.requested_at)),
    deadline: new Date(String(row.deadline)),
    replacement: (row.replacement as string[] | null) ?? undefined,
    raiseTo: (row.raise_to as string | null) ?? undefined,
    identity: (row.identity as AnsweredApproval['identity']) ?? undefined,
  }
}

/**
 * Compares a run's stored rows with what its history proves (see the module comment). `executions` are the
 * run's executions, first to last, as replay shows them.
 */
export function compareWithHistory(
  runId: string,
  executions: readonly ReplayedExecution[],
  rows: StoredRunRows,
): AnchorReport {
  const expected = new Expectations()
  const findings: Finding[] = []
  const approvals = new Map<string, HistoryApproval>()
  const policies = new Map<string, Policy>()
  let runIdentity: AnswerIdentity | undefined
  let finish: ReplayedCall | undefined

  const policyOf = (digest: string): Policy | undefined => {
    if (policies.has(digest)) return policies.get(digest)
    if (expected.get('policies', digest)) return undefined
    expected.insert('policies', digest, {}, true)
    const stored = storedPolicy(rows, digest)
    if ('finding' in stored) {
      findings.push({ table: 'policies', key: digest, ...stored.finding })
      return undefined
    }
    policies.set(digest, stored.policy)
    return stored.policy
  }

  /** Refused answers so far per step and instant (see storedKeys). */
  const rejected = new Map<string, number>()
  for (const execution of executions) {
    let preparation: RunPreparation | undefined
    let contract: TaskContract | undefined
    for (const call of execution.calls) {
      const settled = call.state === 'completed'
      switch (call.type) {
        case 'tetherPrepareRun': {
          contract = (call.input as Input<'tetherPrepareRun'>).contract
          if (!settled) break
          preparation = call.result as RunPreparation
          if (preparation.policyDigest) policyOf(preparation.policyDigest)
          runIdentity ??= identityOf(preparation)
          break
        }
        case 'tetherStartRun':
        case 'tetherBeginRun': {
          const start = ownPolicyOf(call.input as Input<'tetherStartRun'>, rows)
          const policy = start.policyDigest ? policyOf(start.policyDigest) : undefined
          // runs.floor (a path on the worker that started the run) is not compared.
          const record = records.runStartedRecord(start, policy ? { policy, floor: '' } : undefined)
          const columns = pick(parsed(input.runStarted, record), RUN_START)
          columns.execution_id = start.executionId ?? null
          columns.policy_digest = start.policyDigest ?? null
          // The workflow passes its own task queue, which a replay replaces with one of its own.
          if (execution.taskQueue) columns.task_queue = execution.taskQueue
          else delete columns.task_queue
          // The sandbox mode is the effective policy's: unknown when its stored spec is not the one history names.
          if (!start.policyDigest || policy) columns.sandbox = record.sandbox ?? null
          expected.insert('runs', start.runId, columns, settled)
          break
        }
        case 'tetherFinishRun':
          finish = call
          break
        case 'tetherRecordStep':
          stepRow(call.input as Input<'tetherRecordStep'>, settled)
          break
        case 'tetherModelTurn': {
          // A model turn records the step before it (judge-with-turn).
          const { previousStep } = call.input as Input<'tetherModelTurn'>
          if (previousStep) stepRow(previousStep, settled)
          break
        }
        case 'tetherApprovalRequested': {
          const { runId: run, request } = call.input as Input<'tetherApprovalRequested'>
          const columns = pick(
            parsed(input.approvalRequested, records.approvalRequestRecord(run, request)),
            REQUEST,
          )
          for (const column of DECISION) columns[column] = null
          expected.insert('approvals', request.approvalId, columns, settled)
          approvals.set(request.approvalId, { request, identity: identityOf(preparation) })
          break
        }
        case 'tetherApprovalDecided':
          firstDecision(call.input as Input<'tetherApprovalDecided'>, settled)
          break
        case 'tetherApprovalRejected': {
          const event = call.input as Input<'tetherApprovalRejected'>
          const prefix = policyEventKey(event.step, 0, 'decision', records.rejectedSourcePrefix(event))
          const count = (rejected.get(prefix) ?? 0) + 1
          rejected.set(prefix, count)
          const row = pick(parsed(input.policyEvent, records.rejectedAnswerEvent(event, count)), POLICY_EVENT)
          expected.insert('policy_events', `${prefix}#${count}`, row, settled)
          break
        }
        case 'tetherExec': {
          const exec = call.input as Input<'tetherExec'>
          decidedByTool(exec, call)
          command(exec.step, exec.call, exec.argv, exec.workspace, 'tool', call)
          break
        }
        case 'tetherFileTool':
          decidedByTool(call.input as Input<'tetherFileTool'>, call)
          break
        case 'tetherVerify': {
          const gate = call.input as Input<'tetherVerify'>
          const verification = contract?.verification
          if (verification && contract)
            command(gate.step, -1, verification.command, workspaceOf(contract), 'gate', call)
          break
        }
      }
    }
  }

  // The run's finish: recorded, in flight (unknown), or not reached (the row says it is running).
  const run = expected.get('runs', runId)
  if (run) {
    const closedBy = executions.at(-1)?.closedBy
    if (!finish && closedBy) {
      // Recorded by a worker's reconciliation from how Temporal closed it: the outcome is what history says,
      // and what still waited was cancelled then (reconcile.ts).
      Object.assign(run.columns, { status: 'finished', outcome: closedBy })
      for (const [approvalId, approval] of approvals) {
        const row = approval.decided ? undefined : expected.get('approvals', approvalId)
        if (!row) continue
        for (const column of DECISION) delete row.columns[column]
        Object.assign(row.columns, { decision: 'cancelled', decided_by: 'temporal', channel: 'cancel' })
      }
    } else if (!finish) {
      Object.assign(run.columns, {
        status: 'running',
        ...Object.fromEntries(RUN_FINISH.slice(1).map((c) => [c, null])),
      })
    } else if (finish.state === 'completed') {
      const record = records.runFinishedRecord(finish.input as Input<'tetherFinishRun'>)
      Object.assign(run.columns, {
        ...pick(parsed(input.runFinished, record), RUN_FINISH),
        status: 'finished',
      })
    }
  }

  const stored = storedKeys(rows)
  const checked = Object.fromEntries(ANCHORED_TABLES.map((t) => [t, 0])) as Record<AnchoredTable, number>
  for (const table of ANCHORED_TABLES) {
    if (table === 'policies') {
      // Checked where history names them (storedPolicy); these are the ones that held.
      checked.policies = policies.size
      continue
    }
    const have = stored.get(table) as Map<string, Row>
    for (const [key, want] of expected.table(table)) {
      const row = have.get(key)
      if (!row) {
        if (want.required) {
          findings.push({ table, key, problem: 'deleted', detail: 'in history, not in the database' })
        }
        continue
      }
      checked[table] += 1
      for (const [column, value] of Object.entries(want.columns)) {
        if (comparable(column, row[column]) === comparable(column, value)) continue
        findings.push({
          table,
          key,
          problem: 'edited',
          column,
          database: shown(row[column]),
          history: shown(value),
          detail: `${column} differs from history`,
        })
      }
    }
    for (const key of have.keys()) {
      if (!expected.get(table, key)) {
        findings.push({ table, key, problem: 'added', detail: 'in the database, not in history' })
      }
    }
  }

  // Every answer the database holds, proven against the approval history requested and the identity the
  // run's preparation recorded; one history has not heard of is checked against its own approval row.
  const answers: AnchoredAnswer[] = []
  const storedApprovals = stored.get('approvals') as Map<string, Row>
  for (const [key, row] of stored.get('approval_answers') as Map<string, Row>) {
    const answer = storedAnswer(row)
    const approval = approvals.get(answer.approvalId)
    const asked = approval
      ? answeredApproval(runId, approval)
      : storedApprovals.has(answer.approvalId)
        ? storedApproval(storedApprovals.get(answer.approvalId) as Row)
        : undefined
    const identity = approval?.identity ?? runIdentity ?? identityOf(undefined)
    const check: AnswerCheck = asked
      ? checkAnswer(asked, answer, identity)
      : { status: 'failed', reason: 'it answers an approval neither history nor the database holds' }
    answers.push({ approvalId: answer.approvalId, approver: answer.approver, check })
    if (check.status === 'failed')
      findings.push({ table: 'approval_answers', key, problem: 'failed', detail: check.reason })
  }
  // History's own answers prove themselves too: a worker that took an answer it should not have shows here.
  for (const approval of approvals.values()) {
    if (!approval.decided) continue
    const { decision } = records.approvalDecisionRecords(approval.decided.input)
    for (const answer of decision.answers ?? []) {
      const check = checkAnswer(
        answeredApproval(runId, approval),
        answerRow(decision.approvalId, answer),
        approval.identity,
      )
      if (check.status !== 'failed') continue
      findings.push({
        table: 'approval_answers',
        key: `${decision.approvalId} ${answer.approver}`,
        problem: 'failed',
        detail: `the answer history holds does not check: ${check.reason}`,
      })
    }
  }

  return { runId, executions: executions.map((e) => e.runId), checked, findings, answers }

  function stepRow(record: Input<'tetherRecordStep'>, settled: boolean) {
    const { step, refusals } = records.stepRecords(record)
    expected.insert('steps', `step ${step.step}`, pick(parsed(input.step, step), STEP), settled)
    for (const refusal of refusals) policyEvent(refusal, settled)
  }

  function policyEvent(event: input.PolicyEvent, required: boolean) {
    const row = pick(parsed(input.policyEvent, event), POLICY_EVENT)
    expected.insert(
      'policy_events',
      policyEventKey(event.step, event.call, event.kind, event.source),
      row,
      required,
    )
  }

  /** An approved call's own activity recorded its decision (and a refusal after it) before the call ran. */
  function decidedByTool(input: { runId: string; approved?: ApprovedCall | undefined }, call: ReplayedCall) {
    if (!input.approved) return
    const settled = call.state === 'completed'
    const refused = settled ? (call.result as ToolSummary | undefined)?.refused : undefined
    firstDecision(approvedDecision(input.runId, input.approved, refused), settled)
  }

  /** The first decision of an approval is the one stored. */
  function firstDecision(decidedInput: Input<'tetherApprovalDecided'>, settled: boolean) {
    const approval = approvals.get(decidedInput.request.approvalId)
    if (!approval || approval.decided) return
    approval.decided = { input: decidedInput, settled }
    decided(decidedInput, settled)
  }

  function decided(decidedInput: Input<'tetherApprovalDecided'>, settled: boolean) {
    const { decision, events } = records.approvalDecisionRecords(decidedInput)
    const row = expected.get('approvals', decision.approvalId)
    const stored = parsed(input.approvalDecision, decision)
    // A decision still being written (its local activity not in history yet) is not known.
    if (row) {
      if (settled) Object.assign(row.columns, pick(stored, DECISION))
      else for (const column of DECISION) delete row.columns[column]
    }
    for (const answer of stored.answers as Array<Record<string, unknown>>) {
      const signed = answer.signed as Record<string, unknown> | undefined
      const columns = {
        ...pick(answer, ANSWER),
        key_fingerprint: signed?.fingerprint ?? null,
        public_key: signed?.key ?? null,
        signature: signed?.signature ?? null,
        statement: typeof signed?.statement === 'string' ? JSON.parse(signed.statement) : null,
      }
      expected.insert('approval_answers', `${decision.approvalId} ${answer.approver}`, columns, settled)
    }
    for (const event of events) policyEvent(event, settled)
  }

  function command(
    step: number,
    call: number,
    argv: readonly string[],
    cwd: string,
    kind: 'tool' | 'gate',
    activity: ReplayedCall,
  ) {
    const summary =
      activity.state === 'completed' ? (activity.result as ToolSummary | GateSummary | undefined) : undefined
    // Refused before it ran (or the gate not allowed): no row.
    if (summary?.status === 'refused') return
    const columns: Row = { argv: argv.map((arg) => boundedText(arg)), cwd: boundedText(cwd), kind }
    let required = false
    if (summary?.status !== undefined && EXEC_STATUSES.has(summary.status)) {
      columns.status = summary.status
      columns.exit_code = summary.exitCode ?? null
      required = true
    } else if (summary && summary.status === undefined) {
      // Recorded by an earlier attempt that died before reporting: the row is that attempt's.
      required = true
    } else if (summary?.status === 'interrupted') {
      // Cut off and not run again (noRetry): its row says so (runs recorded before had none).
      columns.status = 'unknown'
    }
    expected.insert('exec_results', execKey(step, call), columns, required)
  }
}
