/**
 * The model activity: stores what the workflow observed since the last turn, loads the transcript from
 * Postgres, calls the provider, stores the reply, and returns only the tool calls and usage — so Temporal
 * history grows by a few hundred bytes per turn, not by the transcript.
 */
import { Context } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import type { AuditStore } from '../audit/index.js'
import {
  buildSystemPrompt,
  ModelConfigError,
  ModelError,
  type ModelProvider,
  type TranscriptMessage,
} from '../model/index.js'
import type { ModelTurn } from '../run/index.js'
import type { ToolCall } from '../tools/schemas.js'
import { describeToolchain, detectToolchain } from '../workspace/index.js'
import { appendInOrder } from './transcript.js'
import type { TetherActivities } from './types.js'

/** Strings longer than this in a call's arguments stay in the transcript; history gets a marker. */
const ARGUMENT_HISTORY_LIMIT = 2_000
const TEXT_HISTORY_LIMIT = 2_000

interface StoredReply {
  role: 'assistant'
  text: string
  toolCalls: ToolCall[]
  usage?: { inputTokens: number; outputTokens: number }
  modelId?: string
}

export function modelActivities(deps: {
  audit: AuditStore
  provider: (choice: string | undefined) => ModelProvider
}): Pick<TetherActivities, 'tetherModelTurn'> {
  return {
    async tetherModelTurn({ runId, replySeq, pending, contract }) {
      const context = Context.current()
      // A previous attempt may have stored the reply and died before returning it: replay that reply
      // rather than asking the model again, so the transcript and the workflow never disagree.
      // (The transcript has no gaps, so the first message at or after replySeq is the reply.)
      const [existing] = await deps.audit.loadMessages(runId, { fromSeq: replySeq, limit: 1 })
      if (existing) return compactTurn(existing.content as StoredReply)

      await appendInOrder(deps.audit, runId, pending)
      const transcript = (await deps.audit.loadMessages(runId, { limit: replySeq })).map((message) =>
        toTranscript(message.content as TranscriptMessage),
      )

      let provider: ModelProvider
      try {
        provider = deps.provider(contract.model)
      } catch (error) {
        throw ApplicationFailure.nonRetryable((error as Error).message, 'ModelConfigError')
      }
      const toolchain = await detectToolchain(contract.workspace)
      const system = buildSystemPrompt({
        goal: contract.goal,
        ...(toolchain ? { toolchain: describeToolchain(toolchain) } : {}),
        ...(contract.verification ? { verification: contract.verification.command.join(' ') } : {}),
      })
      // The provider call can take minutes; heartbeats keep a dead worker from holding the turn.
      const beat = setInterval(() => context.heartbeat({ phase: 'model' }), 10_000)
      let reply: StoredReply
      try {
        const response = await provider.generate({
          system,
          messages: transcript,
          signal: context.cancellationSignal,
        })
        reply = {
          role: 'assistant',
          text: response.text,
          toolCalls: response.toolCalls,
          usage: response.usage,
          modelId: response.modelId,
        }
      } catch (error) {
        throw toFailure(error)
      } finally {
        clearInterval(beat)
      }
      await deps.audit.appendMessages(runId, replySeq, [reply])
      return compactTurn(reply)
    },
  }
}

/** The stored reply without the bookkeeping fields the providers do not know. */
function toTranscript(
  message: TranscriptMessage & { usage?: unknown; modelId?: unknown },
): TranscriptMessage {
  if (message.role !== 'assistant') return message
  return { role: 'assistant', text: message.text, toolCalls: message.toolCalls }
}

function compactTurn(reply: StoredReply): ModelTurn {
  return {
    text: clip(reply.text, TEXT_HISTORY_LIMIT),
    toolCalls: reply.toolCalls.map((call) => ({ ...call, args: compactArgs(call.name, call.args) })),
    usage: reply.usage ?? { inputTokens: 0, outputTokens: 0 },
    modelId: reply.modelId ?? 'unknown',
  }
}

/**
 * Large string arguments of file tools (file contents, search/replace blocks) are not needed by the
 * workflow — the policy judges the path, and the file tool reads the full arguments back from the
 * transcript — so history carries a marker instead. Command argv is never shortened: the policy must judge
 * exactly what will run.
 */
function compactArgs(name: string, args: unknown): unknown {
  if (name === 'exec' || !args || typeof args !== 'object' || Array.isArray(args)) return args
  return Object.fromEntries(
    Object.entries(args as Record<string, unknown>).map(([key, value]) =>
      typeof value === 'string' && value.length > ARGUMENT_HISTORY_LIMIT
        ? [key, `${value.slice(0, 200)}… [${value.length} characters; the full value is in the transcript]`]
        : [key, value],
    ),
  )
}

const FAILURE_TYPES: Record<ModelError['kind'], string> = {
  'rate-limit': 'ModelRateLimited',
  server: 'ModelServerError',
  transport: 'ModelTransportError',
  timeout: 'ModelTimeout',
  malformed: 'ModelMalformedReply',
  auth: 'ModelAuthError',
  'bad-request': 'ModelBadRequestError',
  'context-overflow': 'ModelContextOverflowError',
}

/** Tells Temporal whether another attempt can succeed, and when (a provider's Retry-After). */
function toFailure(error: unknown): unknown {
  if (error instanceof ModelError) {
    return ApplicationFailure.create({
      message: error.message,
      type: FAILURE_TYPES[error.kind],
      nonRetryable: !error.retryable,
      ...(error.retryAfterMs !== undefined ? { nextRetryDelay: error.retryAfterMs } : {}),
    })
  }
  if (error instanceof ModelConfigError)
    return ApplicationFailure.nonRetryable(error.message, 'ModelConfigError')
  return error
}

function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`
}
