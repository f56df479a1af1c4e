/**
 * The egress proxy of one sandboxed command: an HTTP proxy (CONNECT for TLS and any TCP, absolute-form
 * requests for plain HTTP) on a Unix socket that is the sandbox's only way out. Inside the sandbox a small
 * bridge listens on the sandbox's own loopback and forwards to this socket, and HTTP(S)_PROXY point at it.
 *
 * Destinations are judged as addresses, never as text (src/policy/addresses.ts). The policy judges the
 * destination as the command named it (an IP address in its canonical spelling); a name is then resolved
 * once, every address it resolves to is judged, and the connection goes to the first of them — there is no
 * second lookup to rebind. Refused whatever the policy says: the worker itself (loopback, unspecified, its
 * own interface addresses, and a connection whose far end turns out to be this machine) and tether's own
 * services (`blocked`, resolved and compared as addresses). Refused unless a net allow rule names the
 * address or a range holding it: private, link-local (cloud metadata), ULA, CGNAT, NAT64 and every other
 * special-purpose range.
 */

import { lookup } from 'node:dns/promises'
import { once } from 'node:events'
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http'
import { connect as netConnect, type Socket } from 'node:net'
import { networkInterfaces } from 'node:os'
import type { Duplex } from 'node:stream'
// The address module alone: the policy's index brings its whole engine (the shell parser), 200 ms to load.
import {
  ambiguousIpv4,
  formatIp,
  type IpAddress,
  nat64Ipv4,
  parseIp,
  sameIp,
  specialRange,
  splitHostPort,
} from '../../policy/addresses.js'
import type { NetworkAccess, NetworkDecision } from './types.js'

/** Decisions kept per command (a busy build can ask for thousands; the first ones say enough). */
const MAX_DECISIONS = 200
const HOST_NAME = /^[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?$/
const NEVER = 'the worker itself, which no command reaches'
const UNLESS_NAMED =
  'which a command reaches only where a net allow rule names the address or a range holding it'

/** What the judge says of one destination. */
export type Judgement =
  | { allowed: true; address: string; reason: string }
  | { allowed: false; address?: string; reason: string }

interface BlockedService {
  entry: string
  port: number
  /** Undefined when its host does not resolve: then nothing on its port is reached. */
  addresses: IpAddress[] | undefined
}

/** Every address of this machine's interfaces, with the interface's name. */
function ownAddresses(): Array<{ name: string; address: IpAddress }> {
  const own: Array<{ name: string; address: IpAddress }> = []
  for (const [name, entries] of Object.entries(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const address = parseIp(entry.address)
      if (address) own.push({ name, address })
    }
  }
  return own
}

async function resolve(name: string): Promise<IpAddress[]> {
  const entries = await lookup(name, { all: true })
  const addresses = entries.map((entry) => parseIp(entry.address))
  if (addresses.length === 0 || addresses.some((address) => !address)) throw new Error('no address')
  return addresses as IpAddress[]
}

async function resolveBlocked(entries: readonly string[]): Promise<BlockedService[]> {
  const services = await Promise.all(
    entries.map(async (entry): Promise<BlockedService | undefined> => {
      const split = splitHostPort(entry.trim().toLowerCase())
      // A socket folder (PostgreSQL's `?host=/run/postgresql`) is no network destination.
      if (!split?.port || split.host === '' || split.host.startsWith('/')) return undefined
      const literal = parseIp(split.host)
      const addresses = literal ? [literal] : await resolve(split.host).catch(() => undefined)
      return { entry, port: split.port, addresses }
    }),
  )
  return services.filter((service) => service !== undefined)
}

/** Whether a connection's far end is this machine: its near end is loopback, or the same address. */
function reachesThisMachine(socket: Socket): boolean {
  const near = socket.localAddress ? parseIp(socket.localAddress) : undefined
  const far = socket.remoteAddress ? parseIp(socket.remoteAddress) : undefined
  if (!near || !far) return true
  return sameIp(near, far) || specialRange(near)?.self === true
}

/**
 * Judges the destinations of one command (see the module comment); resolves tether's services once. The
 * worker's own MCP client judges an operator's HTTP server with `reachSelf: 'when-named'`: this machine's
 * addresses (a server beside the worker) are then reached where a net allow rule names the address, like a
 * private one — never tether's own services.
 */
export class EgressJudge {
  private services: Promise<BlockedService[]> | undefined

  constructor(
    private readonly access: NetworkAccess,
    private readonly options: { reachSelf?: 'never' | 'when-named' } = {},
  ) {}

  /** `host` is a name or an IP address (IPv6 with or without brackets). */
  async judge(host: string, port: number): Promise<Judgement> {
    const bracketed = /^\[(.*)\]$/.exec(host)
    const given = (bracketed ? bracketed[1]! : host).toLowerCase()
    if (!Number.isInteger(port) || port < 1 || port > 65_535) {
      return { allowed: false, reason: `"${host}:${port}" is not a destination` }
    }
    const literal = parseIp(given)
    if (!literal) {
      if (ambiguousIpv4(given)) {
        return {
          allowed: false,
          reason: `"${host}" is an ambiguous IPv4 address: write it as four decimal numbers`,
        }
      }
      if (bracketed || !HOST_NAME.test(given) || given.length > 254) {
        return { allowed: false, reason: `"${host}" is not a host name or an IP address` }
      }
    }
    const canonical = literal ? formatIp(literal) : given.replace(/\.$/, '')
    const verdict = this.access.allow(canonical, port)
    if (!verdict.allowed) return { allowed: false, reason: verdict.reason }
    let addresses: IpAddress[]
    try {
      addresses = literal ? [literal] : await resolve(canonical)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'lookup failed'
      return { allowed: false, reason: `${canonical} does not resolve (${code})` }
    }
    for (const address of addresses) {
      const boundary = await this.boundary(address, port)
      if (!boundary) continue
      const text = formatIp(address)
      const subject = !literal
        ? `${canonical} resolves to ${text},`
        : given === text
          ? `${text} is`
          : `${given} is ${text},`
      return { allowed: false, address: text, reason: `${subject} ${boundary}` }
    }
    return { allowed: true, address: formatIp(addresses[0]!), reason: verdict.reason }
  }

  /** Why the sandbox refuses `address`, beginning with what it is (`loopback (127.0.0.0/8), …`), if it does. */
  private async boundary(address: IpAddress, port: number): Promise<string | undefined> {
    // A NAT64 address reaches the IPv4 address it embeds: both are judged.
    const embedded = nat64Ipv4(address)
    const judged = embedded ? [address, embedded] : [address]
    const what = (candidate: IpAddress, description: string) =>
      candidate === address ? description : `NAT64 for ${formatIp(candidate)}, ${description}`
    const own = ownAddresses()
    for (const candidate of judged) {
      const range = specialRange(candidate)
      const mine = own.find((entry) => sameIp(entry.address, candidate))
      if (!range?.self && !mine) continue
      if (this.options.reachSelf === 'when-named') {
        const said = this.access.address?.(formatIp(candidate), port)
        if (said?.named && !said.refused) continue
      }
      if (range?.self) return what(candidate, `${range.kind} (${range.range}): ${NEVER}`)
      return what(candidate, `an address of this worker (${mine!.name}): ${NEVER}`)
    }
    for (const candidate of judged) {
      const said = this.access.address?.(formatIp(candidate), port)
      if (said?.refused) return what(candidate, `which the policy refuses: ${said.refused}`)
      const range = specialRange(candidate)
      if (range && !said?.named) return what(candidate, `${range.kind} (${range.range}), ${UNLESS_NAMED}`)
    }
    this.services ??= resolveBlocked(this.access.blocked ?? [])
    for (const service of await this.services) {
      if (service.port !== port) continue
      if (!service.addresses) {
        return `on port ${port}, where tether's own service ${service.entry} is, whose host does not resolve: no command reaches that port`
      }
      if (judged.some((candidate) => service.addresses!.some((blocked) => sameIp(blocked, candidate)))) {
        return `tether's own service (${service.entry}), which no command reaches`
      }
    }
    return undefined
  }
}

type Opened = { socket: Socket } | { refused: string } | { failed: string }

export class EgressProxy {
  readonly decisions: NetworkDecision[] = []
  private dropped = 0
  private readonly sockets = new Set<Duplex>()
  private readonly judge: EgressJudge

  private constructor(
    private readonly server: Server,
    access: NetworkAccess,
  ) {
    this.judge = new EgressJudge(access)
  }

  /** Starts listening on the Unix socket `path`. */
  static async start(path: string, access: NetworkAccess): Promise<EgressProxy> {
    const server = createServer()
    const proxy = new EgressProxy(server, access)
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

  /** A connection to exactly the address that was judged, or why not; records the decision either way. */
  private async open(host: string, port: number): Promise<Opened> {
    const named = host.replace(/^\[(.*)\]$/, '$1')
    const judged = await this.judge.judge(host, port)
    if (!judged.allowed) {
      this.record({
        host: named,
        port,
        allowed: false,
        reason: judged.reason,
        ...(judged.address ? { address: judged.address } : {}),
      })
      return { refused: judged.reason }
    }
    const socket = netConnect({ host: judged.address, port })
    this.track(socket)
    try {
      await once(socket, 'connect')
    } catch (error) {
      this.record({ host: named, port, allowed: true, reason: judged.reason, address: judged.address })
      return { failed: (error as Error).message }
    }
    // An address no interface lists may still be this machine's (a `local` route): the kernel knows.
    if (reachesThisMachine(socket)) {
      socket.destroy()
      const reason = `${judged.address} leads back to this worker (${socket.localAddress} to ${socket.remoteAddress}): ${NEVER}`
      this.record({ host: named, port, allowed: false, reason, address: judged.address })
      return { refused: reason }
    }
    this.record({ host: named, port, allowed: true, reason: judged.reason, address: judged.address })
    return { socket }
  }

  private async tunnel(req: IncomingMessage, client: Duplex, head: Buffer): Promise<void> {
    const target = req.url ?? ''
    const split = splitHostPort(target)
    let opened: Opened
    if (split?.port === undefined) {
      const reason = `"${target}" is not host:port`
      this.record({ host: target, port: 0, allowed: false, reason })
      opened = { refused: reason }
    } else {
      opened = await this.open(split.bracketed ? `[${split.host}]` : split.host, split.port)
    }
    if ('refused' in opened) {
      client.end(
        `HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\ntether sandbox: ${opened.refused}\n`,
      )
      return
    }
    if ('failed' in opened) {
      client.end(
        `HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\n\r\ntether sandbox: ${opened.failed}\n`,
      )
      return
    }
    const upstream = opened.socket
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    if (head.length > 0) upstream.write(head)
    upstream.pipe(client)
    client.pipe(upstream)
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
    const opened = await this.open(url.hostname, port)
    if (!('socket' in opened)) {
      const [status, reason] = 'refused' in opened ? [403, opened.refused] : [502, opened.failed]
      res.writeHead(status, { 'content-type': 'text/plain' }).end(`tether sandbox: ${reason}\n`)
      return
    }
    const upstream = request(
      {
        // The connection is the one opened to the judged address: no lookup happens here.
        createConnection: () => opened.socket,
        host: url.hostname,
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
