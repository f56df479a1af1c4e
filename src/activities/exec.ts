/**
 * `runCommand` inside an activity, with heartbeats and Temporal cancellation: what `tetherExec` and
 * `tetherVerify` run commands with.
 *
 * It heartbeats `{ elapsedMs, bytes }` on a timer, whether or not the command prints anything, so a
 * silent build neither looks dead nor misses a cancellation (the activity only learns of one through a
 * heartbeat's response). A cancellation aborts the runner, which kills the whole process group and keeps
 * the output so far. A non-zero exit, a signal, a timeout and a missing program are results, not failures.
 * The workflow schedules those activities with `execActivityOptions` (src/exec/activity-options.ts).
 */
import { Context } from '@temporalio/activity'
import { type ExecResult, type RunCommandOptions, runCommand } from '../exec/index.js'
import { heartbeatInterval } from './heartbeat.js'

export interface HeartbeatOptions {
  /** Default: a quarter of the activity's heartbeat timeout, between 100 ms and 5 s (5 s without one). */
  heartbeatIntervalMs?: number
}

/** Heartbeat details: how long the command has run and how much it has printed. */
export interface ExecHeartbeat {
  elapsedMs: number
  bytes: number
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
  let bytes = 0
  const beat = () => {
    const details: ExecHeartbeat = { elapsedMs: Math.round(performance.now() - started), bytes }
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
