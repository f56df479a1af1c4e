/**
 * The real AI SDK providers, configured by providerFromEnv, against a local HTTP server speaking the
 * OpenAI chat-completions and Anthropic messages wire formats: tool call round trips and every failure
 * class, over real sockets.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  ModelError,
  type ModelProvider,
  providerFromEnv,
  type TranscriptMessage,
} from '../../../src/model/index.js'
import { TOOL_NAMES } from '../../../src/tools/schemas.js'
import {
  anthropicError,
  anthropicMessage,
  type LlmServer,
  openAiChat,
  openAiError,
  type RecordedRequest,
  type Reply,
  startLlmServer,
  type WireTurn,
} from '../../support/llm-server.js'

/** `value` and everything in it frozen: writing to any of it throws (ES modules are strict). */
function frozen<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozen(inner)
    Object.freeze(value)
  }
  return value
}

interface Replayed {
  calls: Array<{ id: string; name: string; args: unknown }>
  results: Array<{ callId: string; output: string }>
}

interface Wire {
  name: string
  env(baseUrl: string): NodeJS.ProcessEnv
  credentials: string
  path: string
  credentialOnWire(request: RecordedRequest): string | undefined
  answer(turn: WireTurn): Reply
  error(status: number, message: string, headers?: Record<string, string>): Reply
  contextOverflow: Reply
  toolNames(body: RecordedRequest['body']): string[]
  replayed(body: RecordedRequest['body']): Replayed
}

// biome-ignore lint/suspicious/noExplicitAny: wire JSON.
type Json = any

const openAiWire = {
  path: '/v1/chat/completions',
  credentialOnWire: (request: RecordedRequest) => request.headers.authorization,
  answer: openAiChat,
  error: (status: number, message: string, headers?: Record<string, string>) =>
    openAiError(status, message, undefined, headers),
  contextOverflow: openAiError(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 131000 tokens.",
    'context_length_exceeded',
  ),
  toolNames: (body: Json) => body.tools.map((t: Json) => t.function.name),
  replayed: (body: Json): Replayed => ({
    calls: body.messages
      .flatMap((m: Json) => m.tool_calls ?? [])
      .map((c: Json) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments) })),
    results: body.messages
      .filter((m: Json) => m.role === 'tool')
      .map((m: Json) => ({ callId: m.tool_call_id, output: m.content })),
  }),
}

const wires: Wire[] = [
  {
    name: 'openai-compatible',
    env: (baseUrl) => ({
      TETHER_OPENAI_BASE_URL: baseUrl,
      TETHER_OPENAI_API_KEY: 'local-key',
      TETHER_MODEL: 'qwen:7b',
    }),
    credentials: 'TETHER_OPENAI_API_KEY',
    ...openAiWire,
  },
  {
    name: 'openrouter',
    env: (baseUrl) => ({
      OPENROUTER_BASE_URL: baseUrl,
      OPENROUTER_API_KEY: 'or-key',
      OPENROUTER_MODEL: 'a/b',
    }),
    credentials: 'OPENROUTER_API_KEY',
    ...openAiWire,
  },
  {
    name: 'openai',
    env: (baseUrl) => ({ OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'oa-key', OPENAI_MODEL: 'gpt-4.1' }),
    credentials: 'OPENAI_API_KEY',
    ...openAiWire,
  },
  {
    name: 'anthropic',
    env: (baseUrl) => ({
      ANTHROPIC_BASE_URL: baseUrl,
      ANTHROPIC_API_KEY: 'an-key',
      ANTHROPIC_MODEL: 'claude-x',
    }),
    credentials: 'ANTHROPIC_API_KEY',
    path: '/v1/messages',
    credentialOnWire: (request) => request.headers['x-api-key'] as string | undefined,
    answer: anthropicMessage,
    error: (status, message, headers) => anthropicError(status, message, undefined, headers),
    contextOverflow: anthropicError(400, 'prompt is too long: 210345 tokens > 200000 maximum'),
    toolNames: (body) => body.tools.map((t: Json) => t.name),
    replayed: (body): Replayed => {
      const parts = body.messages.flatMap((m: Json) => (Array.isArray(m.content) ? m.content : []))
      return {
        calls: parts
          .filter((p: Json) => p.type === 'tool_use')
          .map((p: Json) => ({ id: p.id, name: p.name, args: p.input })),
        results: parts
          .filter((p: Json) => p.type === 'tool_result')
          .map((p: Json) => ({
            callId: p.tool_use_id,
            output: typeof p.content === 'string' ? p.content : p.content[0].text,
          })),
      }
    },
  },
]

const question: TranscriptMessage = { role: 'user', content: 'Make the failing test pass.' }

let server: LlmServer
beforeAll(async () => {
  server = await startLlmServer()
})
afterAll(() => server.close())
beforeEach(() => server.reset())

describe.each(wires)('$name over HTTP', (wire) => {
  let provider: ModelProvider
  beforeAll(() => {
    provider = providerFromEnv(wire.env(server.baseUrl))
  })

  const ask = (signal?: AbortSignal) =>
    provider.generate({ system: 'You are tether.', messages: [question], ...(signal ? { signal } : {}) })

  /** Queues one reply, makes one call, and returns the ModelError it must fail with. */
  async function failure(reply: Reply): Promise<ModelError> {
    server.reply(reply)
    const error = await ask().then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(ModelError)
    // SDK retries are off: Temporal's retry of the activity is the only one.
    expect(server.requests).toHaveLength(1)
    return error as ModelError
  }

  it('returns tool calls, then reads their results back on the next turn', async () => {
    const calls = [
      { id: 'call_a', name: 'read_file', args: { path: 'src/sum.ts' } },
      { id: 'call_b', name: 'exec', args: { argv: ['npm', 'test', '--', 'sum'] } },
    ]
    server.reply(wire.answer({ text: 'Reading first.', calls, usage: { input: 321, output: 45 } }))
    const first = await ask()
    expect(first).toEqual({
      text: 'Reading first.',
      toolCalls: calls,
      usage: { inputTokens: 321, outputTokens: 45 },
      finishReason: 'tool-calls',
      modelId: 'test-model',
    })
    const [offered] = server.requests
    expect(offered?.path).toBe(wire.path)
    expect(wire.credentialOnWire(offered!)).toContain(wire.env('')[wire.credentials])
    expect(wire.toolNames(offered!.body).sort()).toEqual([...TOOL_NAMES].sort())
    expect(JSON.stringify(offered!.body)).toContain('You are tether.')

    // Frozen throughout, as a worker's kept transcripts hand messages out: the provider must not change them.
    const transcript: TranscriptMessage[] = frozen([
      question,
      { role: 'assistant', text: first.text, toolCalls: first.toolCalls },
      {
        role: 'tool',
        results: [
          { callId: 'call_a', name: 'read_file', output: '1\texport const sum = (a, b) => a - b' },
          { callId: 'call_b', name: 'exec', output: 'exit 1\nexpected 3, got -1' },
        ],
      },
    ])
    server.reply(wire.answer({ text: 'The sign is wrong.' }))
    const second = await provider.generate({ system: 'You are tether.', messages: transcript })
    expect(second).toMatchObject({ text: 'The sign is wrong.', toolCalls: [], finishReason: 'stop' })
    expect(wire.replayed(server.requests[1]!.body)).toEqual({
      calls,
      results: [
        { callId: 'call_a', output: '1\texport const sum = (a, b) => a - b' },
        { callId: 'call_b', output: 'exit 1\nexpected 3, got -1' },
      ],
    })
  })

  it('classifies 429 as a rate limit and honours Retry-After', async () => {
    const error = await failure(wire.error(429, 'Too many requests', { 'retry-after': '7' }))
    expect(error).toMatchObject({ kind: 'rate-limit', retryable: true, retryAfterMs: 7000, status: 429 })
  })

  it('honours retry-after-ms', async () => {
    const error = await failure(wire.error(429, 'Too many requests', { 'retry-after-ms': '250' }))
    expect(error.retryAfterMs).toBe(250)
  })

  it('classifies 500 as a retryable server error', async () => {
    expect(await failure(wire.error(500, 'internal error'))).toMatchObject({
      kind: 'server',
      retryable: true,
      status: 500,
    })
  })

  it('classifies 401 as an auth error that names the key variable', async () => {
    const error = await failure(wire.error(401, 'invalid api key'))
    expect(error).toMatchObject({ kind: 'auth', retryable: false, status: 401 })
    expect(error.message).toContain(wire.credentials)
    expect(error.message).toContain('invalid api key')
  })

  it('classifies a too-long prompt as a context overflow', async () => {
    expect(await failure(wire.contextOverflow)).toMatchObject({
      kind: 'context-overflow',
      retryable: false,
      status: 400,
    })
  })

  it('classifies another 400 as a bad request', async () => {
    expect(await failure(wire.error(400, 'unknown model'))).toMatchObject({
      kind: 'bad-request',
      retryable: false,
    })
  })

  it('classifies a dropped connection as a retryable transport error', async () => {
    expect(await failure('drop')).toMatchObject({ kind: 'transport', retryable: true })
  })

  it('classifies an unreadable answer as malformed', async () => {
    expect(await failure({ status: 200, raw: '{"id": "cut off' })).toMatchObject({
      kind: 'malformed',
      retryable: true,
    })
  })

  it('reports a deadline as a timeout, and passes a cancellation on as it came', async () => {
    server.reply('hang')
    await expect(ask(AbortSignal.timeout(200))).rejects.toMatchObject({ kind: 'timeout', retryable: true })
    server.reply('hang')
    const controller = new AbortController()
    const pending = ask(controller.signal)
    await server.received(2)
    const reason = new Error('run cancelled')
    controller.abort(reason)
    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).not.toBeInstanceOf(ModelError)
    expect(error).toBe(reason)
  })
})

describe('OpenAI-compatible servers without a key', () => {
  it('send no Authorization header (Ollama, vLLM)', async () => {
    const provider = providerFromEnv({ TETHER_OPENAI_BASE_URL: server.baseUrl, TETHER_MODEL: 'llama3.1:8b' })
    server.reply(openAiChat({ text: 'hi' }))
    expect((await provider.generate({ system: '', messages: [question] })).text).toBe('hi')
    expect(server.requests[0]?.headers.authorization).toBeUndefined()
    expect(server.requests[0]?.body.model).toBe('llama3.1:8b')
  })
})

describe('a transcript longer than the context window', () => {
  it('reaches the wire with its oldest tool outputs elided and the reply reserved', async () => {
    const env = {
      TETHER_OPENAI_BASE_URL: server.baseUrl,
      TETHER_MODEL: 'small',
      TETHER_CONTEXT_TOKENS: '8192',
    }
    const provider = providerFromEnv(env)
    const output = (n: number) => `${n}`.repeat(4000)
    const transcript: TranscriptMessage[] = [question]
    for (let n = 0; n < 6; n++) {
      transcript.push(
        { role: 'assistant', text: '', toolCalls: [{ id: `c${n}`, name: 'exec', args: { argv: ['make'] } }] },
        { role: 'tool', results: [{ callId: `c${n}`, name: 'exec', output: output(n) }] },
      )
    }
    server.reply(openAiChat({ text: 'ok' }))
    await provider.generate({ system: 'You are tether.', messages: transcript })
    const { body } = server.requests[0]!
    expect(body.max_tokens).toBe(2048)
    const sent = body.messages.filter((m: Json) => m.role === 'tool').map((m: Json) => m.content)
    expect(sent[0]).toBe('[output of exec elided to fit the context: 4000 characters]')
    expect(sent.slice(-3)).toEqual([output(3), output(4), output(5)])
  })
})
