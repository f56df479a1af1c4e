/**
 * A session with one MCP server for one run on this worker: a sandboxed stdio process tether started, or a
 * Streamable HTTP endpoint reached through the egress judge. tether's client declares no capabilities: a
 * server that asks it for sampling (the model), elicitation (a person) or roots is refused, so a server
 * can reach neither. A server that exits or hangs ends its session; the next use starts a new one.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import { type EgressJudge, type ServiceOptions, startService } from '../exec/index.js'
import type { McpToolAnnotations, McpToolDefinition } from '../tools/index.js'
import { isMcpToolName } from '../tools/index.js'
import { judgedFetch, McpRefusedError } from './http.js'
import { ServiceTransport } from './transport.js'

/** How the worker reaches one server. */
export type McpConnection =
  | { kind: 'stdio'; service: ServiceOptions }
  | { kind: 'http'; url: string; headers: Readonly<Record<string, string>>; judge: EgressJudge | undefined }

/** How long starting a server and its handshake may take. */
const CONNECT_TIMEOUT_MS = 60_000
/** Pages of a listing read at most (a server that pages forever is cut off). */
const LISTING_PAGES = 50
const CLIENT = { name: 'tether', version: '1' }

export interface Listing {
  tools: McpToolDefinition[]
  /** Tools whose names tether cannot offer (not `[A-Za-z0-9_.-]`, or too long), with why. */
  skipped: string[]
}

export type CallOutcome =
  | { status: 'ok' | 'error'; result: CallToolResult }
  | { status: 'timed-out' | 'unavailable' | 'cancelled'; reason: string }

export class McpSession {
  private ended: string | undefined

  private constructor(
    readonly server: string,
    private readonly client: Client,
    private readonly describeEnd: () => string,
  ) {
    client.onclose = () => {
      this.ended ??= this.describeEnd()
    }
  }

  /** Starts (stdio) or reaches (HTTP) the server and completes the MCP handshake. */
  static async open(server: string, connection: McpConnection): Promise<McpSession> {
    const client = new Client(CLIENT, { capabilities: {} })
    let transport: Transport
    let describeEnd: () => string
    if (connection.kind === 'stdio') {
      const service = await startService(connection.service)
      transport = new ServiceTransport(service)
      let exit: string | undefined
      void service.exited.then(({ code, signal }) => {
        const stderr = service.stderr().trim().split('\n').slice(-3).join(' | ')
        exit = `${signal ? `was killed by ${signal}` : `exited with code ${code}`}${stderr ? ` (stderr: ${stderr})` : ''}`
      })
      describeEnd = () => `the server ${server} ${exit ?? 'closed its connection'}`
    } else {
      if (!connection.judge) {
        throw new McpRefusedError(
          `${new URL(connection.url).host} is not reached: no net rule of the run's policy allows any destination`,
        )
      }
      transport = new StreamableHTTPClientTransport(new URL(connection.url), {
        fetch: judgedFetch(connection.judge, connection.headers),
        requestInit: { redirect: 'manual' },
      })
      describeEnd = () => `the connection to ${server} closed`
    }
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS })
    } catch (error) {
      await client.close().catch(() => {})
      throw error
    }
    return new McpSession(server, client, describeEnd)
  }

  /** Why the session ended (the server exited, the connection closed), or undefined while it is live. */
  get endedBecause(): string | undefined {
    return this.ended
  }

  /** Every tool the server lists now, named `server.tool`. */
  async listTools(timeoutMs: number): Promise<Listing> {
    const tools: McpToolDefinition[] = []
    const skipped: string[] = []
    let cursor: string | undefined
    for (let page = 0; page < LISTING_PAGES; page++) {
      const listed = await this.client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs })
      for (const tool of listed.tools) {
        const name = `${this.server}.${tool.name}`
        if (!isMcpToolName(name)) {
          skipped.push(
            `${JSON.stringify(tool.name.slice(0, 80))} (a tool name must be 1–128 of A–Z, a–z, 0–9, _, - and .)`,
          )
          continue
        }
        tools.push({
          name,
          description: tool.description ?? '',
          inputSchema: tool.inputSchema,
          ...(tool.annotations ? { annotations: annotationsOf(tool.annotations) } : {}),
        })
      }
      cursor = listed.nextCursor
      if (!cursor) break
    }
    return { tools, skipped }
  }

  /** Calls `tool` (the server's own name for it); a timeout, an exit or a cancellation is an outcome. */
  async callTool(
    tool: string,
    args: Record<string, unknown>,
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<CallOutcome> {
    try {
      const result = (await this.client.callTool({ name: tool, arguments: args }, undefined, {
        timeout: options.timeoutMs,
        signal: options.signal,
      })) as CallToolResult
      return { status: result.isError ? 'error' : 'ok', result }
    } catch (error) {
      if (options.signal.aborted) return { status: 'cancelled', reason: 'the call was cancelled' }
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return { status: 'timed-out', reason: `no answer within ${Math.round(options.timeoutMs / 1000)} s` }
      }
      if (this.ended) return { status: 'unavailable', reason: this.ended }
      // A JSON-RPC error answer (a bad argument, an unknown tool) is the server's word: an error result.
      if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
        return {
          status: 'error',
          result: { isError: true, content: [{ type: 'text', text: error.message }] },
        }
      }
      return { status: 'unavailable', reason: this.ended ?? (error as Error).message }
    }
  }

  async close(): Promise<void> {
    this.ended ??= 'closed by tether'
    await this.client.close().catch(() => {})
  }
}

function annotationsOf(annotations: Record<string, unknown>): McpToolAnnotations {
  const kept: McpToolAnnotations = {}
  if (typeof annotations.title === 'string') kept.title = annotations.title
  for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const) {
    if (typeof annotations[hint] === 'boolean') kept[hint] = annotations[hint]
  }
  return kept
}

/**
 * The live sessions of this worker, one per run and server, closed after `idleMs` unused (a run that ended,
 * or moved to another worker). A session that ended is replaced on the next use.
 */
export class McpSessions {
  private readonly entries = new Map<string, { session: Promise<McpSession>; timer: NodeJS.Timeout }>()

  constructor(private readonly idleMs = 5 * 60_000) {}

  async get(runId: string, server: string, open: () => Promise<McpSession>): Promise<McpSession> {
    const key = `${runId}\u0000${server}`
    const entry = this.entries.get(key)
    if (entry) {
      const session = await entry.session.catch(() => undefined)
      if (session && !session.endedBecause) {
        this.touch(key, entry)
        return session
      }
      this.forget(key)
    }
    const session = open()
    const fresh = { session, timer: this.timer(key) }
    this.entries.set(key, fresh)
    session.catch(() => {
      if (this.entries.get(key) === fresh) this.forget(key)
    })
    return session
  }

  /** Ends a run's session with a server (after a timeout: a server that hangs is started again). */
  async drop(runId: string, server: string): Promise<void> {
    const key = `${runId}\u0000${server}`
    const entry = this.entries.get(key)
    this.forget(key)
    const session = await entry?.session.catch(() => undefined)
    await session?.close()
  }

  async closeAll(): Promise<void> {
    const sessions = [...this.entries.values()].map((entry) => entry.session)
    for (const key of [...this.entries.keys()]) this.forget(key)
    await Promise.all(sessions.map((session) => session.then((s) => s.close()).catch(() => {})))
  }

  private touch(key: string, entry: { timer: NodeJS.Timeout }): void {
    clearTimeout(entry.timer)
    entry.timer = this.timer(key)
  }

  private timer(key: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      const entry = this.entries.get(key)
      this.forget(key)
      void entry?.session.then((session) => session.close()).catch(() => {})
    }, this.idleMs)
    timer.unref()
    return timer
  }

  private forget(key: string): void {
    const entry = this.entries.get(key)
    if (entry) clearTimeout(entry.timer)
    this.entries.delete(key)
  }
}
