/**
 * Building a Worker that serves tether: shared by `worker.ts`, `tether dev`, the demo and the plugin, so
 * they all load the same workflow code the same way.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type NativeConnection, Worker } from '@temporalio/worker'
import { createActivities } from './activities/index.js'
import type { AuditStore } from './audit/index.js'
import type { ModelProvider } from './model/index.js'

/** tether's workflows module: the compiled `.js` in a build, the `.ts` source in a checkout. */
export function tetherWorkflowsPath(): string {
  const js = fileURLToPath(new URL('./workflows/index.js', import.meta.url))
  return existsSync(js) ? js : js.replace(/\.js$/, '.ts')
}

/** The prebuilt bundle of a build (`npm run build`), which starts in milliseconds; else bundle at start. */
export function workflowSource(): { workflowBundle: { codePath: string } } | { workflowsPath: string } {
  const bundle = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url))
  return existsSync(bundle)
    ? { workflowBundle: { codePath: bundle } }
    : { workflowsPath: tetherWorkflowsPath() }
}

export interface TetherWorkerOptions {
  connection: NativeConnection
  namespace: string
  taskQueue: string
  audit: AuditStore
  provider?: (choice: string | undefined) => ModelProvider
}

export function createTetherWorker(options: TetherWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...workflowSource(),
    activities: createActivities({
      audit: options.audit,
      ...(options.provider ? { provider: options.provider } : {}),
    }),
    // Running commands get this long to finish on shutdown before they are cancelled and retried elsewhere.
    shutdownGraceTime: '30 seconds',
  })
}
