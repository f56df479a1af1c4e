/**
 * Activity options for the exec activity, for workflow code: this file imports nothing from Node (only
 * other Node-free files), so the workflow bundle can import it directly as `src/exec/activity-options.js`.
 *
 * Why these values:
 * - `startToCloseTimeout`: the command's own timeout plus what the runner may add after it (drain, kill
 *   grace) plus slack for a loaded worker. The runner enforces the command timeout itself and returns
 *   `timed-out` with partial output, so Temporal's timeout is only the backstop for a stuck worker.
 * - `heartbeatTimeout`: the activity heartbeats every few seconds regardless of output. A dead worker is
 *   noticed after this long, and a cancellation reaches the activity within about 0.8 × this (the SDK
 *   sends heartbeats, and so learns of cancellation, at most that often).
 * - `retry.maximumAttempts: 1` as the default, for callers that run a command at most once. `agentRun`
 *   lifts the limit so a command cut off by a lost or stopping worker runs again on another, however often
 *   that happens (the activity itself counts the command's own failures) — unless the contract's `noRetry`
 *   list names it (`git push`, `npm publish`): then the next attempt only tells the model its outcome is
 *   unknown. `ExecInputError` is never retried: the same input is refused again.
 * - `cancellationType: WAIT_CANCELLATION_COMPLETED`: the workflow's cancellation waits until the activity
 *   has killed the process tree, so "cancelled" in history means nothing is left running.
 */
import { DEFAULT_DRAIN_MS, DEFAULT_KILL_GRACE_MS, DEFAULT_TIMEOUT_MS } from './defaults.js'

export const EXEC_HEARTBEAT_TIMEOUT_MS = 10_000
/** Room above the command's timeout for spawning, reporting and a busy worker. */
export const EXEC_START_TO_CLOSE_SLACK_MS = 30_000

export interface ExecActivityTuning {
  /** The runner's `killGraceMs`, when the workflow passes a non-default one. */
  killGraceMs?: number
  /** The runner's `drainMs`, when the workflow passes a non-default one. */
  drainMs?: number
  /** Shorter means faster cancellation and crash detection, at the cost of more heartbeat traffic. */
  heartbeatTimeoutMs?: number
}

/** Structurally an `ActivityOptions` of `@temporalio/workflow`; durations are in milliseconds. */
export interface ExecActivityOptions {
  startToCloseTimeout: number
  heartbeatTimeout: number
  retry: { maximumAttempts: number; nonRetryableErrorTypes: string[] }
  cancellationType: 'WAIT_CANCELLATION_COMPLETED'
}

/** `proxyActivities<…>(execActivityOptions(timeoutMs))` for a command run with that `timeoutMs`. */
export function execActivityOptions(
  timeoutMs: number = DEFAULT_TIMEOUT_MS,
  tuning: ExecActivityTuning = {},
): ExecActivityOptions {
  const killGraceMs = tuning.killGraceMs ?? DEFAULT_KILL_GRACE_MS
  const drainMs = tuning.drainMs ?? DEFAULT_DRAIN_MS
  const heartbeatTimeout = tuning.heartbeatTimeoutMs ?? EXEC_HEARTBEAT_TIMEOUT_MS
  const positive = { timeoutMs, heartbeatTimeout }
  for (const [name, value] of Object.entries({ ...positive, killGraceMs, drainMs })) {
    const least = name in positive ? 1 : 0
    if (!Number.isFinite(value) || value < least) {
      throw new RangeError(
        `execActivityOptions: ${name} must be a number of milliseconds ≥ ${least}, got ${value}`,
      )
    }
  }
  return {
    startToCloseTimeout: timeoutMs + drainMs + killGraceMs + EXEC_START_TO_CLOSE_SLACK_MS,
    heartbeatTimeout,
    retry: { maximumAttempts: 1, nonRetryableErrorTypes: ['ExecInputError'] },
    cancellationType: 'WAIT_CANCELLATION_COMPLETED',
  }
}
