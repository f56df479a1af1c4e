/**
 * Token estimates and the rule that keeps a long transcript inside a model's context window.
 */
import type { TranscriptMessage } from './types.js'

/**
 * Deliberately pessimistic (real tokenisers average 3.5–4 characters per token on code and English), so
 * fitting errs toward eliding a little early rather than overflowing the provider's window.
 */
const CHARS_PER_TOKEN = 3
/** Role markers and separators every provider adds around a message. */
const MESSAGE_OVERHEAD_TOKENS = 4
/** How many of the latest tool results `fitTranscript` never elides. */
export const KEEP_RECENT_RESULTS = 3

export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN)
}

function messageChars(message: TranscriptMessage): number {
  switch (message.role) {
    case 'user':
      return message.content.length
    case 'assistant':
      return message.toolCalls.reduce(
        (sum, call) =>
          sum + call.id.length + call.name.length + (JSON.stringify(call.args ?? {})?.length ?? 0),
        message.text.length,
      )
    case 'tool':
      return message.results.reduce(
        (sum, result) => sum + result.callId.length + result.name.length + result.output.length,
        0,
      )
  }
}

function messageTokens(message: TranscriptMessage): number {
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil(messageChars(message) / CHARS_PER_TOKEN)
}

/** Estimated tokens of a transcript: one pessimistic figure for every provider, no tokeniser needed. */
export function estimateTokens(messages: readonly TranscriptMessage[]): number {
  return messages.reduce((sum, message) => sum + messageTokens(message), 0)
}

export function elisionStub(tool: string, characters: number): string {
  return `[output of ${tool} elided to fit the context: ${characters} characters]`
}

const STUB_PATTERN = /^\[output of .* elided to fit the context: \d+ characters\]$/

/**
 * Fits a transcript into `budgetTokens` (as measured by `estimateTokens`) by eliding old tool outputs.
 *
 * The rule, exactly:
 * 1. If the transcript's estimate is within the budget, it is returned unchanged.
 * 2. Otherwise tool results are visited oldest first (transcript order, then order within a tool message)
 *    and each one's `output` is replaced by `[output of <tool> elided to fit the context: N characters]`
 *    (N = length of the original output), until the estimate is within the budget.
 * 3. Never elided: the `keepRecent` most recent tool results (default 3), outputs that are already stubs,
 *    and outputs no longer than their stub. User messages and assistant messages (text and tool calls) are
 *    never changed, and no message is removed or reordered, so every tool call keeps its result.
 * 4. If eliding everything allowed still leaves it over budget, the result is the fully elided transcript
 *    (the provider then reports a context overflow).
 *
 * Pure: the input is not modified. Idempotent: fitting a fitted transcript to the same budget returns it
 * unchanged.
 */
export function fitTranscript(
  messages: readonly TranscriptMessage[],
  budgetTokens: number,
  options: { keepRecent?: number } = {},
): TranscriptMessage[] {
  const fitted = [...messages]
  let total = estimateTokens(fitted)
  if (total <= budgetTokens) return fitted
  const resultCount = messages.reduce((sum, m) => sum + (m.role === 'tool' ? m.results.length : 0), 0)
  // Results still allowed to be elided, counting down oldest first so the latest `keepRecent` survive.
  let elidable = resultCount - (options.keepRecent ?? KEEP_RECENT_RESULTS)
  for (let i = 0; i < fitted.length && elidable > 0 && total > budgetTokens; i++) {
    const message = fitted[i]!
    if (message.role !== 'tool') continue
    const results = [...message.results]
    for (let j = 0; j < results.length && elidable > 0 && total > budgetTokens; j++, elidable--) {
      const result = results[j]!
      const stub = elisionStub(result.name, result.output.length)
      if (STUB_PATTERN.test(result.output) || stub.length >= result.output.length) continue
      // Re-estimate the whole message so `total` stays exactly `estimateTokens(fitted)`.
      const before = messageTokens({ role: 'tool', results })
      results[j] = { ...result, output: stub }
      total += messageTokens({ role: 'tool', results }) - before
    }
    fitted[i] = { role: 'tool', results }
  }
  return fitted
}
