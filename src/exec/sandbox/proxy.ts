/**
 * The egress proxy of one sandboxed command: an HTTP proxy (CONNECT for TLS and any TCP, absolute-form
 * requests for plain HTTP) on a Unix socket that is the sandbox's only way out. Every destination is judged
 * by the policy as the command named it, then resolved here, and refused when it resolves to loopback,
 * link-local (cloud metadata), an unspecified address or tether's own services — so a name that points at
 * 127.0.0.1 cannot reach the audit database. Inside the sandbox a small bridge listens on the sandbox's own
 * loopback and forwards to this socket, and HTTP(S)_PROXY point at it.
 */
import { lookup } from 'node:dns/promises'
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http'
import { isIP, connect as netConnect, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import type { NetworkAccess, NetworkDecision } from './types.js'

/** Decisions kept per command (a busy build can ask for thousands; the first ones say enough). */
const MAX_DECISIONS = 200

/** Whether `address` (an IP literal) is never reachable from a sandbox. */
export function unreachableAddress(address: string): string | undefined {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address
  if (isIP(v4) === 4) {
    const [a, b] = v4.split('.').map(Number) as [number, number]
    if (a === 127) return 'loopback'
    if (a === 0) return 'an unspecified address'
    if (a === 169 && b === 254) return 'link-local (cloud metadata)'
    return undefined
  }
  const v6 = address.toLowerCase()
  if (v6 === '::1') return 'loopback'
  if (v6 === '::') return 'an unspecified address'
  if (/^fe[89ab]/.test(v6)) return 'link-local (cloud metadata)'
  return undefined
}

export class EgressProxy {
  readonly decisions: NetworkDecision[] = []
  private dropped = 0
  private readonly sockets = new Set<Duplex>()

  private constructor(
    private readonly server: Server,
    private readonly access: NetworkAccess,
    private readonly blocked: Set<string>,
  ) {}

  /** Starts listening on the Unix socket `path`. */
  static async start(path: string, access: NetworkAccess): Promise<EgressProxy> {
    const server = createServer()
    const blocked = new Set((access.blocked ?? []).map((entry) => entry.toLowerCase()))
    const proxy = new EgressProxy(server, access, blocked)
    server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      proxy.track(socket)
      void proxy.tunnel(req, socket, head)
    })
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      void proxy.forward(req, res)
    })
    server.on('clientError', (_error, socket) => socket.destroy())
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(path, () => resolve())
    })
    return proxy
  }

  /** How many decisions were not kept because of the cap. */
  get omitted(): number {
    return this.dropped
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private track(socket: Duplex): void {
    this.sockets.add(socket)
    socket.once('close', () => this.sockets.delete(socket))
    socket.on('error', () => socket.destroy())
  }

  private record(decision: NetworkDecision): void {
    if (this.decisions.length < MAX_DECISIONS) this.decisions.push(decision)
    else this.dropped += 1
  }

  /** The address to connect to, or why not; records the decision either way. */
  private async judge(host: string, port: number): Promise<{ address: string } | { refused: string }> {
    const name = host.replace(/^\[|\]$/g, '')
    if (!name || !Number.isInteger(port) || port < 1 || port > 65_535) {
      const reason = `"${host}:${port}" is not a destination`
      this.record({ host, port, allowed: false, reason })
      return { refused: reason }
    }
    const verdict = this.access.allow(name, port)
    if (!verdict.allowed) {
      this.record({ host: name, port, allowed: false, reason: verdict.reason })
      return { refused: verdict.reason }
    }
    let addresses: string[]
    try {
      addresses = isIP(name) ? [name] : (await lookup(name, { all: true })).map((entry) => entry.address)
    } catch (error) {
      const reason = `${name} does not resolve (${(error as NodeJS.ErrnoException).code ?? 'lookup failed'})`
      this.record({ host: name, port, allowed: false, reason })
      return { refused: reason }
    }
    for (const address of addresses) {
      const boundary =
        unreachableAddress(address) ??
        (this.blocked.has(`${address}:${port}`) || this.blocked.has(`${name.toLowerCase()}:${port}`)
          ? "tether's own service"
          : undefined)
      if (boundary) {
        const reason = `${name} resolves to ${address}, ${boundary}, which the sandbox never reaches`
        this.record({ host: name, port, allowed: false, reason })
        return { refused: reason }
      }
    }
    this.record({ host: name, port, allowed: true, reason: verdict.reason })
    return { address: addresses[0] as string }
  }

  private async tunnel(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const target = req.url ?? ''
    const colon = target.lastIndexOf(':')
    const host = colon > 0 ? target.slice(0, colon) : target
    const port = colon > 0 ? Number(target.slice(colon + 1)) : Number.NaN
    const judged = await this.judge(host, port)
    if ('refused' in judged) {
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\ntether sandbox: ${judged.refused}\n`,
      )
      return
    }
    const upstream: Socket = netConnect({ host: judged.address, port })
    this.track(upstream)
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    upstream.once('error', (error) => {
      client.end(
        `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\ntether sandbox: ${error.message}\n`,
      )
    })
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL
    try {
      url = new URL(req.url ?? '')
    } catch {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end('tether sandbox: a proxy request needs an absolute URL\n')
      return
    }
    if (url.protocol !== 'http:') {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end('tether sandbox: use CONNECT for anything but http://\n')
      return
    }
    const port = url.port ? Number(url.port) : 80
    const judged = await this.judge(url.hostname, port)
    if ('refused' in judged) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end(`tether sandbox: ${judged.refused}\n`)
      return
    }
    const upstream = request(
      {
        host: judged.address,
        port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      },
    )
    upstream.once('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' })
      res.end(`tether sandbox: ${error.message}\n`)
    })
    req.pipe(upstream)
  }
}

/**
 * The bridge, run inside the sandbox as `node -e BRIDGE -- PORT SOCKET -- ARGV…`: it listens on the
 * sandbox's loopback, forwards each connection to the proxy's socket, runs the command and ends as it
 * ended. Plain JavaScript, so it runs the same from sources and from the built package.
 */
export const BRIDGE = `
const net = require('node:net')
const { spawn } = require('node:child_process')
const [port, socketPath, separator, ...argv] = process.argv.slice(1)
if (separator !== '--' || argv.length === 0) { process.stderr.write('tether bridge: bad arguments\\n'); process.exit(125) }
const server = net.createServer((inside) => {
  const outside = net.connect(socketPath)
  inside.on('error', () => outside.destroy())
  outside.on('error', () => inside.destroy())
  inside.pipe(outside)
  outside.pipe(inside)
})
server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' })
  child.on('error', (error) => { process.stderr.write('bwrap: execvp ' + argv[0] + ': ' + (error.code === 'ENOENT' ? 'No such file or directory' : error.message) + '\\n'); process.exit(1) })
  for (const name of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(name, () => child.kill(name))
  child.on('exit', (code, signal) => {
    if (signal) { process.removeAllListeners(signal); process.kill(process.pid, signal) }
    else process.exit(code)
  })
})
`
