/**
 * The tether worker process: connects to Temporal and serves tether's workflows on one task queue.
 * Configuration: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default `default`),
 * TETHER_TASK_QUEUE (default `tether`).
 */
import { NativeConnection, Worker } from '@temporalio/worker'

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default'
const taskQueue = process.env.TETHER_TASK_QUEUE ?? 'tether'

const connection = await NativeConnection.connect({ address })
try {
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: { codePath: new URL('./workflow-bundle.js', import.meta.url).pathname },
    shutdownGraceTime: '30 seconds',
  })
  console.log(`tether worker on ${address}, namespace ${namespace}, task queue ${taskQueue}`)
  await worker.run()
} finally {
  await connection.close()
}
