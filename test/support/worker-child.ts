/**
 * Starts test/support/worker-process.ts as a child process (so a test can SIGKILL it like a crashed machine)
 * and resolves once it polls. The child joins `children` at once, so a test's cleanup kills it even when it
 * never became ready.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export function startWorkerChild(env: NodeJS.ProcessEnv, children: ChildProcess[]): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./worker-process.ts', import.meta.url))],
    { env, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  children.push(child)
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('worker ready')) resolve(child)
    })
    child.on('exit', (code) => reject(new Error(`worker process exited with ${code} before it was ready`)))
  })
}
