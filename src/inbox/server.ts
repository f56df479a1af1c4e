/**
 * The inbox's HTTP server (Node's `http`): routes, access, security headers, and live regions as
 * server-sent events — each live URL re-renders its fragment every second and sends it only when it
 * changed.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Client } from '@temporalio/client'
import { AuditInputError, type AuditStore } from '../audit/index.js'
import { APPROVER_NAME } from '../identity/index.js'
import { formatBytes } from '../present/index.js'
import { usualPort } from '../stack/index.js'
import { type Access, accessProblem, identify, loginToken, newLocalToken, TOKEN_COOKIE } from './access.js'
import { forwardAnswer } from './answer.js'
import { browserScript } from './assets.js'
import { loadApproval, loadApprovalLive, loadInbox, loadRun, loadRunPage } from './data.js'
import { InboxError } from './errors.js'
import type { Html } from './html.js'
import {
  approvalContext,
  approvalPage,
  approvalStatus,
  fragmentVersion,
  inboxList,
  inboxPage,
  messagePage,
  OUTCOMES,
  type RunFilters,
  runLive,
  runPage,
  runsPage,
  type Viewer,
} from './pages.js'
import { STYLE } from './style.js'
import type { Clock } from './views.js'

export interface InboxOptions {
  audit: AuditStore
  client: Client
  namespace: string
  /** Default 127.0.0.1; any other address needs an access mode other than `local`. */
  host?: string
  /** Default 7280; 0 picks a free port. */
  port?: number
  /** When the port is taken, take a free one instead of failing (what `tether dev` does). */
  anyPortIfTaken?: boolean
  /** Default: local, with a token of its own (see `Inbox.loginUrl`). */
  access?: Access
  /** The Temporal UI's base URL, for a link on each run page. */
  temporalUi?: string | undefined
  /** How often live regions are re-rendered (default 1 s). */
  liveIntervalMs?: number
  /** tether's MCP server over Streamable HTTP at `/mcp`, behind the inbox's access (`mcpHttpHandler`). */
  mcp?: { handle(request: IncomingMessage, response: ServerResponse): Promise<void>; close(): Promise<void> }
  log?: (line: string) => void
}

/** Renders a page's live regions by id (undefined once what the page shows is gone). */
type Regions = () => Promise<Record<string, Html> | undefined>

export interface Inbox {
  url: string
  /** The link that signs a browser in: with the local token in local mode; the bare URL otherwise. */
  loginUrl: string
  port: number
  close(): Promise<void>
}

/** Where `tether inbox` listens unless told otherwise (and `tether dev`, unless it is taken). */
export const INBOX_PORT = usualPort('inbox', {})

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ')

/** Starts serving; refuses (InboxError, one line) a non-loopback address without an access mode. */
export async function startInbox(options: InboxOptions): Promise<Inbox> {
  const host = options.host ?? '127.0.0.1'
  const access: Access = options.access ?? { mode: 'local', token: newLocalToken() }
  const problem = accessProblem(host, access.mode)
  if (problem) throw new InboxError(problem)
  // Built before the first page is served (and any problem with it reported now, not to a browser).
  await browserScript()
  const live = new Set<ServerResponse>()
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      // An address no page has (a broken %-escape, a cursor or filter the inbox never made) is the asker's.
      if (error instanceof URIError || error instanceof AuditInputError) {
        if (response.headersSent) return void response.end()
        const what =
          error instanceof URIError ? 'a broken %-escape' : 'a page cursor or filter this inbox never made'
        return send(response, 400, 'text/html', messagePage('Not a page', `That address holds ${what}.`))
      }
      options.log?.(`inbox: ${request.method} ${request.url}: ${(error as Error).stack ?? error}`)
      if (!response.headersSent) {
        send(response, 500, 'text/html', messagePage('Something went wrong', firstLine(error)))
      } else response.end()
    })
  })

  const clockFor = (cookies: Map<string, string>): Clock => ({
    now: new Date(),
    timeZone: validZone(cookies.get('tether_tz')) ?? 'UTC',
  })

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    for (const [name, value] of Object.entries(securityHeaders)) response.setHeader(name, value)
    const url = new URL(request.url ?? '/', 'http://inbox')
    const path = url.pathname
    const cookies = parseCookies(request.headers.cookie)

    if (path === '/favicon.ico') return void response.writeHead(204).end()
    if (path === '/login') {
      const token = loginToken(access, url.searchParams.get('token'))
      if (!token)
        return send(
          response,
          401,
          'text/html',
          messagePage('Not signed in', 'That link holds no valid token.'),
        )
      const secure = request.headers['x-forwarded-proto'] === 'https' ? '; Secure' : ''
      response.setHeader('set-cookie', `${TOKEN_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/${secure}`)
      return void response.writeHead(303, { location: '/' }).end()
    }
    const visitor = identify(access, request, cookies)
    if (!visitor.ok) {
      return path.startsWith('/api/')
        ? sendJson(response, visitor.status, { ok: false, type: 'Unauthorised', message: visitor.message })
        : send(response, visitor.status, 'text/html', messagePage('Not signed in', visitor.message))
    }
    // MCP clients are programs, not pages: the endpoint has the inbox's access, and speaks only MCP.
    if (path === '/mcp') {
      if (!options.mcp)
        return sendJson(response, 404, { ok: false, type: 'NotFound', message: 'no MCP endpoint here' })
      return options.mcp.handle(request, response)
    }
    const viewerName = cookies.get('tether_viewer')
    const viewer: Viewer = {
      name: viewerName && APPROVER_NAME.test(viewerName) ? viewerName : visitor.user,
      user: visitor.user,
    }

    if (request.method === 'POST') {
      const answer = /^\/api\/approvals\/([^/]+)\/answer$/.exec(path)
      if (!answer) return sendJson(response, 404, { ok: false, type: 'NotFound', message: `no ${path}` })
      const refused = postRefusal(request)
      if (refused) return sendJson(response, 403, { ok: false, type: 'Forbidden', message: refused })
      const body = await readJson(request)
      if (!body.ok) {
        return sendJson(response, body.tooLarge ? 413 : 400, {
          ok: false,
          type: 'InvalidDecision',
          message: body.tooLarge
            ? `the body is over ${formatBytes(BODY_LIMIT)}; an answer is far smaller`
            : 'the body is not JSON',
        })
      }
      const { status, reply } = await forwardAnswer(
        options,
        decodeURIComponent(answer[1] as string),
        body.value,
        visitor.user,
      )
      return sendJson(response, status, reply)
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return send(response, 405, 'text/plain', 'method not allowed')
    }

    if (path === '/api/approvers') {
      // Who a public key is, by the recorded policies: the name an imported key signs as is never typed.
      const key = url.searchParams.get('key') ?? ''
      if (!/^ed25519:[A-Za-z0-9+/_-]{20,64}={0,2}$/.test(key)) {
        return sendJson(response, 400, { ok: false, type: 'InvalidKey', message: 'key=ed25519:… expected' })
      }
      return sendJson(response, 200, { ok: true, names: await options.audit.approverNames(key) })
    }
    if (path === '/assets/app.js') return send(response, 200, 'text/javascript', await browserScript(), true)
    if (path === '/assets/app.css') return send(response, 200, 'text/css', STYLE, true)
    if (path === '/healthz') return send(response, 200, 'text/plain', 'ok')

    const clock = clockFor(cookies)
    if (path === '/') {
      const page = pageNumber(url.searchParams.get('page'))
      const data = await loadInbox(options.audit, viewer.name, page)
      return send(response, 200, 'text/html', inboxPage(data, viewer, clock))
    }
    if (path === '/runs') {
      const filters = runFilters(url.searchParams)
      const runs = await options.audit.listRuns({ ...filters, limit: 50 })
      return send(
        response,
        200,
        'text/html',
        runsPage({ runs: runs.items, next: runs.next }, filters, viewer, clock),
      )
    }
    const approvalPath = /^\/approvals\/([^/]+)$/.exec(path)
    if (approvalPath) {
      const data = await loadApproval(options.audit, decodeURIComponent(approvalPath[1] as string))
      if (!data) return notFound(response, 'No such approval.', viewer)
      return send(response, 200, 'text/html', approvalPage(data, viewer, clock))
    }
    const runPath = /^\/runs\/([^/]+)$/.exec(path)
    if (runPath) {
      const data = await loadRunPage(options, decodeURIComponent(runPath[1] as string))
      if (!data) return notFound(response, 'No such run in the audit.', viewer)
      return send(response, 200, 'text/html', runPage(data, viewer, clock))
    }

    const regions = liveRegions(path, url, viewer, () => clockFor(cookies))
    if (regions) return stream(request, response, regions, url.searchParams.get('v') ?? '')
    return notFound(response, `Nothing at ${path}.`, viewer)
  }

  /** The live regions behind a page's event stream, rendered together; undefined when it is not one. */
  function liveRegions(path: string, url: URL, viewer: Viewer, clock: () => Clock): Regions | undefined {
    if (path === '/live/inbox') {
      const page = pageNumber(url.searchParams.get('page'))
      return async () => ({
        inbox: inboxList(await loadInbox(options.audit, viewer.name, page), viewer, clock()),
      })
    }
    const run = /^\/live\/runs\/([^/]+)$/.exec(path)
    if (run) {
      const runId = decodeURIComponent(run[1] as string)
      return async () => {
        const data = await loadRun(options, runId)
        return data && { 'run-live': runLive(data, clock()) }
      }
    }
    const approval = /^\/live\/approvals\/([^/]+)$/.exec(path)
    if (approval) {
      const approvalId = decodeURIComponent(approval[1] as string)
      return async () => {
        const row = await options.audit.approval(approvalId)
        if (!row) return undefined
        const data = { approval: row, ...(await loadApprovalLive(options.audit, row)) }
        return { 'approval-status': approvalStatus(data, clock()), 'approval-context': approvalContext(data) }
      }
    }
    return undefined
  }

  /**
   * Server-sent events: each region of the page whenever it differs from what the page last got (the page
   * says what it has: `v=id:version,…`). One stream per page, so a page holds one connection.
   */
  function stream(
    request: IncomingMessage,
    response: ServerResponse,
    render: Regions,
    versions: string,
  ): void {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    })
    response.write('retry: 2000\n\n')
    live.add(response)
    const last = new Map(
      versions
        .split(',')
        .map((pair) => pair.split(':'))
        .filter((pair): pair is [string, string] => pair.length === 2),
    )
    let busy = false
    let quiet = 0
    const tick = async () => {
      if (busy) return
      busy = true
      try {
        let sent = false
        for (const [id, fragment] of Object.entries((await render()) ?? {})) {
          const version = fragmentVersion(fragment)
          if (last.get(id) === version) continue
          last.set(id, version)
          sent = true
          response.write(`event: update\ndata: ${JSON.stringify({ id, version, html: fragment.markup })}\n\n`)
        }
        if (sent) quiet = 0
        else if (++quiet % 15 === 0) response.write(': still here\n\n')
      } catch (error) {
        options.log?.(`inbox: live ${request.url}: ${firstLine(error)}`)
      } finally {
        busy = false
      }
    }
    const timer = setInterval(tick, options.liveIntervalMs ?? 1_000)
    void tick()
    const stop = () => {
      clearInterval(timer)
      live.delete(response)
    }
    request.on('close', stop)
    response.on('close', stop)
  }

  await listen(server, options.port ?? INBOX_PORT, host, options.anyPortIfTaken ?? false)
  const { port } = server.address() as AddressInfo
  const shown = host.includes(':') ? `[${host}]` : host
  const url = `http://${shown}:${port}`
  return {
    url,
    loginUrl: access.mode === 'local' ? `${url}/login?token=${access.token}` : url,
    port,
    close: async () => {
      for (const response of live) response.end()
      await options.mcp?.close()
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      // Kept-alive connections would hold the close open until they time out.
      server.closeAllConnections()
      await closed
    },
  }
}

async function listen(
  server: ReturnType<typeof createServer>,
  port: number,
  host: string,
  anyPortIfTaken: boolean,
): Promise<void> {
  const attempt = (p: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(p, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  try {
    await attempt(port)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' && anyPortIfTaken && port !== 0) return attempt(0)
    if (code === 'EADDRINUSE')
      throw new InboxError(`port ${port} on ${host} is taken; choose another with --port`)
    if (code === 'EADDRNOTAVAIL') throw new InboxError(`${host} is not an address of this machine`)
    throw error
  }
}

const securityHeaders = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
}

function send(response: ServerResponse, status: number, type: string, body: string, cache = false): void {
  response.writeHead(status, {
    'content-type': `${type}; charset=utf-8`,
    'cache-control': cache ? 'no-cache' : 'no-store',
  })
  response.end(body)
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  send(response, status, 'application/json', JSON.stringify(body))
}

function notFound(response: ServerResponse, message: string, viewer: Viewer): void {
  send(response, 404, 'text/html', messagePage('Not found', message, viewer))
}

/**
 * Answers come from this inbox's own pages only: JSON (a cross-site form cannot send it without asking
 * first) from the same origin.
 */
function postRefusal(request: IncomingMessage): string | undefined {
  if (!/^application\/json\b/.test(request.headers['content-type'] ?? '')) return 'answers are sent as JSON'
  const site = request.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin') return 'answers come from this inbox’s own pages'
  const origin = request.headers.origin
  if (origin !== undefined) {
    const host = request.headers['x-forwarded-host'] ?? request.headers.host
    let from: string | undefined
    try {
      from = new URL(origin).host
    } catch {
      from = undefined
    }
    if (from !== host) return 'answers come from this inbox’s own pages'
  }
  return undefined
}

const BODY_LIMIT = 256 * 1024

async function readJson(
  request: IncomingMessage,
): Promise<{ ok: true; value: unknown } | { ok: false; tooLarge: boolean }> {
  let size = 0
  const chunks: Buffer[] = []
  for await (const chunk of request) {
    size += (chunk as Buffer).length
    if (size > BODY_LIMIT) return { ok: false, tooLarge: true }
    chunks.push(chunk as Buffer)
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) }
  } catch {
    return { ok: false, tooLarge: false }
  }
}

function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>()
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at === -1) continue
    try {
      cookies.set(part.slice(0, at).trim(), decodeURIComponent(part.slice(at + 1).trim()))
    } catch {
      // a cookie this inbox did not write
    }
  }
  return cookies
}

function validZone(zone: string | undefined): string | undefined {
  if (!zone || zone.length > 64) return undefined
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone })
    return zone
  } catch {
    return undefined
  }
}

function pageNumber(value: string | null): number {
  const page = Number(value ?? 1)
  return Number.isSafeInteger(page) && page >= 1 && page <= 100_000 ? page : 1
}

function runFilters(params: URLSearchParams): RunFilters {
  const status = params.get('status')
  const outcome = params.get('outcome')
  const waiting = params.get('waiting')
  const before = params.get('before')
  return {
    ...(status === 'running' || status === 'finished' ? { status } : {}),
    ...(outcome && (OUTCOMES as readonly string[]).includes(outcome) ? { outcome } : {}),
    ...(waiting === 'yes' ? { waiting: true } : waiting === 'no' ? { waiting: false } : {}),
    ...(before ? { before } : {}),
  }
}

function firstLine(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).split('\n')[0] ?? ''
}
