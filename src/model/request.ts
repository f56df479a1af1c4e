/**
 * What every provider does to a request before calling its model, so a scripted run and a real one see
 * the same fitted transcript and the same output reserve.
 */

import type { ToolCall } from '../tools/index.js'
import { CATALOGUE_TOKENS } from './catalogue.js'
import { ModelError } from './errors.js'
import { estimateTextTokens, estimateTokens, fitTranscript } from './fit.js'
import type { ModelRequest, TranscriptMessage } from './types.js'

/** The reply reserve when the request names none; at most a quarter of a small context window. */
export const DEFAULT_MAX_OUTPUT_TOKENS = 8192

export interface PreparedRequest {
  messages: TranscriptMessage[]
  maxOutputTokens: number
}

/**
 * Reserves the reply, the system prompt and the tool catalogue out of `contextTokens` and fits the
 * transcript into what is left (see `fitTranscript`).
 */
export function prepareRequest(request: ModelRequest, contextTokens: number): PreparedRequest {
  checkTranscript(request.messages)
  const maxOutputTokens =
    request.maxOutputTokens ?? Math.min(DEFAULT_MAX_OUTPUT_TOKENS, Math.floor(contextTokens / 4))
  const budget =
    contextTokens -
    maxOutputTokens -
    estimateTextTokens(request.system) -
    CATALOGUE_TOKENS -
    extraToolTokens(request.tools)
  return { messages: fitTranscript(request.messages, budget), maxOutputTokens }
}

/** What the tools offered besides tether's own cost in a request, as `fitTranscript` counts tokens. */
function extraToolTokens(tools: ModelRequest['tools']): number {
  return tools && tools.length > 0 ? estimateTextTokens(JSON.stringify(tools)) : 0
}

/**
 * Providers refuse a transcript where a tool call is not answered before the next user or assistant message,
 * or where a result answers no open call; the scripted model refuses it the same way, so tests catch it.
 */
function checkTranscript(messages: readonly TranscriptMessage[]): void {
  const open = new Set<string>()
  const fail = (index: number, problem: string) => {
    throw new ModelError(
      'bad-request',
      `transcript message ${index}: ${problem}; answer every tool call in the tool message right after it`,
    )
  }
  messages.forEach((message, index) => {
    if (message.role === 'tool') {
      for (const result of message.results) {
        if (!open.delete(result.callId)) fail(index, `result for ${result.callId} answers no open tool call`)
      }
      return
    }
    if (open.size > 0) fail(index, `tool call ${[...open].join(', ')} has no result before it`)
    if (message.role === 'assistant') for (const call of message.toolCalls) open.add(call.id)
  })
  if (open.size > 0) fail(messages.length, `tool call ${[...open].join(', ')} has no result`)
}

/** Usage as `fitTranscript` counts it, for replies whose provider reports none (and the scripted model). */
export function estimateUsage(
  system: string,
  messages: readonly TranscriptMessage[],
  reply: { text: string; toolCalls: ToolCall[] },
): { inputTokens: number; outputTokens: number } {
  return {
    inputTokens: estimateTextTokens(system) + CATALOGUE_TOKENS + estimateTokens(messages),
    outputTokens: estimateTokens([{ role: 'assistant', ...reply }]),
  }
}
