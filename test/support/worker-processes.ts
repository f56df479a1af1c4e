/**
 * tether workers in processes of their own (test/support/worker-process.ts), so a test can SIGKILL one like
 * a crashed machine. Each is on the test run's servers and its shared workflow bundle.
 */
import type { ChildProcess } from 'node:child_process'
import { inject } from 'vitest'
import { startWorkerChild } from './worker-child.js'

export function workerProcesses(): {
  /** Starts a worker on `taskQueue` with `env` on top of this process's; resolves once it polls. */
  start(taskQueue: string, env?: Record<string, string>): Promise<ChildProcess>
  /** SIGKILLs every worker started. */
  killAll(): void
} {
  const started: ChildProcess[] = []
  return {
    start(taskQueue, env = {}) {
      return startWorkerChild(
        {
          ...process.env,
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_NAMESPACE: inject('namespace'),
          DATABASE_URL: inject('databaseUrl'),
          TETHER_TASK_QUEUE: taskQueue,
          WORKFLOW_BUNDLE: inject('workflowBundlePath'),
          ...env,
        },
        started,
      )
    },
    killAll() {
      for (const child of started) child.kill('SIGKILL')
    },
  }
}
