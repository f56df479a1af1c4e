/** What the Temporal-backed benches share: a local stack in a temp folder, a worker, a sample workspace. */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Client } from '@temporalio/client'
import { DefaultLogger, Runtime } from '@temporalio/worker'
import type { AuditStore } from '../src/audit/index.js'
import { startLocalTether } from '../src/worker-setup.js'

export interface BenchStack {
  client: Client
  audit: AuditStore
  taskQueue: string
  workspace(script: unknown): Promise<{ path: string; model: string }>
  stop(): Promise<void>
}

export async function startBenchStack(): Promise<BenchStack> {
  Runtime.install({ logger: new DefaultLogger('WARN') })
  const dir = await mkdtemp(join(tmpdir(), 'tether-bench-'))
  const local = await startLocalTether({
    stateDir: join(dir, 'stack'),
    ephemeral: true,
    temporalAddress: process.env.TEMPORAL_ADDRESS,
    databaseUrl: process.env.DATABASE_URL,
    taskQueue: `bench-${process.pid}`,
  })
  let count = 0
  return {
    client: local.client,
    audit: local.audit,
    taskQueue: local.taskQueue,
    async workspace(script) {
      const path = join(dir, `ws-${count++}`)
      await cp(fileURLToPath(new URL('../examples/npm-project', import.meta.url)), path, { recursive: true })
      await writeFile(join(path, '.script.json'), JSON.stringify(script))
      return { path, model: `scripted:${join(path, '.script.json')}` }
    },
    async stop() {
      await local.stop()
      await rm(dir, { recursive: true, force: true })
    },
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}
