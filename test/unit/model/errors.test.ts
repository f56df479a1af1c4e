/** Classification of provider failures into retryable and final ModelErrors, with the provider's wait. */
import { APICallError, JSONParseError, RetryError, TypeValidationError } from 'ai'
import { describe, expect, it } from 'vitest'
import {
  classifyModelError,
  ModelError,
  type ModelErrorKind,
  parseRetryAfter,
} from '../../../src/model/index.js'

function apiError(
  statusCode: number | undefined,
  message: string,
  extra: { headers?: Record<string, string>; body?: string; cause?: unknown } = {},
): APICallError {
  return new APICallError({
    message,
    url: 'https://models.example/v1/chat/completions',
    requestBodyValues: {},
    ...(statusCode === undefined ? {} : { statusCode }),
    ...(extra.headers ? { responseHeaders: extra.headers } : {}),
    ...(extra.body ? { responseBody: extra.body } : {}),
    ...(extra.cause ? { cause: extra.cause } : {}),
  })
}

function networkError(code: string, message = 'fetch failed'): TypeError {
  return new TypeError(message, { cause: Object.assign(new Error(`socket: ${code}`), { code }) })
}

describe('classifyModelError', () => {
  const cases: Array<[string, unknown, ModelErrorKind, boolean]> = [
    ['HTTP 429', apiError(429, 'Rate limit reached'), 'rate-limit', true],
    ['HTTP 500', apiError(500, 'Internal error'), 'server', true],
    ['HTTP 503', apiError(503, 'Service unavailable'), 'server', true],
    ['HTTP 529 (Anthropic overloaded)', apiError(529, 'Overloaded'), 'server', true],
    ['HTTP 408', apiError(408, 'Request timeout'), 'timeout', true],
    ['HTTP 401', apiError(401, 'Invalid API key'), 'auth', false],
    ['HTTP 403', apiError(403, 'Forbidden'), 'auth', false],
    ['HTTP 404', apiError(404, 'model not found'), 'bad-request', false],
    ['HTTP 400', apiError(400, 'messages: field required'), 'bad-request', false],
    ['HTTP 402', apiError(402, 'insufficient credits'), 'bad-request', false],
    [
      'OpenAI context_length_exceeded code in the body',
      apiError(400, 'Bad request', { body: '{"error":{"code":"context_length_exceeded"}}' }),
      'context-overflow',
      false,
    ],
    [
      'Anthropic "prompt is too long"',
      apiError(400, 'prompt is too long: 208310 tokens > 200000 maximum'),
      'context-overflow',
      false,
    ],
    [
      'vLLM "maximum context length"',
      apiError(400, "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens"),
      'context-overflow',
      false,
    ],
    ['HTTP 413', apiError(413, 'Request exceeds the maximum size'), 'context-overflow', false],
    ['connection reset', networkError('ECONNRESET'), 'transport', true],
    [
      'connection refused (wrapped by the SDK)',
      apiError(undefined, 'Cannot connect to API', { cause: networkError('ECONNREFUSED') }),
      'transport',
      true,
    ],
    [
      'socket closed while reading a 200 body',
      apiError(200, 'Failed to process', { cause: networkError('UND_ERR_SOCKET', 'terminated') }),
      'transport',
      true,
    ],
    ['undici header timeout', networkError('UND_ERR_HEADERS_TIMEOUT'), 'timeout', true],
    [
      'AbortSignal.timeout',
      new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      'timeout',
      true,
    ],
    [
      'invalid JSON in a 200 answer',
      apiError(200, 'Invalid JSON response', {
        cause: new JSONParseError({ text: '{', cause: new Error('x') }),
      }),
      'malformed',
      true,
    ],
    [
      'answer of the wrong shape',
      new TypeValidationError({ value: {}, cause: new Error('choices: required') }),
      'malformed',
      true,
    ],
    ['an unexpected error', new RangeError('something else'), 'bad-request', false],
  ]

  it.each(cases)('%s', (_name, error, kind, retryable) => {
    const classified = classifyModelError(error, { provider: 'openrouter:some/model' })
    expect(classified).toBeInstanceOf(ModelError)
    expect(classified.kind).toBe(kind)
    expect(classified.retryable).toBe(retryable)
    expect(classified.message).toContain('openrouter:some/model')
    expect(classified.cause).toBe(error)
  })

  it('keeps the HTTP status and names the provider and the provider’s own words', () => {
    const error = classifyModelError(apiError(400, 'max_tokens: must be positive'), {
      provider: 'anthropic:claude-x',
    })
    expect(error.status).toBe(400)
    expect(error.message).toContain('anthropic:claude-x')
    expect(error.message).toContain('max_tokens: must be positive')
  })

  it('names the credentials variable when the provider refuses the key', () => {
    const error = classifyModelError(apiError(401, 'invalid x-api-key'), { credentials: 'ANTHROPIC_API_KEY' })
    expect(error.message).toMatch(/check ANTHROPIC_API_KEY/)
  })

  it('shows the start of a body the SDK could not parse into an error message', () => {
    const error = classifyModelError(apiError(502, 'Bad Gateway', { body: '<html>upstream   down</html>' }))
    expect(error.message).toContain('Bad Gateway: <html>upstream down</html>')
  })

  it('honours Retry-After in seconds on a 429', () => {
    const error = classifyModelError(apiError(429, 'slow down', { headers: { 'retry-after': '12' } }))
    expect(error.retryAfterMs).toBe(12_000)
    expect(error.message).toContain('after 12 s')
  })

  it('honours Retry-After as an HTTP date, relative to the given clock', () => {
    const now = Date.parse('2026-01-02T03:04:05Z')
    const headers = { 'retry-after': 'Fri, 02 Jan 2026 03:04:35 GMT' }
    expect(classifyModelError(apiError(429, 'slow down', { headers }), { now }).retryAfterMs).toBe(30_000)
  })

  it('prefers retry-after-ms and honours Retry-After on a 503 as well', () => {
    const headers = { 'retry-after-ms': '1500.4', 'retry-after': '9' }
    expect(classifyModelError(apiError(503, 'busy', { headers })).retryAfterMs).toBe(1501)
  })

  it('leaves the wait to backoff when there is no readable Retry-After', () => {
    const error = classifyModelError(apiError(429, 'slow down', { headers: { 'retry-after': 'soon' } }))
    expect(error.retryAfterMs).toBeUndefined()
    expect(error.message).toContain('with backoff')
  })

  it('returns a ModelError unchanged and unwraps a RetryError to its last attempt', () => {
    const original = new ModelError('auth', 'no')
    expect(classifyModelError(original)).toBe(original)
    const retried = new RetryError({
      message: 'failed 3 times',
      reason: 'maxRetriesExceeded',
      errors: [apiError(500, 'a'), apiError(401, 'b')],
    })
    expect(classifyModelError(retried).kind).toBe('auth')
  })
})

describe('parseRetryAfter', () => {
  it('reads headers whatever their case and ignores what it cannot read', () => {
    expect(parseRetryAfter({ 'Retry-After': '2' })).toBe(2000)
    expect(parseRetryAfter({ 'retry-after': '0.5' })).toBe(500)
    expect(parseRetryAfter({ 'retry-after': '-3' })).toBeUndefined()
    expect(parseRetryAfter({ 'retry-after-ms': 'x', 'retry-after': '1' })).toBe(1000)
    expect(parseRetryAfter({})).toBeUndefined()
    expect(parseRetryAfter(undefined)).toBeUndefined()
  })

  it('never returns a negative wait for a date in the past', () => {
    expect(
      parseRetryAfter({ 'retry-after': 'Thu, 01 Jan 2026 00:00:00 GMT' }, Date.parse('2026-06-01T00:00:00Z')),
    ).toBe(0)
  })
})
