/**
 * `runCommand` inside an activity, with heartbeats and Temporal cancellation: what `tetherExec` and
 * `tetherVerify` run commands with.
 *
 * It heartbeats `{ elapsedMs, bytes, command }` on a timer, whether or not the command prints anything, so a
 * silent build neither looks dead nor misses a cancellation (the activity only learns of one through a
 * heartbeat's response). A cancellation aborts the runner, which kills the whole process group and keeps
 * the output so far. A non-zero exit, a signal, a timeout and a missing program are results, not failures.
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
  beat()
  const timer = setInterval(beat, heartbeatInterval(context, heartbeatIntervalMs))
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
    clearInterval(timer)
  }
}
