/** The exec runner's public types (DESIGN §4). Pure declarations, so workflow code may import them too. */
import type { SandboxOptions, SandboxReport } from './sandbox/types.js'

/** How a command ended. `unavailable` means it never started (no such program, or not executable). */
export type ExecStatus = 'exited' | 'signalled' | 'timed-out' | 'cancelled' | 'unavailable'

/** One output stream: a bounded head+tail text plus facts about the full stream, for the audit. */
export interface StreamCapture {
  /** First and last characters of the stream (Unicode code points), middle replaced by the elision marker. */
  text: string
  /** Characters left out of `text`; 0 when the whole stream fits. */
  elided: number
  /** Bytes the stream carried, all of them. */
  bytes: number
  /** Lines in the stream: newline bytes, plus one for a last line without a newline. */
  lines: number
  /** Hex sha256 of the raw bytes of the whole stream. */
  sha256: string
}

export interface ExecResult {
  status: ExecStatus
  /** Set when the direct child exited on its own (also for `timed-out`/`cancelled` when it did). */
  exitCode?: number
  /** Set when a signal ended the direct child, e.g. `SIGTERM`. */
  signal?: string
  /** Why the command is `unavailable`, written for the model (e.g. `no program named "cargo" on PATH`). */
  reason?: string
  stdout: StreamCapture
  stderr: StreamCapture
  /** Wall time from spawn until the tree was gone and both streams were closed. */
  durationMs: number
  /** Set when the command ran in the sandbox: its limits, the limit it hit, its network requests. */
  sandbox?: SandboxReport
}

export interface ExecProgress {
  /** Milliseconds since the command started. */
  elapsedMs: number
  /** Bytes of stdout and stderr together so far. */
  bytes: number
}

/**
 * `inherit` passes tether's own environment; `scrubbed` passes it without secrets and hijacks (see
 * `SCRUBBED_ENV`); a record is the child's whole environment, nothing inherited.
 */
export type ExecEnv = 'inherit' | 'scrubbed' | Readonly<Record<string, string>>

export interface RunCommandOptions {
  /** Program first, then its arguments; handed to the OS as an array, never to a shell. */
  argv: readonly string[]
  /** Absolute directory to run in; must exist (and lie inside `workspace` when that is given). */
  cwd: string
  /** When given, `cwd` must resolve (symlinks followed) to this directory or one below it. */
  workspace?: string
  /** Default 15 minutes. */
  timeoutMs?: number
  /** Abort → status `cancelled`, the whole process group killed, partial output kept. */
  signal?: AbortSignal
  /** Characters kept per stream (head + tail), default 12,000. */
  outputCeiling?: number
  /** Delay between SIGTERM and SIGKILL when killing the tree, default 2 s. */
  killGraceMs?: number
  /**
   * How long to keep reading after the direct child exits while something else still holds its stdout or
   * stderr open (a background grandchild), default 250 ms. After it, leftovers are killed.
   */
  drainMs?: number
  /**
   * Default `inherit`; with `sandbox`, default is the sandbox allowlist (`sandboxEnvironment`), since a
   * sandboxed command should not see the worker's secrets.
   */
  env?: ExecEnv
  /**
   * Run inside the OS sandbox (bubblewrap): read-only host, read-write workspace, private home and /tmp,
   * own PID and network namespaces, resource limits. Rejects with SandboxUnavailableError, nothing run,
   * when the sandbox cannot be built on this machine.
   */
  sandbox?: SandboxOptions
  /** Called after every chunk of output with the totals so far; must be cheap and must not throw. */
  onProgress?: (progress: ExecProgress) => void
}
