/** What the Temporal-backed benches share: a local stack in a temp folder, a worker, a sample workspace. */
import { chmod, cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client, Connection } from '@temporalio/client'
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker'
import { type AuditStore, openAudit } from '../src/audit/index.js'
import { startLocalStack } from '../src/stack/index.js'
import { createTetherWorker } from '../src/worker-setup.js'

export interface BenchStack {
  client: Client
  audit: AuditStore
  worker: Worker
  taskQueue: string
  dir: string
  workspace(script: unknown): Promise<{ path: string; model: string }>
  stop(): Promise<void>
}

export async function startBenchStack(): Promise<BenchStack> {
  Runtime.install({ logger: new DefaultLogger('WARN') })
  const dir = await mkdtemp(join(tmpdir(), 'tether-bench-'))
  // The embedded PostgreSQL runs as its own user when we are root; it must be able to enter this folder.
  await chmod(dir, 0o755)
  const stack = await startLocalStack({
    stateDir: join(dir, 'stack'),
    ephemeral: true,
    temporalAddress: process.env.TEMPORAL_ADDRESS,
    databaseUrl: process.env.DATABASE_URL,
  })
  const audit = await openAudit({ databaseUrl: stack.databaseUrl, migrate: true, maxConnections: 20 })
  const native = await NativeConnection.connect({ address: stack.temporalAddress })
  const connection = await Connection.connect({ address: stack.temporalAddress })
  const client = new Client({ connection, namespace: stack.namespace })
  const taskQueue = `bench-${process.pid}`
  const worker = await createTetherWorker({
    connection: native,
    namespace: stack.namespace,
    taskQueue,
    audit,
  })
  const running = worker.run()
  let count = 0
  return {
    client,
    audit,
    worker,
    taskQueue,
    dir,
    async workspace(script) {
      const path = join(dir, `ws-${count++}`)
      await cp(fileURLToPath(new URL('../examples/npm-project', import.meta.url)), path, { recursive: true })
      await writeFile(join(path, '.script.json'), JSON.stringify(script))
      return { path, model: `scripted:${join(path, '.script.json')}` }
    },
    async stop() {
      worker.shutdown()
      await running
      await native.close()
      await connection.close()
      await audit.close()
      await stack.stop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}
