/**
 * Workflows that measure the floor: what Temporal itself costs per activity and per timer on a server, with
 * activities that do nothing. Loaded by the benches' floor worker (support.ts), not run as a bench.
 */
import { proxyActivities, proxyLocalActivities, sleep } from '@temporalio/workflow'

interface FloorActivities {
  noop(): Promise<void>
}

const remote = proxyActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' })
const local = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' })

export async function floorRemote(activities: number): Promise<void> {
  for (let i = 0; i < activities; i++) await remote.noop()
}

export async function floorLocal(activities: number): Promise<void> {
  for (let i = 0; i < activities; i++) await local.noop()
}

export async function floorTimer(ms: number): Promise<void> {
  await sleep(ms)
}
