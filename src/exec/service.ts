/**
 * A long-lived process spoken to over its stdin and stdout — an MCP server — started like a command: from
 * the launcher, in its own process group, inside the sandbox when given one, and guarded so that it dies
 * with the worker (a new worker starts its own). The end of its stderr is kept, for the reason it ended;
 * stopping it kills the whole tree.
 */
import type { Socket } from 'node:net'
import { DEFAULT_KILL_GRACE_MS } from './defaults.js'
import { launch } from './launcher.js'
import { guardProcessGroup } from './orphan-guard.js'
import { ProcessTree } from './process-tree.js'
import { prepareSandbox, type SandboxedLaunch } from './sandbox/index.js'
import type { SandboxOptions } from './sandbox/types.js'

/** Characters of a service's stderr kept (its last ones), for why it ended. */
const STDERR_KEPT = 4_000

export interface ServiceOptions {
  argv: readonly string[]
  cwd: string
  env: Readonly<Record<string, string>>
  sandbox?: SandboxOptions
}

export interface ServiceExit {
  code: number | null
  signal: string | null
}

export interface Service {
  readonly pid: number
  /** What the service reads. */
  readonly stdin: Socket
  /** What it writes. */
  readonly stdout: Socket
  /** Settles once the process has ended. */
  readonly exited: Promise<ServiceExit>
  /** The last of what it wrote to stderr so far. */
  stderr(): string
  /** Ends the process and everything it started (SIGTERM, then SIGKILL). */
  stop(): Promise<void>
}

/**
 * Starts the service; rejects (nothing left running) when it cannot be started: the sandbox cannot be built,
 * or the program cannot be executed.
 */
export async function startService(options: ServiceOptions): Promise<Service> {
  let sandboxed: SandboxedLaunch | undefined
  let [program, ...args] = options.argv as [string, ...string[]]
  let env: Record<string, string> = { ...options.env }
  if (options.sandbox) {
    sandboxed = await prepareSandbox(options.sandbox, options.argv, env, options.cwd)
    program = sandboxed.program
    args = sandboxed.args
    env = sandboxed.env
  }
  const child = await launch(program, args, { cwd: options.cwd, env, stdin: true })
  const started = await new Promise<unknown>((resolve) => {
    child.once('spawn', () => resolve(undefined))
    child.once('error', resolve)
  })
  if (started !== undefined) {
    await sandboxed?.close()
    throw started
  }
  const pid = child.pid as number
  const tree = new ProcessTree(pid)
  const release = guardProcessGroup(pid)
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEPT)
  })
  let running = true
  const exited = new Promise<ServiceExit>((resolve) => {
    child.once('exit', (code: number | null, signal: NodeJS.Signals | null) => {
      running = false
      resolve({ code, signal })
    })
  })
  const ended = exited.then(async (exit) => {
    release()
    await sandboxed?.close()
    return exit
  })
  // The sandbox's disk bound holds for a service as for a command: past it, the service is stopped.
  const unwatch = sandboxed?.watch(() => void stop())
  const stop = async () => {
    unwatch?.()
    if (running) await tree.kill(DEFAULT_KILL_GRACE_MS, () => running, sandboxed !== undefined)
    child.stdin?.destroy()
    await ended
  }
  return {
    pid,
    stdin: child.stdin as Socket,
    stdout: child.stdout,
    exited: ended,
    stderr: () => stderr,
    stop,
  }
}
