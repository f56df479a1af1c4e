/**
 * `runCommand` inside an activity, with heartbeats and Temporal cancellation: what `tetherExec` and
 * `tetherVerify` run commands with.
 *
 * It heartbeats `{ elapsedMs, bytes, command }` on a timer (the first a quarter second in, so a quick command
 * costs none), whether or not the command prints anything, so a silent build neither looks dead nor misses
 * a cancellation (the activity only learns of one through a heartbeat's response). A cancellation aborts
 * the runner, which kills the whole process group and keeps the output so far. A non-zero exit, a signal,
 * a timeout and a missing program are results, not failures.
 * The workflow schedules those activities with `execActivityOptions` (src/exec/activity-options.ts).
 */
import { Context } from '@temporalio/activity'
import { type ExecResult, type RunCommandOptions, runCommand } from '../exec/index.js'
import { clip, formatArgv } from '../present/index.js'
import { heartbeatInterval } from './heartbeat.js'

export interface HeartbeatOptions {
  /** Default: a quarter of the activity's heartbeat timeout, between 100 ms and 5 s (5 s without one). */
  heartbeatIntervalMs?: number
}

/**
 * When the first heartbeat goes, if the command still runs: none at its start. Each heartbeat that reaches
 * the server is a write there (and a billed Action on Temporal Cloud), and most of an agent's commands
 * (`ls`, `cat`, `git status`) end within it; a longer one says what it runs before anyone following the run
 * sees the next second tick.
 */
const FIRST_BEAT_MS = 250

/** Heartbeat details: the command (clipped), how long it has run and how much it has printed. */
export interface ExecHeartbeat {
  elapsedMs: number
  bytes: number
  /** For people following the run (`--follow`, the inbox): the command as bash reads it, clipped. */
  command: string
}

/**
 * Runs the command inside an activity, heartbeating on a timer; the activity's cancellation (and
 * `options.signal`, if given) kills the tree. A cancelled command resolves with status `cancelled` and its
 * partial output, so the caller can record it before rethrowing.
 */
export async function runCommandWithHeartbeats(
  options: RunCommandOptions & HeartbeatOptions,
  context: Context = Context.current(),
): Promise<ExecResult> {
  const { heartbeatIntervalMs, ...runOptions } = options
  const started = performance.now()
  const command = clip(formatArgv(options.argv), 200)
  let bytes = 0
  const beat = () => {
    const details: ExecHeartbeat = { elapsedMs: Math.round(performance.now() - started), bytes, command }
    context.heartbeat(details)
  }
  const signal = options.signal
    ? AbortSignal.any([options.signal, context.cancellationSignal])
    : context.cancellationSignal
  const interval = heartbeatInterval(context, heartbeatIntervalMs)
  const first = setTimeout(beat, Math.min(FIRST_BEAT_MS, interval))
  const timer = setInterval(beat, interval)
  try {
    return await runCommand({
      ...runOptions,
      signal,
      onProgress: (progress) => {
        bytes = progress.bytes
        options.onProgress?.(progress)
      },
    })
  } finally {
    clearTimeout(first)
    clearInterval(timer)
  }
}
