/**
 * Starts commands from a small helper process instead of from the worker itself.
 *
 * Node starts a process with fork + exec, and a fork copies the parent's page tables while the parent's
 * event loop waits: measured on one machine, 1.5 ms per spawn from a 50 MB process and 20 ms from a 450 MB
 * one — and a worker holding a workflow cache is the large one. The launcher stays small, forks on its own
 * time, and hands back the pid and, later, how the process ended. The command's stdout and stderr are unix
 * stream sockets whose far ends the worker holds: they behave as pipes do (end of file once every process
 * holding one has closed it), and the output never passes through the launcher.
 *
 * The launcher connects to the worker's socket server once per stream and first writes a random token that
 * only it and the worker know, so nothing else that reaches the server can pose as a command's output. A
 * long-lived process that is spoken to (an MCP server) gets a third stream as its stdin.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import { join } from 'node:path'
import { socketFolder, socketRoot } from './sockets.js'

/** The token opening each stream: who it is for, then which stream (0 stdout, 1 stderr, 2 stdin). */
const TOKEN_BYTES = 16
const HEADER_BYTES = TOKEN_BYTES + 1
/** How long a connection may take to say whose stream it is. */
const IDENTIFY_MS = 10_000

// Plain JavaScript run with `node -e`, so it works the same from sources and from the compiled package.
const LAUNCHER = `
const { spawn } = require('node:child_process')
const { closeSync, readdirSync, readFileSync, rmSync } = require('node:fs')
const { connect } = require('node:net')
// Descriptors the worker inherited without close-on-exec (a supervisor's pipe or socket) would reach every
// command through this process; Node's own all have it. Close the others (on Linux, where /proc says which).
try {
  for (const fd of readdirSync('/proc/self/fd').map(Number)) {
    if (fd < 3) continue
    try {
      const flags = /^flags:\\s+([0-7]+)/m.exec(readFileSync('/proc/self/fdinfo/' + fd, 'latin1'))
      if (flags && (parseInt(flags[1], 8) & 0o2000000) === 0) closeSync(fd)
    } catch {}
  }
} catch {}
const [root, address] = process.argv.slice(1)
// A worker that just died makes a send fail (EPIPE) before the channel reports its end; unheard, that error
// would end this process before its 'disconnect' handler removes the worker's socket folder.
const reply = (message) => { if (process.connected) process.send(message, () => {}) }
const stream = (token, fd) => new Promise((resolve, reject) => {
  const socket = connect(address)
  socket.once('error', reject)
  socket.once('connect', () => socket.write(Buffer.concat([Buffer.from(token, 'hex'), Buffer.of(fd)]), (error) => error ? reject(error) : resolve(socket)))
})
process.on('message', async ({ token, program, args, cwd, env, stdin }) => {
  let out, err, input
  try {
    ;[out, err, input] = await Promise.all([stream(token, 0), stream(token, 1), stdin ? stream(token, 2) : undefined])
  } catch (error) {
    out?.destroy(); err?.destroy(); input?.destroy()
    return reply({ token, event: 'error', code: 'ELAUNCHER', message: 'the launcher could not reach the worker: ' + error.message })
  }
  let child
  try {
    child = spawn(program, args, { cwd, env, stdio: [input ?? 'ignore', out, err], shell: false, detached: true })
  } catch (error) {
    return reply({ token, event: 'error', code: error.code, message: error.message })
  } finally {
    // The command holds its own copies now; ours must not keep the streams open.
    out.destroy(); err.destroy(); input?.destroy()
  }
  child.once('exit', (code, signal) => reply({ token, event: 'exit', code, signal }))
  // A pid means the program is running (an exec that failed gives none, and an error event instead): tell
  // the worker at once, so that it could end the command should this launcher die.
  if (child.pid !== undefined) reply({ token, event: 'spawn', pid: child.pid })
  else child.once('error', (error) => reply({ token, event: 'error', code: error.code, message: error.message }))
})
// The worker has gone (whichever way it ended): its socket folder (this socket's, and any egress proxy's
// it left behind) goes with this process.
process.on('disconnect', () => {
  try { rmSync(root, { recursive: true, force: true }) } catch {}
  process.exit(0)
})
process.on('SIGINT', () => {})
process.on('SIGTERM', () => {})
`

interface LaunchEvent {
  /** The command's token, which also names it between the launcher and the worker. */
  token: string
  event: 'spawn' | 'error' | 'exit'
  pid?: number
  code?: string | number | null
  message?: string
  signal?: NodeJS.Signals | null
}

/**
 * A command started by the launcher, shaped as the part of `ChildProcess` the runner uses: `pid`, the two
 * output streams once started, and the events `spawn`, `error` (with an errno-style `code`) and `exit`.
 */
export interface LaunchedProcess extends EventEmitter {
  pid?: number
  stdout: Socket
  stderr: Socket
  /** The process's stdin, when it was started with one (`stdin: true`). */
  stdin?: Socket
}

class Launched extends EventEmitter implements LaunchedProcess {
  pid?: number
  stdout!: Socket
  stderr!: Socket
  stdin?: Socket
  private readonly streams: (Socket | undefined)[]
  private spawned = false
  private announced = false
  private failed = false
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined

  constructor(
    readonly token: string,
    withStdin: boolean,
  ) {
    super()
    this.streams = withStdin ? [undefined, undefined, undefined] : [undefined, undefined]
  }

  /** Started and ended as far as this process will hear, or failed to start: nothing more will come. */
  get done(): boolean {
    return this.failed || (this.announced && this.exit !== undefined)
  }

  /** A stream arrived from the launcher; the command counts as started once it has all and its pid. */
  attach(fd: number, socket: Socket): void {
    if (fd >= this.streams.length || this.streams[fd] || this.failed) {
      socket.destroy()
      return
    }
    this.streams[fd] = socket
    this.announce()
  }

  take(message: LaunchEvent): void {
    if (this.done) return
    if (message.event === 'spawn') {
      this.pid = message.pid
      this.spawned = true
      this.announce()
    } else if (message.event === 'error') {
      // After the start, an error is the launcher's own business (a failed kill); the exit still comes.
      if (!this.spawned) this.fail(message.message ?? 'spawn failed', message.code)
    } else {
      // The streams may still be on their way: the exit is told after the start, never before.
      this.exit = { code: (message.code as number | null) ?? null, signal: message.signal ?? null }
      if (this.announced) this.emit('exit', this.exit.code, this.exit.signal)
    }
  }

  /** The launcher is gone: nobody can reap the command or tell its end, so it is killed and ends here. */
  lost(): void {
    if (this.done) return
    if (this.pid !== undefined) {
      try {
        process.kill(-this.pid, 'SIGKILL')
      } catch {
        // Gone already.
      }
    }
    if (!this.announced) {
      this.fail('the command launcher exited', 'ELAUNCHER')
      return
    }
    this.exit = { code: null, signal: 'SIGKILL' }
    this.emit('exit', null, 'SIGKILL')
  }

  private announce(): void {
    const [stdout, stderr, stdin] = this.streams
    if (!this.spawned || this.streams.includes(undefined) || this.announced) return
    this.announced = true
    this.stdout = stdout as Socket
    this.stderr = stderr as Socket
    if (stdin) this.stdin = stdin
    this.emit('spawn')
    if (this.exit) this.emit('exit', this.exit.code, this.exit.signal)
  }

  private fail(message: string, code: LaunchEvent['code']): void {
    this.failed = true
    for (const stream of this.streams) stream?.destroy()
    this.emit('error', Object.assign(new Error(message), { code }))
  }
}

class Launcher {
  /** Commands started and not yet ended, by token. */
  private readonly pending = new Map<string, Launched>()

  private constructor(
    private readonly child: ChildProcess,
    private readonly server: Server,
    private readonly cleanup: () => void,
  ) {
    child.on('message', (message: LaunchEvent) => {
      const launched = this.pending.get(message.token)
      launched?.take(message)
      if (launched?.done) this.forget(launched)
    })
    child.once('exit', () => this.close())
    child.once('error', () => this.close())
    server.on('connection', (socket) => this.identify(socket))
    this.idle()
  }

  static async start(): Promise<Launcher> {
    // A private folder for the socket, where no sandbox sees it (see sockets.ts).
    const folder = socketFolder('launch-')
    const address = join(folder, 's')
    const server = createServer()
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(address, () => resolve())
      })
      const child = spawn(process.execPath, ['-e', LAUNCHER, socketRoot(), address], {
        // Its own session: a Ctrl-C meant for the worker must not end the commands' launcher mid-shutdown.
        detached: true,
        stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
        serialization: 'json',
      })
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve)
        child.once('error', reject)
      })
      return new Launcher(child, server, () => rmSync(folder, { recursive: true, force: true }))
    } catch (error) {
      server.close()
      rmSync(folder, { recursive: true, force: true })
      throw error
    }
  }

  get alive(): boolean {
    return this.child.connected
  }

  launch(program: string, args: string[], options: LaunchOptions): LaunchedProcess {
    const launched = new Launched(randomBytes(TOKEN_BYTES).toString('hex'), options.stdin === true)
    this.pending.set(launched.token, launched)
    this.busy()
    this.child.send(
      {
        token: launched.token,
        program,
        args,
        cwd: options.cwd,
        env: options.env,
        stdin: options.stdin === true,
      },
      (error: Error | null) => {
        if (error) launched.lost()
      },
    )
    return launched
  }

  /** Reads a new connection's header and hands the socket to the command it names; strangers are cut. */
  private identify(socket: Socket): void {
    socket.on('error', () => socket.destroy())
    socket.setTimeout(IDENTIFY_MS, () => socket.destroy())
    const read = () => {
      const header = socket.read(HEADER_BYTES) as Buffer | null
      if (header === null) return
      socket.off('readable', read)
      socket.setTimeout(0)
      const launched = this.pending.get(header.subarray(0, TOKEN_BYTES).toString('hex'))
      const fd = header[TOKEN_BYTES] as number
      if (!launched || fd > 2) {
        socket.destroy()
        return
      }
      launched.attach(fd, socket)
      if (launched.done) this.forget(launched)
    }
    socket.on('readable', read)
  }

  private forget(launched: Launched): void {
    this.pending.delete(launched.token)
    if (this.pending.size === 0) this.idle()
  }

  /** While commands are out, the channel keeps this process alive (their exits are still to come). */
  private busy(): void {
    this.child.channel?.ref()
    this.server.ref()
  }

  private idle(): void {
    this.child.unref()
    this.child.channel?.unref()
    this.server.unref()
  }

  private close(): void {
    for (const launched of [...this.pending.values()]) {
      launched.lost()
      this.forget(launched)
    }
    this.server.close()
    this.cleanup()
  }
}

let launcher: Promise<Launcher> | undefined

export interface LaunchOptions {
  cwd: string
  env: NodeJS.ProcessEnv
  /** Give the process a stdin stream of ours (`LaunchedProcess.stdin`) instead of the null device. */
  stdin?: boolean
}

/**
 * Starts `program` with `args` from the launcher (started on first use, and again if it died): in a new
 * session, stdin the null device (or a stream, `stdin: true`), stdout and stderr streams back to this process.
 */
export async function launch(
  program: string,
  args: string[],
  options: LaunchOptions,
): Promise<LaunchedProcess> {
  for (;;) {
    if (!launcher) {
      const starting = Launcher.start()
      launcher = starting
      starting.catch(() => {
        if (launcher === starting) launcher = undefined
      })
    }
    const current = launcher
    const started = await current
    if (started.alive) return started.launch(program, args, options)
    if (launcher === current) launcher = undefined
  }
}
