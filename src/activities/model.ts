/**
 * The model activity: stores what the workflow observed since the last turn, loads the transcript from
 * Postgres, calls the provider, validates and stores the reply, and returns only the tool calls (bounded)
 * and usage — so Temporal history grows by a few hundred bytes per turn, not by the transcript, and no
 * reply, however large or malformed, can exceed a payload limit.
 */

import { Context } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import { AuditInputError, type AuditStore, type StoredMessage } from '../audit/index.js'
import {
  boundReply,
  buildSystemPrompt,
  type ExtraTool,
  ModelConfigError,
  ModelError,
  type ModelProvider,
  type PriceOverrides,
  priceOf,
  type TranscriptMessage,
  turnCost,
} from '../model/index.js'
import type { Policy } from '../policy/index.js'
import { clip } from '../present/index.js'
import type { ActionVerdict, JudgeRequest, ModelTurn, TetherActivities } from '../run/index.js'
import { ATTR, auditRow, MODEL_FAILURE, workspaceOf } from '../run/index.js'
import type { McpToolDefinition, ToolCall } from '../tools/index.js'
import { boundValue, isMcpToolName, mcpToolDigest, validateToolCall, wellFormed } from '../tools/index.js'
import { describeToolchain, detectToolchain } from '../workspace/index.js'
import { WORKER } from './attempts.js'
import { heartbeating } from './heartbeat.js'
import { judgeCalls } from './policy.js'
import { recordStepRows } from './projections.js'
import type { RunConfigs } from './run-config.js'
import type { StepSnapshots } from './snapshots.js'
import { type ActivityTelemetry, annotate, annotateContent, type RunMetrics } from './telemetry.js'
import { appendInOrder, type KeptTranscripts } from './transcript.js'

/** Strings longer than this in a file tool's contents stay in the transcript; history gets a marker. */
const ARGUMENT_HISTORY_LIMIT = 2_000
const TEXT_HISTORY_LIMIT = 2_000
/** Characters of an MCP tool's description offered to the model (the full one is in the audit). */
const TOOL_DESCRIPTION_LIMIT = 4_000
/** How much of a refused call's arguments history keeps (the transcript keeps more, see boundReply). */
const REFUSED_HISTORY_BOUNDS = { chars: 200, entries: 20, depth: 3 }

interface StoredReply {
  role: 'assistant'
  text: string
  /** Each call as the model made it, or bounded with the reason it was refused (`invalid`). */
  toolCalls: ToolCall[]
  usage?: ModelTurn['usage']
  modelId?: string
  /** The provider id asked, its finish reason and the turn's cost in micro-dollars (when priced). */
  model?: string
  finishReason?: string
  cost?: number
}

interface ModelDependencies {
  audit: AuditStore
  provider: (choice: string | undefined) => ModelProvider
  runs: RunConfigs
  snapshots: StepSnapshots
  /** The transcripts this worker keeps between its runs' turns. */
  transcripts: KeptTranscripts
  /** The operator's prices over the shipped ones (TETHER_PRICES). */
  prices?: PriceOverrides | undefined
  telemetry?: ActivityTelemetry | undefined
  metrics?: RunMetrics | undefined
}

export function modelActivities(deps: ModelDependencies): Pick<TetherActivities, 'tetherModelTurn'> {
  return {
    // The provider call can take minutes; heartbeats from start to end let a dead worker be noticed in
    // seconds (the workflow's heartbeat timeout) all the same.
    tetherModelTurn: (input) =>
      heartbeating(() => modelTurn(deps, input, Context.current().cancellationSignal), { phase: 'model' }),
  }
}

async function modelTurn(
  deps: ModelDependencies,
  input: Parameters<TetherActivities['tetherModelTurn']>[0],
  signal: AbortSignal,
): Promise<ModelTurn> {
  annotate({
    [ATTR.runId]: input.runId,
    [ATTR.auditRows]: [auditRow('steps', input.step), auditRow('messages', input.replySeq)],
  })
  // A previous attempt may have stored the reply and died before returning it: replay that reply rather
  // than asking the model again, so the transcript and the workflow never disagree. Everything else of the
  // turn was stored in the same commit (the observations before it too), so the transcript up to the reply
  // is read once, and it holds the reply exactly when that commit was made.
  const transcript = await deps.transcripts.read(input.runId, input.replySeq + 1)
  // The run's policy, as its verdicts judge by it (with what it remembered): the prompt tells the model
  // nothing the policy does not let it read.
  const policy = await deps.runs.policy(
    input.runId,
    undefined,
    input.judge?.remembered ?? [],
    input.judge?.policyDigest,
  )
  const existing = transcript.find((message) => message.seq === input.replySeq)
  if (existing) return judged(deps, input, policy, historyTurn(existing.content as StoredReply))
  const stored = await reply(deps, input, policy, transcript, signal)
  const turn = await judged(deps, input, policy, historyTurn(stored))
  const first = await storeTurn(deps.audit, input, stored, turn.verdicts)
  // Counted once: when this write is the step's first.
  if (first && input.previousStep) deps.metrics?.stepRecorded(input.previousStep)
  return turn
}

/** The turn with the policy's verdicts on its calls, when the workflow asked for them. */
async function judged(
  deps: ModelDependencies,
  input: Parameters<TetherActivities['tetherModelTurn']>[0],
  policy: Policy,
  turn: ModelTurn,
): Promise<ModelTurn> {
  return input.judge ? { ...turn, verdicts: await verdicts(deps, input, input.judge, policy, turn) } : turn
}

/**
 * The turn's rows in one commit: the step before (its row and refusals), the observations the workflow made
 * since the last write, the reply, and the begin of attempt 1 of each command the verdicts allow — when no
 * call asks a person or is an MCP call (the workflow judges those), so each such command starts right after
 * the turn. Returns whether the step before's row is this write's.
 */
async function storeTurn(
  audit: AuditStore,
  input: Parameters<TetherActivities['tetherModelTurn']>[0],
  stored: StoredReply,
  verdicts: ModelTurn['verdicts'],
): Promise<boolean> {
  const { runId, step, replySeq } = input
  const startsNext =
    verdicts && !stored.toolCalls.some((call, i) => isMcpToolName(call.name) || verdicts[i]?.effect === 'ask')
  const commands = startsNext
    ? stored.toolCalls.flatMap((call, i) =>
        call.name === 'exec' && verdicts[i]?.effect === 'allow' ? [{ runId, step, call: i, attempt: 1 }] : [],
      )
    : []
  try {
    // Independent rows, sent together: one round trip (see AuditStore.together).
    return await audit.together('modelTurn', async (writes) => {
      const [first] = await Promise.all([
        input.previousStep ? recordStepRows(writes, input.previousStep) : false,
        appendInOrder(writes, runId, [...input.pending, { seq: replySeq, message: stored }]),
        ...commands.map((key) => writes.beginExecAttempt(key, WORKER)),
      ])
      return first
    })
  } catch (error) {
    // Not a passing fault: the same turn would be refused again, so say so at once instead of retrying.
    if (error instanceof AuditInputError) {
      throw ApplicationFailure.nonRetryable(
        `the model's turn could not be stored: ${error.message}`,
        'ModelReplyUnstorable',
      )
    }
    throw error
  }
}

/**
 * The policy's verdict on each call of the reply, judged here because this worker holds the run's compiled
 * policy: one activity per turn instead of a check per call. The same validation and judge as a separate
 * check would apply; a call that is not valid gets none (the workflow turns it into an observation), and
 * neither does a call of an MCP tool: whether the run offers it is the workflow's, which checks it itself.
 */
async function verdicts(
  deps: ModelDependencies,
  { runId, step }: { runId: string; step: number },
  request: JudgeRequest,
  policy: Policy,
  turn: ModelTurn,
): Promise<Array<ActionVerdict | null>> {
  const validated = turn.toolCalls.map((call) =>
    isMcpToolName(call.name) ? undefined : validateToolCall(call),
  )
  const calls = validated.flatMap((v) => (v?.ok ? [v.call] : []))
  const judged =
    calls.length > 0 ? await judgeCalls(deps, runId, request, calls, { at: { step }, policy }) : []
  let next = 0
  return validated.map((v) => (v?.ok ? (judged[next++] as ActionVerdict) : null))
}

async function reply(
  deps: ModelDependencies,
  { runId, pending, contract: carried, mcpTools }: Parameters<TetherActivities['tetherModelTurn']>[0],
  policy: Policy,
  before: readonly StoredMessage[],
  signal: AbortSignal,
): Promise<StoredReply> {
  // The messages before the reply as stored (the turn read them, the reply not among them), and the
  // observations since the last write, which are stored with the reply: the model reads them from here.
  const transcript: unknown[] = before.map((m) => m.content)
  for (const { seq, message } of [...pending].sort((a, b) => a.seq - b.seq)) transcript[seq] = message
  const messages = transcript.map((message) => toTranscript(message as TranscriptMessage))

  const contract = await deps.runs.contract(runId, carried)
  let provider: ModelProvider
  try {
    provider = deps.provider(contract.model)
  } catch (error) {
    throw ApplicationFailure.nonRetryable((error as Error).message, 'ModelConfigError')
  }
  const toolchain = await detectToolchain(
    deps.snapshots.folder(runId, workspaceOf(contract)),
    (path) => policy.check('read', path).effect === 'allow',
  )
  const system = buildSystemPrompt({
    goal: contract.goal,
    ...(toolchain ? { toolchain: describeToolchain(toolchain) } : {}),
    ...(contract.verification ? { verification: contract.verification.command.join(' ') } : {}),
  })
  let stored: StoredReply
  try {
    const tools = await offeredTools(deps.audit, mcpTools ?? [])
    const response = await provider.generate({
      system,
      messages,
      signal,
      ...(tools.length > 0 ? { tools } : {}),
    })
    // The prompt's last message (what this turn answers) and the reply, only when excerpts are on.
    annotateContent(deps.telemetry, () => ({
      [ATTR.inputMessages]: JSON.stringify(messages.slice(-1)),
      [ATTR.outputMessages]: JSON.stringify([
        { role: 'assistant', text: response.text, toolCalls: response.toolCalls },
      ]),
    }))
    const quote = priceOf(provider.id, deps.prices)
    // Validated and bounded on the full arguments: what is stored and returned has a size, whatever the
    // model sent; a call over a limit carries its reason and becomes an observation in the workflow.
    stored = {
      role: 'assistant',
      ...boundReply(response),
      usage: response.usage,
      modelId: clip(wellFormed(response.modelId), 200),
      model: clip(provider.id, 200),
      finishReason: clip(wellFormed(response.finishReason), 100),
      ...(quote ? { cost: turnCost(quote.price, response.usage) } : {}),
    }
  } catch (error) {
    throw toFailure(error)
  }
  return stored
}

/**
 * The MCP tools offered this turn, as their reviewed definitions say (read from the audit by digest). A
 * stored definition that no longer hashes to its digest was edited: that tool is not offered.
 */
async function offeredTools(
  audit: AuditStore,
  offered: ReadonlyArray<{ name: string; digest: string }>,
): Promise<ExtraTool[]> {
  if (offered.length === 0) return []
  const stored = await audit.mcpDefinitions(offered.map((tool) => tool.digest))
  return offered.flatMap(({ name, digest }) => {
    const definition = stored.get(digest) as McpToolDefinition | undefined
    if (!definition || definition.name !== name || mcpToolDigest(definition) !== digest) return []
    const parameters = (definition.inputSchema ?? { type: 'object' }) as Record<string, unknown>
    return [{ name, description: clip(definition.description || name, TOOL_DESCRIPTION_LIMIT), parameters }]
  })
}

/** The stored reply without the bookkeeping fields the providers do not know. */
function toTranscript(
  message: TranscriptMessage & { usage?: unknown; modelId?: unknown },
): TranscriptMessage {
  if (message.role !== 'assistant') return message
  return {
    role: 'assistant',
    text: message.text,
    toolCalls: message.toolCalls.map(({ id, name, args }) => ({ id, name, args })),
  }
}

/** What history carries of a reply: bounded text, and calls without the bulk the workflow does not use. */
function historyTurn(reply: StoredReply): ModelTurn {
  return {
    text: clip(reply.text, TEXT_HISTORY_LIMIT),
    toolCalls: reply.toolCalls.map((call) =>
      call.invalid === undefined
        ? { ...call, args: compactArgs(call.name, call.args) }
        : { ...call, args: boundValue(call.args, REFUSED_HISTORY_BOUNDS) },
    ),
    usage: reply.usage ?? { inputTokens: 0, outputTokens: 0 },
    modelId: reply.modelId ?? 'unknown',
    ...(reply.model ? { model: reply.model } : {}),
    ...(reply.finishReason ? { finishReason: reply.finishReason } : {}),
    ...(reply.cost !== undefined ? { cost: reply.cost } : {}),
  }
}

/** The arguments of the file tools that carry file contents rather than something the policy judges. */
const BULK_ARGUMENTS: Record<string, readonly string[]> = {
  write_file: ['content'],
  edit_file: ['search', 'replace'],
}

/**
 * File contents and search/replace blocks are not needed by the workflow — the policy judges the path, and
 * the file tool reads the full arguments back from the transcript — so history carries a marker instead.
 * Everything else (command argv, paths, patterns) is kept exactly: the policy must judge what will run, and
 * the limits on a valid call already bound it.
 */
function compactArgs(name: string, args: unknown): unknown {
  const bulk = BULK_ARGUMENTS[name]
  if (!bulk || !args || typeof args !== 'object' || Array.isArray(args)) return args
  return Object.fromEntries(
    Object.entries(args as Record<string, unknown>).map(([key, value]) =>
      bulk.includes(key) && typeof value === 'string' && value.length > ARGUMENT_HISTORY_LIMIT
        ? [key, `${value.slice(0, 200)}… [${value.length} characters; the full value is in the transcript]`]
        : [key, value],
    ),
  )
}

/** Tells Temporal whether another attempt can succeed, and when (a provider's Retry-After). */
function toFailure(error: unknown): unknown {
  if (error instanceof ModelError) {
    return ApplicationFailure.create({
      message: error.message,
      type: MODEL_FAILURE[error.kind],
      nonRetryable: !error.retryable,
      ...(error.retryAfterMs !== undefined ? { nextRetryDelay: error.retryAfterMs } : {}),
    })
  }
  if (error instanceof ModelConfigError)
    return ApplicationFailure.nonRetryable(error.message, MODEL_FAILURE.config)
  return error
}
