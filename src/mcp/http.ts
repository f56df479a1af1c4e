/**
 * `fetch` for an operator's Streamable HTTP MCP server, as the worker reaches it: every connection's
 * destination is judged by the egress judge under the run's `net` rules (as addresses: the connection goes
 * to exactly the address judged, with no second lookup), redirects are not followed, and the operator's
 * headers (its credentials) are added here, in the worker, where no command and no model sees them.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP } from 'node:net'
import { Readable } from 'node:stream'
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js'
import type { EgressJudge } from '../exec/index.js'

/** A destination the policy (or the boundary) refused: nothing was sent. */
export class McpRefusedError extends Error {
  override name = 'McpRefusedError'
}

export function judgedFetch(judge: EgressJudge, headers: Readonly<Record<string, string>>): FetchLike {
  return async (input, init) => {
    const url = new URL(input.toString())
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80
    const judged = await judge.judge(url.hostname, port)
    if (!judged.allowed) throw new McpRefusedError(`${url.host} is not reached: ${judged.reason}`)
    const address = judged.address
    const merged = new Headers(init?.headers)
    for (const [name, value] of Object.entries(headers)) merged.set(name, value)
    const body = init?.body === undefined || init.body === null ? undefined : String(init.body)
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest
    return new Promise<Response>((resolve, reject) => {
      const outgoing = request(url, {
        method: init?.method ?? 'GET',
        headers: Object.fromEntries(merged.entries()),
        // The connection goes to the address that was judged, whatever a lookup now says.
        lookup: (_host, options, callback) => {
          const family = isIP(address)
          if ((options as { all?: boolean }).all) (callback as LookupAll)(null, [{ address, family }])
          else (callback as LookupOne)(null, address, family)
        },
        ...(init?.signal ? { signal: init.signal } : {}),
      })
      outgoing.once('error', reject)
      outgoing.once('response', (incoming) => resolve(toResponse(incoming)))
      outgoing.end(body)
    })
  }
}

type LookupOne = (error: Error | null, address: string, family: number) => void
type LookupAll = (error: Error | null, addresses: Array<{ address: string; family: number }>) => void

function toResponse(incoming: IncomingMessage): Response {
  const headers = new Headers()
  for (const [name, value] of Object.entries(incoming.headers)) {
    if (value === undefined) continue
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item)
  }
  const status = incoming.statusCode ?? 502
  const empty = status === 204 || status === 205 || status === 304
  if (empty) incoming.resume()
  const body = empty ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>)
  return new Response(body, { status, statusText: incoming.statusMessage ?? '', headers })
}
