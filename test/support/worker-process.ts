/**
 * A tether worker in its own process, so a test can SIGKILL it mid-command like a crashed machine.
 * Env: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, DATABASE_URL, TETHER_TASK_QUEUE, WORKFLOW_BUNDLE; TETHER_FLOOR
 * (optional: the operator's floor file); SHUTDOWN_GRACE (optional, e.g. `2 seconds`), so a test of a rolling
 * restart need not wait 30 s per SIGTERM.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker'
import { createActivities, waitThroughOutages } from '../../src/activities/index.js'
import { openAudit } from '../../src/audit/index.js'
import { TETHER_WORKER_DEFAULTS, workerFloor } from '../../src/embed/worker.js'

Runtime.install({ logger: new DefaultLogger('WARN') })
const env = (name: string) => {
  const value = process.env[name]
  if (!value) throw new Error(`worker-process needs ${name}`)
  return value
}
const audit = await openAudit({ databaseUrl: env('DATABASE_URL'), outages: waitThroughOutages() })
const connection = await NativeConnection.connect({ address: env('TEMPORAL_ADDRESS') })
const worker = await Worker.create({
  ...TETHER_WORKER_DEFAULTS,
  ...(process.env.SHUTDOWN_GRACE ? { shutdownGraceTime: process.env.SHUTDOWN_GRACE } : {}),
  connection,
  namespace: env('TEMPORAL_NAMESPACE'),
  taskQueue: env('TETHER_TASK_QUEUE'),
  workflowBundle: { codePath: env('WORKFLOW_BUNDLE') },
  activities: createActivities({ audit, floor: workerFloor(process.env.TETHER_FLOOR) }),
})
process.stdout.write('worker ready\n')
await worker.run()
await connection.close()
await audit.close()
