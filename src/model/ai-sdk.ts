/**
 * A `ModelProvider` over any Vercel AI SDK language model: one `generateText` step with tether's tools
 * offered but not executed, so the tool calls come back to the workflow, which is the agent loop.
 */
import { createHash } from 'node:crypto'
import { generateText, jsonSchema, type LanguageModel, type ModelMessage, type ToolSet, tool } from 'ai'
import { toolCatalogue } from './catalogue.js'
import { classifyModelError } from './errors.js'
import { estimateUsage, prepareRequest } from './request.js'
import type { ExtraTool, ModelProvider, ModelRequest, ModelResponse, TranscriptMessage } from './types.js'

// No `execute` and no validation here: the SDK hands the calls back untouched, and the workflow validates
// them with the same zod schemas, so a bad call becomes an observation for the model instead of an error.
const tools: ToolSet = Object.fromEntries(
  Object.entries(toolCatalogue).map(([name, entry]) => [
    name,
    tool({ description: entry.description, inputSchema: jsonSchema(entry.parameters) }),
  ]),
)

/** What providers accept as a tool name: letters, digits, `_` and `-`, at most 64. */
const PROVIDER_NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * A tool name as providers accept it. tether's own pass as they are; an MCP tool's `server.tool` becomes
 * `server__tool` (dots as `_`), a long one cut and made unique by a hash of the whole name.
 */
export function providerToolName(name: string): string {
  if (PROVIDER_NAME.test(name)) return name
  const dot = name.indexOf('.')
  const encoded = `${name.slice(0, dot)}__${name.slice(dot + 1)}`.replace(/[^A-Za-z0-9_-]/g, '_')
  if (encoded.length <= 64) return encoded
  return `${encoded.slice(0, 55)}_${createHash('sha256').update(name).digest('hex').slice(0, 8)}`
}

function toolSet(extra: readonly ExtraTool[]): ToolSet {
  if (extra.length === 0) return tools
  const all: ToolSet = { ...tools }
  for (const entry of extra) {
    all[providerToolName(entry.name)] = tool({
      description: entry.description,
      inputSchema: jsonSchema(entry.parameters as Parameters<typeof jsonSchema>[0]),
    })
  }
  return all
}

/** Providers require tool input to be an object; a call whose arguments did not parse is replayed as `{}`. */
function replayableArgs(args: unknown): unknown {
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {}
}

/** The transcript in the AI SDK's message shape (assistant messages with nothing in them are dropped). */
export function toModelMessages(messages: readonly TranscriptMessage[]): ModelMessage[] {
  return messages.flatMap((message): ModelMessage[] => {
    if (message.role === 'user') return [{ role: 'user', content: message.content }]
    if (message.role === 'tool') {
      const content = message.results.map((result) => ({
        type: 'tool-result' as const,
        toolCallId: result.callId,
        toolName: providerToolName(result.name),
        output: { type: 'text' as const, value: result.output },
      }))
      return [{ role: 'tool', content }]
    }
    const content = [
      ...(message.text ? [{ type: 'text' as const, text: message.text }] : []),
      ...message.toolCalls.map((call) => ({
        type: 'tool-call' as const,
        toolCallId: call.id,
        toolName: providerToolName(call.name),
        input: replayableArgs(call.args),
      })),
    ]
    return content.length > 0 ? [{ role: 'assistant', content }] : []
  })
}

export interface AiSdkProviderOptions {
  id: string
  model: LanguageModel
  contextTokens: number
  /** The variable holding this provider's API key, named when the provider refuses it. */
  credentials?: string
}

export function aiSdkProvider(options: AiSdkProviderOptions): ModelProvider {
  const { id, model, contextTokens, credentials } = options
  return {
    id,
    contextTokens,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const { messages, maxOutputTokens } = prepareRequest(request, contextTokens)
      const extra = request.tools ?? []
      // Calls come back under the provider's names; the transcript keeps tether's.
      const names = new Map(extra.map((entry) => [providerToolName(entry.name), entry.name]))
      try {
        const result = await generateText({
          model,
          system: request.system,
          messages: toModelMessages(messages),
          tools: toolSet(extra),
          toolChoice: 'auto',
          maxOutputTokens,
          // Temporal retries the model activity; SDK retries inside it would multiply the attempts.
          maxRetries: 0,
          ...(request.signal ? { abortSignal: request.signal } : {}),
        })
        const toolCalls = result.toolCalls.map((call) => ({
          id: call.toolCallId,
          name: names.get(call.toolName) ?? call.toolName,
          args: call.input,
        }))
        // Budgets need numbers even from servers that report no usage; the estimate stands in.
        const estimate = estimateUsage(request.system, messages, { text: result.text, toolCalls })
        return {
          text: result.text,
          toolCalls,
          usage: {
            inputTokens: result.usage.inputTokens ?? estimate.inputTokens,
            outputTokens: result.usage.outputTokens ?? estimate.outputTokens,
            ...(result.usage.inputTokenDetails?.cacheReadTokens
              ? { cachedInputTokens: result.usage.inputTokenDetails.cacheReadTokens }
              : {}),
          },
          finishReason: result.finishReason,
          modelId: result.response.modelId,
        }
      } catch (error) {
        // The caller cancelled: that is not a provider failure, so it is passed on as it came.
        if (request.signal?.aborted && request.signal.reason?.name !== 'TimeoutError') throw error
        throw classifyModelError(error, { provider: id, ...(credentials ? { credentials } : {}) })
      }
    },
  }
}
