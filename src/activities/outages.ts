/**
 * How a worker's audit store rides out a database outage: statements wait for the server (every write is
 * idempotent, so nothing is written twice), the activity that waits keeps heartbeating so it does not
 * look like a dead worker, and it stops waiting when the activity is cancelled.
 */
import { Context } from '@temporalio/activity'
import type { OutagePolicy } from '../audit/index.js'

function activity(): Context | undefined {
  try {
    return Context.current()
  } catch {
    return undefined
  }
}

export function waitThroughOutages(log: (line: string) => void = (line) => console.warn(line)): OutagePolicy {
  return {
    wait: true,
    stopWhen: () => activity()?.cancellationSignal.aborted === true,
    whileWaiting: () => activity()?.heartbeat(),
    log,
  }
}
