/**
 * tether workers in processes of their own (test/support/worker-process.ts), so a test can SIGKILL one like
 * a crashed machine. Each is on the test run's servers and its shared workflow bundle.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { inject } from 'vitest'

export function workerProcesses(): {
  /** Starts a worker on `taskQueue` with `env` on top of this process's; resolves once it polls. */
  start(taskQueue: string, env?: Record<string, string>): Promise<ChildProcess>
  /** SIGKILLs every worker started. */
  killAll(): void
} {
  const started: ChildProcess[] = []
  return {
    start(taskQueue, env = {}) {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', fileURLToPath(new URL('./worker-process.ts', import.meta.url))],
        {
          env: {
            ...process.env,
            TEMPORAL_ADDRESS: inject('temporalAddress'),
            TEMPORAL_NAMESPACE: inject('namespace'),
            DATABASE_URL: inject('databaseUrl'),
            TETHER_TASK_QUEUE: taskQueue,
            WORKFLOW_BUNDLE: inject('workflowBundlePath'),
            ...env,
          },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      )
      started.push(child)
      return new Promise((resolve, reject) => {
        child.stdout?.on('data', (chunk: Buffer) => {
          if (chunk.toString().includes('worker ready')) resolve(child)
        })
        child.on('exit', (code) =>
          reject(new Error(`worker process exited with ${code} before it was ready`)),
        )
      })
    },
    killAll() {
      for (const child of started) child.kill('SIGKILL')
    },
  }
}
