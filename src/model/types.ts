/**
 * The provider-neutral shapes of a model call. The transcript is what tether stores in Postgres (one JSON
 * value per message), so it carries no provider-specific fields and can be replayed to any provider.
 */
import { z } from 'zod'
import type { ToolCall } from '../tools/index.js'

const toolCallSchema = z.object({ id: z.string(), name: z.string(), args: z.unknown() })

/**
 * One message of a run's transcript. Invariant the caller keeps: every tool call of an assistant message is
 * answered, by call id, in the tool message that follows it (providers reject a transcript that is not).
 */
export const transcriptMessageSchema: z.ZodType<TranscriptMessage> = z.discriminatedUnion('role', [
  z.object({ role: z.literal('user'), content: z.string() }),
  z.object({ role: z.literal('assistant'), text: z.string(), toolCalls: z.array(toolCallSchema) }),
  z.object({
    role: z.literal('tool'),
    results: z.array(z.object({ callId: z.string(), name: z.string(), output: z.string() })),
  }),
])

export type TranscriptMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[] }
  | { role: 'tool'; results: ToolResult[] }

export interface ToolResult {
  /** The id of the tool call this answers. */
  callId: string
  name: string
  output: string
}

/** A tool offered besides tether's own: an MCP server's, named `server.tool`, as its reviewed definition says. */
export interface ExtraTool {
  name: string
  description: string
  /** The tool's input schema (JSON Schema). */
  parameters: Record<string, unknown>
}

export interface ModelRequest {
  system: string
  messages: readonly TranscriptMessage[]
  /** Tools offered this turn besides tether's own catalogue (the run's MCP tools). */
  tools?: readonly ExtraTool[]
  /** Upper bound on the reply; also reserved out of the context budget when the transcript is fitted. */
  maxOutputTokens?: number
  /** Aborting cancels the call; an abort whose reason is a `TimeoutError` is reported as a timeout. */
  signal?: AbortSignal
}

export interface ModelResponse {
  text: string
  /** Tool calls exactly as the model made them: arguments are not validated here. */
  toolCalls: ToolCall[]
  /** `cachedInputTokens` (prompt-cache reads) are part of `inputTokens`, when the provider reports them. */
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number }
  finishReason: string
  /** The model that answered, as the provider reported it. */
  modelId: string
}

/**
 * A model behind one interface. `generate` makes exactly one call (no retries of its own: Temporal retries
 * the model activity) and throws only `ModelError`, except when the caller's signal aborts it.
 */
export interface ModelProvider {
  /** `<provider>:<model>`, e.g. `openrouter:anthropic/claude-sonnet-4`; also a valid model choice. */
  readonly id: string
  /** The context window tether fits the transcript into. */
  readonly contextTokens: number
  generate(request: ModelRequest): Promise<ModelResponse>
}
