/**
 * What the Temporal-backed benches share: a local stack in a temp folder, a worker, a sample workspace, and
 * the floor (Temporal's own cost per activity on a server).
 */
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client, Connection } from '@temporalio/client'
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker'
import type { AuditStore } from '../src/audit/index.js'
import { startLocalTether } from '../src/embed/worker.js'

export interface BenchStack {
  temporalAddress: string
  /** The audit database's URL (for a child process, such as the CLI). */
  databaseUrl: string
  client: Client
  audit: AuditStore
  taskQueue: string
  workspace(script: unknown): Promise<{ path: string; model: string }>
  stop(): Promise<void>
}

/** Temporal's runtime logs warnings only; call once per process, before any connection. */
export function quietRuntime(): void {
  Runtime.install({ logger: new DefaultLogger('WARN') })
}

export async function startBenchStack(): Promise<BenchStack> {
  quietRuntime()
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
    temporalAddress: local.stack.temporalAddress,
    databaseUrl: local.stack.databaseUrl,
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

/** CPU seconds used so far: the whole machine's busy time, this process's, and each other program's. */
export interface CpuReading {
  machine: number
  self: number
  /** Own user + system time of every other process, summed by program name. */
  programs: Map<string, number>
}

/** A reading of where the machine's CPU has gone, from /proc; the difference of two says where a stretch of work spent it. */
export function readCpu(): CpuReading {
  const ticks = 100 // USER_HZ, fixed on Linux
  const [, ...times] = (readFileSync('/proc/stat', 'latin1').split('\n')[0] as string).trim().split(/\s+/)
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = times
    .slice(0, 8)
    .reduce((sum, value, i) => (i === 3 || i === 4 ? sum : sum + Number(value)), 0)
  const programs = new Map<string, number>()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      programs.set(name, (programs.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / ticks)
    } catch {
      // Gone meanwhile.
    }
  }
  const self = process.cpuUsage()
  return { machine: busy / ticks, self: (self.user + self.system) / 1e6, programs }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

/** Temporal's own cost on one server, measured with workflows whose activities do nothing (floor-workflows.ts). */
export interface FloorProbe {
  /** ms per activity of a workflow that runs `activities` no-op remote activities one after another. */
  remote(activities: number): Promise<number>
  /** The same with local activities. */
  local(activities: number): Promise<number>
  /** ms from a `ms` timer's start to its firing, as the workflow's history records them. */
  timer(ms: number): Promise<number>
  stop(): Promise<void>
}

let floorBundle: Promise<string> | undefined

/** A worker of its own on `address` (its own task queue), so the floor is measured on the same server. */
export async function startFloorProbe(address: string, namespace = 'default'): Promise<FloorProbe> {
  floorBundle ??= bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./floor-workflows.ts', import.meta.url)),
    logger: new DefaultLogger('WARN'),
  }).then((bundle) => bundle.code)
  const code = await floorBundle
  const native = await NativeConnection.connect({ address })
  const connection = await Connection.connect({ address })
  const client = new Client({ connection, namespace })
  const taskQueue = `floor-${randomUUID()}`
  const worker = await Worker.create({
    connection: native,
    namespace,
    taskQueue,
    workflowBundle: { code },
    activities: { async noop() {} },
  })
  const running = worker.run()
  const time = async (workflow: string, arg: number) => {
    const started = performance.now()
    await client.workflow.execute(workflow, {
      taskQueue,
      workflowId: `${workflow}-${randomUUID()}`,
      args: [arg],
    })
    return performance.now() - started
  }
  return {
    remote: async (activities) => (await time('floorRemote', activities)) / activities,
    local: async (activities) => (await time('floorLocal', activities)) / activities,
    timer: (ms) => time('floorTimer', ms),
    async stop() {
      worker.shutdown()
      await running
      await native.close()
      await connection.close()
    },
  }
}

export function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  )
}
