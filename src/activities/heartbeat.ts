/**
 * Heartbeats on a timer for as long as an activity works. A worker that dies stops them, so Temporal notices
 * it after the activity's heartbeat timeout however long the work itself may take; a live one also hears of
 * cancellation through them.
 */
import { Context } from '@temporalio/activity'

const MAX_HEARTBEAT_INTERVAL_MS = 5_000
const MIN_HEARTBEAT_INTERVAL_MS = 100

/**
 * `requested`, else a quarter of the activity's heartbeat timeout, between 100 ms and 5 s (5 s without
 * one): well inside the timeout even on a loaded worker.
 */
export function heartbeatInterval(context: Context, requested?: number): number {
  if (requested !== undefined) return Math.max(MIN_HEARTBEAT_INTERVAL_MS, requested)
  const timeout = context.info.heartbeatTimeoutMs
  if (!timeout) return MAX_HEARTBEAT_INTERVAL_MS
  return Math.min(MAX_HEARTBEAT_INTERVAL_MS, Math.max(MIN_HEARTBEAT_INTERVAL_MS, Math.floor(timeout / 4)))
}

/** Runs `work`, heartbeating `details` on the interval above until it settles. */
export async function heartbeating<T>(
  work: () => Promise<T>,
  details?: unknown,
  context: Context = Context.current(),
): Promise<T> {
  const timer = setInterval(() => context.heartbeat(details), heartbeatInterval(context))
  try {
    return await work()
  } finally {
    clearInterval(timer)
  }
}
