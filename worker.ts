/**
 * The tether worker process: serves `agentRun` and its activities on one task queue.
 *
 * Environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default `default`),
 * TETHER_TASK_QUEUE (default `tether`), DATABASE_URL (else the embedded Postgres under TETHER_STATE_DIR,
 * default `.tether`), and the model provider variables (see README). Migrations run at start. SIGINT or
 * SIGTERM stops it cleanly: running activities get 30 s to finish before they are cancelled and retried
 * elsewhere.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { NativeConnection, Worker } from '@temporalio/worker'
import { createActivities } from './src/activities/index.js'
import { openAudit } from './src/audit/index.js'

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default'
const taskQueue = process.env.TETHER_TASK_QUEUE ?? 'tether'
// The prebuilt bundle (npm run build) starts in milliseconds; from sources, webpack bundles at start.
const bundlePath = fileURLToPath(new URL('./workflow-bundle.js', import.meta.url))
const workflows = existsSync(bundlePath)
  ? { workflowBundle: { codePath: bundlePath } }
  : { workflowsPath: fileURLToPath(new URL('./src/workflows/index.ts', import.meta.url)) }

try {
  const audit = await openAudit({ stateDir: process.env.TETHER_STATE_DIR ?? '.tether', migrate: true })
  const connection = await NativeConnection.connect({ address })
  try {
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue,
      ...workflows,
      activities: createActivities({ audit }),
      shutdownGraceTime: '30 seconds',
    })
    console.log(`tether worker: Temporal ${address} (namespace ${namespace}), task queue ${taskQueue}`)
    await worker.run()
  } finally {
    await connection.close()
    await audit.close()
  }
} catch (error) {
  console.error(`tether worker: ${(error as Error).message}`)
  process.exitCode = 1
}
