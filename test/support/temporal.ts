/** Helpers for integration tests: connections to the run's real servers and Workers on the shared bundle. */
import { randomUUID } from 'node:crypto'
import { Client, Connection } from '@temporalio/client'
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker'
import { inject } from 'vitest'

export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID()}`
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
    connection,
    namespace: inject('namespace'),
    workflowBundle: { codePath: inject('workflowBundlePath') },
    ...options,
  })
  return { worker, connection }
}
