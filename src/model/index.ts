/**
 * Model providers behind one interface: the Vercel AI SDK for OpenRouter, OpenAI-compatible servers,
 * Anthropic and OpenAI, and a scripted model for tests and offline demos. Errors are classified for
 * Temporal's retries; long transcripts are fitted to the model's context by eliding old tool outputs.
 */
export { type AiSdkProviderOptions, aiSdkProvider, providerToolName, toModelMessages } from './ai-sdk.js'
export { toolCatalogue } from './catalogue.js'
export { providerFromEnv } from './env.js'
export {
  type ClassifyContext,
  classifyModelError,
  ModelConfigError,
  ModelError,
  type ModelErrorKind,
  parseRetryAfter,
} from './errors.js'
export { elisionStub, estimateTokens, fitTranscript, KEEP_RECENT_RESULTS } from './fit.js'
export {
  loadPriceFile,
  type ModelPrice,
  type PriceOverrides,
  type PriceQuote,
  priceOf,
  SHIPPED_PRICES,
  type TurnUsage,
  turnCost,
} from './prices.js'
export { buildSystemPrompt, type SystemPromptInput } from './prompt.js'
export { type BoundedReply, boundReply, REPLY_LIMITS } from './reply.js'
export { DEFAULT_MAX_OUTPUT_TOKENS, prepareRequest } from './request.js'
export {
  loadModelScript,
  type ModelScript,
  modelScriptSchema,
  parseModelScript,
  SCRIPT_FINISHED_TEXT,
  scriptedProvider,
} from './scripted.js'
export type {
  ExtraTool,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ToolResult,
  TranscriptMessage,
} from './types.js'
export { transcriptMessageSchema } from './types.js'
