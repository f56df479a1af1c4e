/**
 * Provider failures, classified once so the model activity can tell Temporal what to do: retry with
 * backoff (or after the provider's `Retry-After`), or stop because another attempt cannot succeed.
 */
import { APICallError, RetryError } from 'ai'

export type ModelErrorKind =
  | 'rate-limit'
  | 'server'
  | 'transport'
  | 'timeout'
  | 'auth'
  | 'bad-request'
  | 'context-overflow'
  | 'malformed'

/** Whether another attempt of the same call can succeed. */
const RETRYABLE: Readonly<Record<ModelErrorKind, boolean>> = {
  'rate-limit': true,
  server: true,
  transport: true,
  timeout: true,
  malformed: true,
  auth: false,
  'bad-request': false,
  'context-overflow': false,
}

export class ModelError extends Error {
  override name = 'ModelError'
  readonly kind: ModelErrorKind
  readonly retryable: boolean
  /** How long the provider asked us to wait before the next attempt (`Retry-After`, `retry-after-ms`). */
  readonly retryAfterMs?: number
  /** The HTTP status of the provider's answer, when there was one. */
  readonly status?: number

  constructor(
    kind: ModelErrorKind,
    message: string,
    details: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.kind = kind
    this.retryable = RETRYABLE[kind]
    if (details.status !== undefined) this.status = details.status
    if (details.retryAfterMs !== undefined) this.retryAfterMs = details.retryAfterMs
  }
}

/** The model configuration is missing or wrong; the message names the variable or file to fix. */
export class ModelConfigError extends Error {
  override name = 'ModelConfigError'
}

export interface ClassifyContext {
  /** Names the provider in messages, e.g. `openrouter:anthropic/claude-sonnet-4`. */
  provider?: string
  /** The variable holding the credentials, named in the advice of an auth error. */
  credentials?: string
  /** Clock for a `Retry-After` HTTP date (milliseconds since the epoch). */
  now?: number
}

// Phrases providers use for a prompt longer than the model's window: OpenAI's error code, Anthropic,
// and the wording of OpenAI-compatible servers (vLLM, OpenRouter, Ollama).
const CONTEXT_MARKERS = [
  'context_length_exceeded',
  'prompt is too long',
  'maximum context length',
  'context length',
  'context window',
  'too many tokens',
]

// Node's (undici's) codes for a connection that failed or broke, and those of them that are timeouts.
const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
])
const NETWORK_CODES = new Set([
  ...TIMEOUT_CODES,
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ConnectionRefused',
  'ConnectionClosed',
  'FailedToOpenSocket',
])

// AI SDK errors that mean the provider answered but tether could not read the answer.
const MALFORMED_ERRORS = new Set([
  'AI_TypeValidationError',
  'AI_JSONParseError',
  'AI_InvalidResponseDataError',
  'AI_EmptyResponseBodyError',
  'AI_NoContentGeneratedError',
  'AI_NoOutputGeneratedError',
])

/**
 * Parses `retry-after-ms` (milliseconds) or `Retry-After` (seconds, or an HTTP date relative to `now`).
 * Returns undefined when neither is present or readable.
 */
export function parseRetryAfter(
  headers: Readonly<Record<string, string | undefined>> | undefined,
  now = Date.now(),
): number | undefined {
  if (!headers) return undefined
  const header = (name: string) =>
    Object.entries(headers)
      .find(([key]) => key.toLowerCase() === name)?.[1]
      ?.trim() || undefined
  const ms = header('retry-after-ms')
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms))
  const value = header('retry-after')
  if (value === undefined) return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000)
  // An HTTP date names a weekday and month; `Date.parse` alone would also accept "-3" as a year.
  const date = /[a-z]/i.test(value) ? Date.parse(value) : Number.NaN
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/** Every error in the `cause` chain, outermost first (cycles are cut). */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let current = error; current !== undefined && current !== null && !chain.includes(current); ) {
    chain.push(current)
    current = current instanceof Error ? current.cause : undefined
  }
  return chain
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.replace(/\s+/g, ' ').trim().slice(0, 300) || 'no message'
}

/** The provider's own words: the parsed error message, else the start of the body. */
function providerMessage(error: APICallError): string {
  const body = error.responseBody?.replace(/\s+/g, ' ').trim()
  const generic = error.data === undefined && body && !error.message.includes(body)
  return describe(generic ? `${error.message}: ${body.slice(0, 200)}` : error.message)
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
}

/** Turns anything a provider call threw into a `ModelError` (a `ModelError` is returned unchanged). */
export function classifyModelError(error: unknown, context: ClassifyContext = {}): ModelError {
  if (error instanceof ModelError) return error
  const who = context.provider ?? 'the model provider'
  const chain = causes(error)
  // With SDK retries off a RetryError should not occur; if one does, its last attempt's error decides.
  const retried = chain.find((e): e is RetryError => RetryError.isInstance(e))
  if (retried?.lastError !== undefined) return classifyModelError(retried.lastError, context)

  const apiError = chain.find((e): e is APICallError => APICallError.isInstance(e))
  const status = apiError?.statusCode
  if (apiError && status !== undefined && (status < 200 || status >= 300)) {
    return classifyStatus(apiError, status, who, context)
  }

  const broken = chain.find((e) => NETWORK_CODES.has(errorCode(e) ?? ''))
  if (broken !== undefined || chain.some(isTimeout)) {
    const timedOut = chain.some(isTimeout) || TIMEOUT_CODES.has(errorCode(broken) ?? '')
    return timedOut
      ? new ModelError(
          'timeout',
          `${who} did not answer in time (${describe(error)}); the call will be retried`,
          {
            cause: error,
          },
        )
      : new ModelError(
          'transport',
          `could not talk to ${who} (${describe(broken ?? error)}); the call will be retried — check the network and the base URL if it persists`,
          { cause: error },
        )
  }
  if (apiError) {
    // A 2xx answer the SDK could not process, or a request that never got an answer.
    return status === undefined
      ? new ModelError(
          'transport',
          `could not talk to ${who} (${describe(error)}); the call will be retried`,
          {
            cause: error,
          },
        )
      : malformed(who, error)
  }
  if (chain.some((e) => e instanceof Error && MALFORMED_ERRORS.has(e.name))) return malformed(who, error)
  if (error instanceof TypeError && /fetch failed|terminated/i.test(error.message)) {
    return new ModelError(
      'transport',
      `could not talk to ${who} (${describe(error)}); the call will be retried`,
      {
        cause: error,
      },
    )
  }
  if (error instanceof Error && error.name === 'AI_LoadAPIKeyError') {
    return new ModelError('auth', `${who} has no API key: ${describe(error)}`, { cause: error })
  }
  // Anything else is a bug or a request the SDK refused to send; repeating it would fail the same way.
  return new ModelError('bad-request', `unexpected error calling ${who}: ${describe(error)}`, {
    cause: error,
  })
}

function malformed(who: string, error: unknown): ModelError {
  return new ModelError(
    'malformed',
    `${who} sent a response tether could not read (${describe(error)}); the call will be retried`,
    { cause: error },
  )
}

function classifyStatus(
  error: APICallError,
  status: number,
  who: string,
  context: ClassifyContext,
): ModelError {
  const said = providerMessage(error)
  const details = { status, cause: error }
  if (status === 429 || status >= 500 || status === 408) {
    const retryAfterMs = parseRetryAfter(error.responseHeaders, context.now)
    const wait = retryAfterMs === undefined ? 'with backoff' : `after ${formatMs(retryAfterMs)} as asked`
    const withWait = retryAfterMs === undefined ? details : { ...details, retryAfterMs }
    if (status === 429) {
      return new ModelError(
        'rate-limit',
        `${who} is rate-limiting (HTTP 429: ${said}); retrying ${wait}`,
        withWait,
      )
    }
    if (status === 408) {
      return new ModelError(
        'timeout',
        `${who} timed out the request (HTTP 408: ${said}); retrying ${wait}`,
        withWait,
      )
    }
    return new ModelError('server', `${who} failed (HTTP ${status}: ${said}); retrying ${wait}`, withWait)
  }
  if (status === 401 || status === 403) {
    const fix = context.credentials ? `check ${context.credentials}` : 'check the API key'
    return new ModelError('auth', `${who} refused the credentials (HTTP ${status}: ${said}); ${fix}`, details)
  }
  const text = `${error.message} ${error.responseBody ?? ''}`.toLowerCase()
  if (status === 413 || CONTEXT_MARKERS.some((marker) => text.includes(marker))) {
    return new ModelError(
      'context-overflow',
      `the transcript is too long for ${who} (HTTP ${status}: ${said}); lower TETHER_CONTEXT_TOKENS so older tool outputs are elided sooner`,
      details,
    )
  }
  return new ModelError(
    'bad-request',
    `${who} rejected the request (HTTP ${status}: ${said}); check the model name and settings`,
    details,
  )
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`
}
