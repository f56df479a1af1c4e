/**
 * What the writers accept, as zod schemas: the types callers see are derived from them, and a bad value is
 * rejected with an AuditInputError naming the field before anything reaches the database. Free text is
 * bounded (see text.ts); JSON payloads are serialised here once, so the stored bytes are the same on every
 * replay of the same write.
 */
import { z } from 'zod'
import { microsToUsd } from '../run/index.js'
import { AuditInputError } from './errors.js'
import { boundedText } from './text.js'

/** Longest read/write target accepted: a path, never file contents (PATH_MAX on Linux). */
export const PATH_TARGET_LIMIT = 4096

export const id = z.string().min(1, 'must not be empty').max(512)
export const index = z.number().int().min(0)
export const count = z.number().int().min(0)
export const text = z.string().transform((value) => boundedText(value))

/**
 * Workflow time, as a Date or the ISO string a Date becomes when it crosses an activity boundary. Callers
 * pass it (never the database's clock), so a replayed write is byte-identical.
 */
export const timestamp = z
  .union([z.date(), z.iso.datetime({ offset: true })], 'expected a Date or an ISO-8601 timestamp')
  .transform((value) => (value instanceof Date ? value : new Date(value)))

function serialise(value: unknown, ctx: z.RefinementCtx): string {
  let serialised: string | undefined
  try {
    serialised = JSON.stringify(value)
  } catch (error) {
    ctx.issues.push({
      code: 'custom',
      message: `not serialisable (${(error as Error).message})`,
      input: value,
    })
    return z.NEVER
  }
  if (serialised === undefined) {
    ctx.issues.push({ code: 'custom', message: 'expected a JSON value', input: value })
    return z.NEVER
  }
  return serialised
}

/** Any JSON value, serialised once; stored in a `json` column, which keeps the text exactly. */
const json = z.unknown().transform(serialise)

import {
  approvalActs,
  approvalDecisions,
  decisionChannels,
  effects,
  execStatuses,
  gateKinds,
} from './vocabulary.js'

export {
  type Act,
  type ApprovalAct,
  type ApprovalDecision,
  acts,
  approvalActs,
  approvalDecisions,
  type DecisionChannel,
  decisionChannels,
  type Effect,
  type ExecStatus,
  effects,
  execStatuses,
  type GateKind,
  gateKinds,
  type PolicyEventSource,
} from './vocabulary.js'

export const runStarted = z.object({
  runId: id,
  goal: text,
  workspace: text,
  contract: json,
  policy: json,
  taskQueue: id.optional(),
  parentRunId: id.optional(),
  /** The sandbox mode of the run's effective policy. */
  sandbox: z.enum(['enforce', 'off']).optional(),
  /** The effective policy (the worker's floor with the run's policy on it): its digest and spec. */
  effective: z
    .object({ digest: z.string().regex(/^[0-9a-f]{64}$/, 'must be a hex SHA-256'), spec: json })
    .optional(),
  /** Where the floor came from: its file, or `built-in`. */
  floor: text.optional(),
  /** The Worker Deployment build the run started on. */
  buildId: id.optional(),
  /** Temporal's first run id of this execution chain: what the run id belongs to. */
  executionId: id.optional(),
  /** The Temporal namespace the run's workflow runs in, as its worker saw it. */
  namespace: id.optional(),
  startedAt: timestamp,
})

/** Micro-dollars, stored as decimal US dollars (`numeric`, exact to the micro-dollar). */
const usd = count.transform((micros) => microsToUsd(micros))

export const runFinished = z.object({
  runId: id,
  /** When given, only the execution that started the run may finish it. */
  executionId: id.optional(),
  outcome: z.string().min(1).max(200),
  reason: text.optional(),
  steps: count,
  inputTokens: count,
  outputTokens: count,
  /** What the run's priced model turns cost, in micro-dollars. */
  cost: usd.optional(),
  finishedAt: timestamp,
})

const toolCall = z.looseObject({ id: z.string(), name: z.string(), args: z.unknown() })

export const step = z.object({
  runId: id,
  step: index,
  /** The calls exactly as the model asked for them (argv included), stored verbatim as JSON. */
  toolCalls: z.array(toolCall).transform(serialise),
  decision: text,
  observation: text,
  inputTokens: count,
  outputTokens: count,
  /** Prompt-cache reads, part of `inputTokens`. */
  cachedInputTokens: count.optional(),
  /** The model asked (a provider id), and what the turn cost in micro-dollars when it had a price. */
  model: text.optional(),
  cost: usd.optional(),
  startedAt: timestamp,
  finishedAt: timestamp,
})

export const policyEvent = z
  .object({
    runId: id,
    step: index,
    /** The call's index in its step; -1 for the run itself (a budget approval's decision). */
    call: z.number().int().min(-1),
    act: z.enum(approvalActs),
    target: text,
    effect: z.enum(effects),
    rule: text.optional(),
    layer: text.optional(),
    kind: z.enum(['refusal', 'decision']),
    decidedBy: text.optional(),
    reason: text,
    source: z.string().min(1).max(200),
    /** The judged command tree (ExecVerdict.checks); targets only, never payloads. */
    checks: json.optional(),
    at: timestamp,
  })
  // A file act names a path; a longer target is a payload passed by mistake (or a model's attack on the
  // record). It is kept bounded — head and tail — so the refusal is still recorded and the run goes on.
  .transform((event) =>
    (event.act === 'read' || event.act === 'write') && event.target.length > PATH_TARGET_LIMIT
      ? { ...event, target: boundedText(event.target, PATH_TARGET_LIMIT) }
      : event,
  )

/** A batch of policy events, as `recordPolicyEvents` takes them. */
export const policyEvents = policyEvent.array()

const streamCapture = z.object({
  text,
  elided: count,
  bytes: count,
  lines: count,
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected a lowercase hex sha256'),
})

export const execResult = z
  .object({
    runId: id,
    step: index,
    /** The call's index in its step; -1 for the verification gate. */
    call: z.number().int().min(-4),
    argv: z.array(z.string().transform((arg) => boundedText(arg))).min(1, 'argv needs at least the program'),
    cwd: text,
    status: z.enum(execStatuses),
    exitCode: z.number().int().optional(),
    signal: z.string().max(64).optional(),
    durationMs: count,
    stdout: streamCapture,
    stderr: streamCapture,
    startedAt: timestamp,
    finishedAt: timestamp,
    /** The activity attempt that produced this result (1-based); a higher attempt replaces a lower one. */
    attempt: z.number().int().min(1).default(1),
    /** Sandbox facts (variable names passed, limits, the limit hit, network destinations); absent when off. */
    sandbox: json.optional(),
    /**
     * `gate` for the verification command (recorded as call -1 of its step); `workspace` for a command tether
     * itself runs on the workspace (a source's clone, a cache's rebuild: calls below -1).
     */
    kind: z.enum(['tool', 'gate', 'workspace']).default('tool'),
  })
  .refine((result) => (result.call === -1) === (result.kind === 'gate'), {
    message: 'the gate is call -1 of its step, and only the gate is',
    path: ['call'],
  })
  .refine((result) => result.call < -1 === (result.kind === 'workspace'), {
    message: "tether's own workspace commands are the calls below -1 of their step, and only they are",
    path: ['call'],
  })

export const gateEvent = z.object({
  runId: id,
  step: index,
  kind: z.enum(gateKinds),
  detail: text,
  at: timestamp,
})

export const approvalRequested = z.object({
  approvalId: id,
  runId: id,
  step: index,
  /** The call's index in its step; -1 for a budget approval. */
  call: z.number().int().min(-1),
  act: z.enum(approvalActs),
  target: text,
  /** The judged command tree the approver is shown. */
  tree: json,
  rule: text.optional(),
  layer: text.optional(),
  requestedAt: timestamp,
  deadline: timestamp,
  /** Who may answer; empty means anyone. */
  approvers: z.array(z.string().min(1)).default([]),
  /** SHA-256 of the judged action (what a signed answer covers). */
  actionDigest: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
  /** Distinct approvers needed. */
  approvalsRequired: z.number().int().min(1).max(10).default(1),
  /** What "remember" was offered before anyone answered: `{ exact, wider? }` or `{ refused }`. */
  rememberOffer: json.optional(),
  identity: z.enum(['signed', 'unsigned']).optional(),
})

const answer = z.object({
  approver: z.string().min(1).max(200),
  decision: z.enum(['approve', 'deny']),
  channel: z.enum(['update', 'signal']),
  answeredAt: timestamp,
  reason: text.optional(),
  remember: text.optional(),
  signed: z
    .object({
      key: z.string().min(1).max(200),
      fingerprint: z.string().min(1).max(200),
      signature: z.string().min(1).max(200),
      statement: json,
    })
    .optional(),
})

export const approvalDecision = z.object({
  approvalId: id,
  decision: z.enum(approvalDecisions),
  decidedBy: z.string().min(1).max(512),
  channel: z.enum(decisionChannels),
  decidedAt: timestamp,
  reason: text.optional(),
  /** The rule pattern added to the run's `remembered` layer, when the approver chose to remember. */
  remember: text.optional(),
  /** The edited command (argv) approved instead of the asked one. */
  replacement: z.array(z.string()).min(1).optional(),
  /** A budget approval: the cost cap approved, as signed (`"50 USD"`). */
  raiseTo: z.string().min(1).max(40).optional(),
  /** Every answer that counted, with its signature when signed. */
  answers: z.array(answer).default([]),
})

/** A transcript message: stored verbatim as JSON, its `role` (when it has one) copied out for SQL readers. */
const message = z.unknown().transform((value, ctx) => {
  const role = (value as { role?: unknown } | null)?.role
  return { role: typeof role === 'string' ? role : null, content: serialise(value, ctx) }
})

export const messages = z.object({
  runId: id,
  fromSeq: index,
  messages: z.array(message),
  /** The writing activity's attempt (1-based); a higher attempt replaces a message a lower one stored. */
  attempt: z.number().int().min(1).default(1),
})

export type RunStarted = z.input<typeof runStarted>
export type RunFinished = z.input<typeof runFinished>
export type StepRecord = z.input<typeof step>
export type PolicyEvent = z.input<typeof policyEvent>
/** A policy event as parsed, ready for its row. */
export type PolicyEventRow = z.output<typeof policyEvent>
export type ExecResultRecord = z.input<typeof execResult>
export type GateEvent = z.input<typeof gateEvent>
export type ApprovalRequest = z.input<typeof approvalRequested>
export type ApprovalDecisionRecord = z.input<typeof approvalDecision>
/** Workflow time as a writer accepts it. */
export type Timestamp = Date | string

/** Validates `value` for `operation`; the error names the first bad field. */
export function parse<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  operation: string,
): z.output<Schema> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  const issue = result.error.issues[0]
  const field = issue?.path.length ? issue.path.join('.') : 'input'
  throw new AuditInputError(`${operation}: ${field}: ${issue?.message ?? 'invalid'}`)
}
