/**
 * A local HTTP server that answers like a model API (OpenAI chat completions or Anthropic messages), so
 * the real AI SDK providers are tested over real HTTP. Each request takes the next queued reply.
 */
import { EventEmitter, once } from 'node:events'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedRequest {
  /** When the request arrived (epoch ms). */
  receivedAt: number
  method: string
  path: string
  headers: IncomingHttpHeaders
  // biome-ignore lint/suspicious/noExplicitAny: the wire JSON is inspected field by field in assertions.
  body: any
}

/** An HTTP answer, `drop` (close the connection without answering) or `hang` (never answer). */
export type Reply =
  | { status?: number; headers?: Record<string, string>; json?: unknown; raw?: string }
  | 'drop'
  | 'hang'

export interface LlmServer {
  /** Base URL including `/v1`, as the providers expect it. */
  baseUrl: string
  requests: RecordedRequest[]
  reply(...replies: Reply[]): void
  /** Forgets queued replies and recorded requests, so one test's leftovers never reach the next. */
  reset(): void
  /** Resolves once `count` requests have arrived. */
  received(count: number): Promise<void>
  close(): Promise<void>
}

export async function startLlmServer(): Promise<LlmServer> {
  const queue: Reply[] = []
  const requests: RecordedRequest[] = []
  const arrivals = new EventEmitter()
  const server = createServer(async (req, res) => {
    const receivedAt = Date.now()
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    requests.push({
      receivedAt,
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body: text ? JSON.parse(text) : undefined,
    })
    arrivals.emit('request')
    const reply = queue.shift() ?? { status: 599, json: { error: { message: 'the test queued no reply' } } }
    if (reply === 'drop') {
      req.socket.destroy()
      return
    }
    if (reply === 'hang') return
    const body = reply.raw ?? JSON.stringify(reply.json ?? {})
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers })
    res.end(body)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    reply: (...replies) => queue.push(...replies),
    reset: () => {
      queue.length = 0
      requests.length = 0
    },
    received: async (count) => {
      while (requests.length < count) await once(arrivals, 'request')
    },
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

export interface WireCall {
  id: string
  name: string
  args: unknown
}

export interface WireTurn {
  text?: string
  calls?: WireCall[]
  model?: string
  usage?: { input: number; output: number }
}

/** A successful OpenAI chat-completions answer. */
export function openAiChat(turn: WireTurn): Reply {
  const calls = turn.calls ?? []
  return {
    json: {
      id: 'chatcmpl-test',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: turn.model ?? 'test-model',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: turn.text ?? null,
            ...(calls.length > 0
              ? {
                  tool_calls: calls.map((call) => ({
                    id: call.id,
                    type: 'function',
                    function: {
                      name: call.name,
                      arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args),
                    },
                  })),
                }
              : {}),
          },
          finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
        },
      ],
      usage: {
        prompt_tokens: turn.usage?.input ?? 11,
        completion_tokens: turn.usage?.output ?? 7,
        total_tokens: (turn.usage?.input ?? 11) + (turn.usage?.output ?? 7),
      },
    },
  }
}

/** A successful Anthropic messages answer. */
export function anthropicMessage(turn: WireTurn): Reply {
  const calls = turn.calls ?? []
  return {
    json: {
      id: 'msg_test',
      type: 'message',
      role: 'assistant',
      model: turn.model ?? 'test-model',
      content: [
        ...(turn.text ? [{ type: 'text', text: turn.text }] : []),
        ...calls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.args })),
      ],
      stop_reason: calls.length > 0 ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: turn.usage?.input ?? 11, output_tokens: turn.usage?.output ?? 7 },
    },
  }
}

function errorReply(status: number, json: unknown, headers: Record<string, string> | undefined): Reply {
  return { status, json, ...(headers ? { headers } : {}) }
}

/** An OpenAI-style error answer (`code` is e.g. `context_length_exceeded`). */
export function openAiError(
  status: number,
  message: string,
  code?: string,
  headers?: Record<string, string>,
): Reply {
  return errorReply(
    status,
    { error: { message, type: 'invalid_request_error', param: null, code: code ?? null } },
    headers,
  )
}

/** An Anthropic-style error answer. */
export function anthropicError(
  status: number,
  message: string,
  type?: string,
  headers?: Record<string, string>,
): Reply {
  return errorReply(
    status,
    { type: 'error', error: { type: type ?? 'invalid_request_error', message } },
    headers,
  )
}
