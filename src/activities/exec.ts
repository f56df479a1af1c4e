/**
 * The exec activity: `runCommand` with heartbeats and Temporal cancellation.
 *
 * It heartbeats `{ elapsedMs, bytes }` on a timer, whether or not the command prints anything, so a
 * silent build neither looks dead nor misses a cancellation (the activity only learns of one through a
 * heartbeat's response). A cancellation aborts the runner, which kills the whole process group and keeps
 * the output so far. A non-zero exit, a signal, a timeout and a missing program are results, not failures.
 *
 * Workflow side: `proxyActivities<{ execCommand: typeof execCommand }>(execActivityOptions(timeoutMs))`,
 * importing `execActivityOptions` from `src/exec/activity-options.js` (free of Node imports). It sets
 * start-to-close to the command timeout plus drain, kill grace and 30 s of slack; a 10 s heartbeat
 * timeout; one attempt (commands may not be idempotent) with `ExecInputError` non-retryable; and
 * `WAIT_CANCELLATION_COMPLETED`, so a cancelled workflow sees the cancellation only once the tree is dead.
 */
import { Context } from '@temporalio/activity'
import { ApplicationFailure, CancelledFailure } from '@temporalio/common'
import { ExecInputError, type ExecResult, type RunCommandOptions, runCommand } from '../exec/index.js'
import { heartbeatInterval } from './heartbeat.js'

/** What a workflow passes: the runner's options that survive serialisation. */
export type ExecActivityInput = Omit<RunCommandOptions, 'signal' | 'onProgress'>

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
 * partial output, so the caller can record it before rethrowing; `execCommand` does that rethrow.
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

/**
 * The activity. Resolves with the ExecResult for every way a command can end on its own; throws
 * `ApplicationFailure` (non-retryable, type `ExecInputError`) for invalid input, `ExecSpawnError` when the
 * worker cannot start processes, and, when the activity was cancelled, a `CancelledFailure` whose
 * `details[0]` is the partial ExecResult, so Temporal records a cancelled activity and nothing is lost.
 */
export async function execCommand(input: ExecActivityInput): Promise<ExecResult> {
  const context = Context.current()
  let result: ExecResult
  try {
    result = await runCommandWithHeartbeats(input, context)
  } catch (error) {
    if (error instanceof ExecInputError) {
      throw ApplicationFailure.nonRetryable(error.message, 'ExecInputError', { field: error.field })
    }
    throw error
  }
  if (result.status === 'cancelled' && context.cancellationSignal.aborted) {
    const reason = context.cancellationSignal.reason
    const message = reason instanceof Error ? reason.message : String(reason ?? 'CANCELLED')
    throw new CancelledFailure(message, [result])
  }
  return result
}
