/** Helpers for integration tests: connections to the run's real servers and Workers on the shared bundle. */
import { randomUUID } from 'node:crypto'
import { Client, Connection, type WorkflowHandle } from '@temporalio/client'
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker'
import { inject } from 'vitest'
import { TETHER_WORKER_DEFAULTS } from '../../src/embed/worker.js'

export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID()}`
}

/** The run's pending activity of type `activity`, as Temporal describes it now, if it has one. */
export async function pendingActivity(handle: WorkflowHandle, activity: string) {
  const { raw } = await handle.describe()
  return raw.pendingActivities?.find((a) => a.activityType?.name === activity)
}

export async function connectClient(): Promise<{ client: Client; close: () => Promise<void> }> {
  const connection = await Connection.connect({ address: inject('temporalAddress') })
  const client = new Client({ connection, namespace: inject('namespace') })
  return { client, close: () => connection.close() }
}

export async function createWorker(
  options: Omit<WorkerOptions, 'connection' | 'namespace' | 'workflowBundle' | 'workflowsPath'>,
): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') })
  const worker = await Worker.create({
    ...TETHER_WORKER_DEFAULTS,
    connection,
    namespace: inject('namespace'),
    workflowBundle: { codePath: inject('workflowBundlePath') },
    ...options,
  })
  return { worker, connection }
}

/**
 * With TETHER_RECORD_HISTORIES=1, saves a run's history under test/histories/ so the replay test guards
 * today's workflow code against it. Recorded histories are committed; re-record them deliberately.
 */
export async function recordHistory(
  handle: { fetchHistory(): Promise<unknown> },
  name: string,
): Promise<void> {
  if (!process.env.TETHER_RECORD_HISTORIES) return
  const { writeFile } = await import('node:fs/promises')
  const { historyToJSON } = await import('@temporalio/common/lib/proto-utils.js')
  const history = (await handle.fetchHistory()) as Parameters<typeof historyToJSON>[0]
  await writeFile(new URL(`../histories/${name}.json`, import.meta.url), `${historyToJSON(history)}\n`)
}
