/**
 * runCommand: one command, argv only, in its own process group, with bounded capture and a whole-tree kill.
 *
 * Built on `node:child_process` rather than execa. execa signals only the direct child on timeout and
 * cancellation (its `forceKillAfterDelay` too), buffers whole streams unless told not to, and settles only
 * when the streams end, so a grandchild holding stdout open keeps it waiting; working around all three
 * would leave little of execa in use. `spawn(program, args, { shell: false, detached: true })` is exactly
 * the process we want (no shell, own session and group) — made by the launcher, so that a large worker is
 * never forked — and the rest is the small state machine below.
 * execa also stays a development dependency that way (v10 needs Node 22; we run on Node 20).
 */
import { constants } from 'node:os'
import type { Readable } from 'node:stream'
import { OutputCapture } from './capture.js'
import { ExecInputError, ExecSpawnError } from './errors.js'
import { type LaunchExit, type LaunchedProcess, launch } from './launcher.js'
import { guardProcessGroup } from './orphan-guard.js'
import { ProcessTree } from './process-tree.js'
import {
  prepareSandbox,
  SandboxBoundError,
  type SandboxedLaunch,
  type SandboxOptions,
} from './sandbox/index.js'
import type { ExecResult, ExecStatus, RunCommandOptions } from './types.js'
import { type ValidatedOptions, validateOptions } from './validate.js'

/** After the tree is gone, how long the pipes may take to report end of file before we close them. */
const PIPE_CLOSE_MS = 1_000
/**
 * The complaint when the sandboxed program cannot be executed: bwrap's (exit status 1), setpriv's when a
 * root worker's command becomes its identity first (126, or 127 for a missing one), or the shell's in a
 * sandbox built ahead (sandbox/ahead.ts: 126, or 127 for a missing one).
 */
const SANDBOX_EXEC_FAILED =
  /^(?:bwrap: execvp|setpriv: failed to execute|tether-sandbox: \d+: exec:) ([^\n]*): ([^\n]*)/
const SANDBOX_EXEC_CODES = new Set([1, 126, 127])
/** Signal numbers, for a sandboxed command whose end bwrap reports as exit 128 + signal. */
const SIGNAL_NAMES = new Map(
  Object.entries(constants.signals).map(([name, number]) => [number as number, name]),
)
/** Spawn errors that mean "this program cannot be run": data for the model, not a fault. */
const UNAVAILABLE_CODES = new Set(['ENOENT', 'EACCES', 'ENOTDIR', 'ELOOP', 'ENAMETOOLONG', 'EISDIR'])

/** Why the runner ended a command: its deadline, its caller, or a sandbox bound (the command's status stays what the kill made it). */
type Stop = 'timed-out' | 'cancelled' | 'bound'

/**
 * Runs `argv` and resolves with how it ended and what it printed; never rejects for the command's own
 * failure (non-zero exit, signal, timeout, missing program). Rejects with ExecInputError, nothing
 * spawned, for invalid options; with ExecSpawnError when the OS cannot start processes at all; with the
 * error an `onProgress` callback threw, after killing the tree.
 */
export async function runCommand(options: RunCommandOptions): Promise<ExecResult> {
  // Validation throws synchronously; inside this async function that still becomes a rejection.
  return new Run(validateOptions(options)).result()
}

function whenClosed(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.closed) resolve()
    else stream.once('close', () => resolve())
  })
}

/** Whether `promise` settles within `ms`; a plain timer, as an aborted sleep costs an exception per call. */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    promise.then(() => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}

/** Why `program` could not start, for the model; `problem` is an errno code or bwrap's strerror text. */
function unavailableReason(program: string, problem: string): string {
  const named = JSON.stringify(program)
  if (problem === 'ENOENT' || problem === 'No such file or directory' || problem === 'not found') {
    return program.includes('/')
      ? `${named} was not found (or the interpreter its #! line names was not)`
      : `no program named ${named} on PATH`
  }
  if (problem === 'EACCES' || problem === 'Permission denied')
    return `${named} is not executable (permission denied)`
  return `${named} cannot be run (${problem})`
}

class Run {
  private readonly started = performance.now()
  private readonly stdout: OutputCapture
  private readonly stderr: OutputCapture
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
  private progressError: { error: unknown } | undefined
  private requestStop: (stop: Stop) => void = () => {}
  private sandbox: SandboxedLaunch | undefined

  constructor(private readonly options: ValidatedOptions) {
    this.stdout = new OutputCapture(options.outputCeiling)
    this.stderr = new OutputCapture(options.outputCeiling)
  }

  async result(): Promise<ExecResult> {
    try {
      return await this.run()
    } finally {
      await this.sandbox?.close()
    }
  }

  private async run(): Promise<ExecResult> {
    const { signal } = this.options
    if (signal?.aborted) return this.finish('cancelled')
    const stopped = new Promise<Stop>((resolve) => {
      this.requestStop = resolve
    })
    const onAbort = () => this.requestStop('cancelled')
    signal?.addEventListener('abort', onAbort, { once: true })
    // The deadline runs from the command's start: its launch, or its hand-over to a sandbox built ahead.
    let timer: NodeJS.Timeout | undefined
    const arm = () => {
      timer ??= setTimeout(() => this.requestStop('timed-out'), this.options.timeoutMs)
    }
    const disarm = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    }
    try {
      const child = await this.start(stopped, arm)
      return 'status' in child ? child : await this.supervise(child, stopped, disarm)
    } finally {
      disarm()
    }
  }

  /** Starts the command (in its sandbox, when it has one); an ExecResult when it never started. */
  private async start(stopped: Promise<Stop>, arm: () => void): Promise<LaunchedProcess | ExecResult> {
    const { sandbox, cwd, argv } = this.options
    let [program, ...args] = argv as [string, ...string[]]
    let env = this.options.env
    if (sandbox) {
      const prepared = await this.prepare(true)
      if (prepared) return prepared
      const ahead = this.sandbox?.ahead
      if (ahead) {
        // A sandbox built ahead is already running: it is handed the command. Stopped meanwhile, it is
        // killed like any command; ended before it could start the command, nothing ran: one is built now.
        arm()
        if (await Promise.race([ahead.start(), stopped.then(() => true)])) return ahead.child
        await this.sandbox?.close()
        const rebuilt = await this.prepare(false)
        if (rebuilt) return rebuilt
      }
      const launched = this.sandbox as SandboxedLaunch
      program = launched.program
      args = launched.args
      env = launched.env
    }
    let child: LaunchedProcess
    arm()
    try {
      // From the launcher: a new session, so the child leads its own process group and no terminal
      // signals reach it; stdin the null device; stdout and stderr streams back to us.
      child = await launch(program, args, { cwd, env })
    } catch (error) {
      return this.notStarted(error)
    }
    const started = await new Promise<unknown>((resolve) => {
      child.once('spawn', () => resolve(undefined))
      child.once('error', resolve)
    })
    return started === undefined ? child : this.notStarted(started)
  }

  /** The command's sandbox (`this.sandbox`); an ExecResult when a bound keeps the command from starting. */
  private async prepare(takeWaiting: boolean): Promise<ExecResult | undefined> {
    const { sandbox, argv, env, cwd } = this.options
    this.sandbox = undefined
    try {
      this.sandbox = await prepareSandbox(
        sandbox as SandboxOptions,
        argv,
        env as Record<string, string>,
        cwd,
        takeWaiting,
      )
      return undefined
    } catch (error) {
      if (!(error instanceof SandboxBoundError)) throw error
      return { ...this.finish('unavailable'), reason: error.message, sandbox: error.report }
    }
  }

  private async supervise(
    child: LaunchedProcess,
    stopped: Promise<Stop>,
    disarm: () => void,
  ): Promise<ExecResult> {
    const { stdout, stderr } = child
    // Heard even when it came before this listener (a sandbox built ahead may have run its command by now).
    const exited = new Promise<void>((resolve) => {
      const ended = ({ code, signal }: LaunchExit) => {
        this.exit = { code, signal }
        resolve()
      }
      if (child.ended) ended(child.ended)
      else child.once('exit', (code, signal) => ended({ code, signal }))
    })
    const tree = new ProcessTree(child.pid!)
    // Should this process die mid-command, the guard kills the group: no command outlives its runner.
    const release = guardProcessGroup(child.pid!)
    const leaderRunning = () => this.exit === undefined
    stdout.on('data', (chunk: Buffer) => this.take(this.stdout, chunk))
    stderr.on('data', (chunk: Buffer) => this.take(this.stderr, chunk))
    const pipesClosed = Promise.all([whenClosed(stdout), whenClosed(stderr)])

    const unwatch = this.sandbox?.watch(() => this.requestStop('bound'))
    let stop: Stop | undefined
    try {
      stop = await Promise.race([exited.then(() => undefined), stopped])
      disarm()
      if (stop) {
        await tree.kill(this.options.killGraceMs, leaderRunning, this.sandbox !== undefined)
        await settlesWithin(exited, PIPE_CLOSE_MS)
      }
      // The child is gone; whatever still holds a pipe open or lingers in the group is a leftover. (A
      // sandbox's PID namespace ends with its leader, so there is nothing to look for there.)
      const drained = stop !== undefined || (await settlesWithin(pipesClosed, this.options.drainMs))
      if (!drained || (!this.sandbox && tree.alive()))
        await tree.kill(this.options.killGraceMs, leaderRunning)
      if (!(await settlesWithin(pipesClosed, PIPE_CLOSE_MS))) {
        // Held open by a process outside the tree (it left the session): stop reading rather than hang.
        stdout.destroy()
        stderr.destroy()
      }
    } finally {
      disarm()
      unwatch?.()
      release()
    }
    if (this.progressError) throw this.progressError.error
    const status: ExecStatus = stop && stop !== 'bound' ? stop : this.exit?.signal ? 'signalled' : 'exited'
    return this.finish(status)
  }

  private take(capture: OutputCapture, chunk: Buffer): void {
    capture.push(chunk)
    const { onProgress } = this.options
    if (!onProgress || this.progressError) return
    try {
      onProgress({
        elapsedMs: Math.round(performance.now() - this.started),
        bytes: this.stdout.bytes + this.stderr.bytes,
      })
    } catch (error) {
      // Thrown inside a stream event it would crash the process; end the command and reject instead.
      this.progressError = { error }
      this.requestStop('cancelled')
    }
  }

  private notStarted(error: unknown): ExecResult {
    const code = (error as NodeJS.ErrnoException).code ?? ''
    const program = this.options.argv[0]!
    if (code === 'E2BIG') {
      throw new ExecInputError(
        'argv',
        'with the environment, is larger than the OS accepts (E2BIG); pass less, e.g. through a file',
      )
    }
    if (!UNAVAILABLE_CODES.has(code)) {
      throw new ExecSpawnError(
        `could not start "${program}": ${(error as Error).message}; check the worker's resources`,
        {
          cause: error,
        },
      )
    }
    return { ...this.finish('unavailable'), reason: unavailableReason(program, code) }
  }

  private finish(status: ExecStatus): ExecResult {
    const result: ExecResult = {
      status,
      stdout: this.stdout.finish(),
      stderr: this.stderr.finish(),
      durationMs: Math.round(performance.now() - this.started),
    }
    if (this.exit?.code != null) result.exitCode = this.exit.code
    if (this.exit?.signal != null) result.signal = this.exit.signal
    if (this.sandbox && this.exit) this.sandboxed(result)
    return result
  }

  /**
   * bwrap ends as its command ended, but reports a death by signal as exit 128 + the signal's number (as a
   * shell does); it (or setpriv) also reports a program it could not execute, with its own message.
   */
  private sandboxed(result: ExecResult): void {
    const code = result.exitCode
    const name = code !== undefined && code > 128 ? SIGNAL_NAMES.get(code - 128) : undefined
    if (name) {
      delete result.exitCode
      result.signal = name
      if (result.status === 'exited') result.status = 'signalled'
    }
    const failed =
      code !== undefined && SANDBOX_EXEC_CODES.has(code) ? SANDBOX_EXEC_FAILED.exec(result.stderr.text) : null
    if (failed && result.status === 'exited') {
      result.status = 'unavailable'
      result.reason = unavailableReason(this.options.argv[0] as string, failed[2] as string)
      delete result.exitCode
    }
    const output = `${result.stdout.text}\n${result.stderr.text}`
    result.sandbox = (this.sandbox as SandboxedLaunch).report({ signal: result.signal, output })
  }
}
