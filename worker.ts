/**
 * The tether worker process: serves `agentRun` and its activities on one task queue.
 *
 * Environment: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default `default`),
 * TETHER_TASK_QUEUE (default `tether`), DATABASE_URL (else the embedded PostgreSQL in tether's state folder:
 * TETHER_STATE_DIR, default `$XDG_STATE_HOME/tether` or `~/.local/state/tether`), and the model provider variables (see README). Migrations run at start. SIGINT or
 * TETHER_FLOOR names the operator's floor file (docs/policy.md#the-operators-floor; default: the built-in
 * floor, sandbox enforced). SIGTERM stops it cleanly: running commands get 30 s to finish before they are cancelled and retried
 * elsewhere.
 */
import { NativeConnection } from '@temporalio/worker'
import { waitThroughOutages } from './src/activities/index.js'
import { openAudit } from './src/audit/index.js'
import { createTetherWorker, workerFloor } from './src/worker-setup.js'

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default'
const taskQueue = process.env.TETHER_TASK_QUEUE ?? 'tether'

try {
  // First: a floor file that does not load stops the worker before it connects to anything.
  const floor = workerFloor(process.env.TETHER_FLOOR)
  const audit = await openAudit({ migrate: true, outages: waitThroughOutages() })
  const connection = await NativeConnection.connect({ address })
  try {
    const worker = await createTetherWorker({ connection, namespace, taskQueue, audit, floor })
    console.log(
      `tether worker: Temporal ${address} (namespace ${namespace}), task queue ${taskQueue}, floor ${floor.source}`,
    )
    await worker.run()
  } finally {
    await connection.close()
    await audit.close()
  }
} catch (error) {
  console.error(`tether worker: ${(error as Error).message}`)
  process.exitCode = 1
}
