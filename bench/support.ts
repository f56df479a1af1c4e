/**
 * What the Temporal-backed benches share: a local stack in a temp folder, a worker, a sample workspace,
 * scripted runs, the floor (Temporal's own cost per activity on a server), and CPU read per process tree.
 */
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client, Connection } from '@temporalio/client'
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js'
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker'
import type pg from 'pg'
import type { AuditStore } from '../src/audit/index.js'
import { newRunId, type PolicyStore, type StartRunOptions, startAgentRun } from '../src/embed/client.js'
import { startLocalTether } from '../src/embed/worker.js'
import type { Policy } from '../src/policy/index.js'

export interface BenchStack {
  temporalAddress: string
  /** The audit database's URL (for a child process, such as the CLI). */
  databaseUrl: string
  client: Client
  audit: AuditStore
  taskQueue: string
  /** The servers the stack started, by role, for `readCpu` (none for a server given in the environment). */
  roots: CpuRoots
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
  const { temporal, postgres } = local.stack.pids
  let count = 0
  return {
    temporalAddress: local.stack.temporalAddress,
    databaseUrl: local.stack.databaseUrl,
    client: local.client,
    audit: local.audit,
    taskQueue: local.taskQueue,
    roots: {
      ...(temporal ? { [TEMPORAL]: temporal } : {}),
      ...(postgres ? { [POSTGRES]: postgres } : {}),
    },
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

/** A scripted model's turns: one `exec` of each argv in `calls`, then a final answer. */
export function scriptedTurns(calls: readonly (readonly string[])[]) {
  return {
    turns: [...calls.map((argv) => ({ toolCalls: [{ name: 'exec', args: { argv } }] })), { text: 'done' }],
  }
}

/** `argv`, `times` times over: the calls of a scripted loop. */
export function repeated(argv: readonly string[], times: number): string[][] {
  return Array.from({ length: times }, () => [...argv])
}

/**
 * Starts an agentRun (the sandbox on, as by default) whose scripted model makes `calls`; `result` settles
 * when it has finished, with its wall time from the start and the steps it took.
 */
export async function startScriptedRun(
  stack: BenchStack,
  calls: readonly (readonly string[])[],
  policy: Policy,
  scheduling?: StartRunOptions['scheduling'],
  /** Given: the policy is stored there and the run carries its digest (as `tether run` starts runs). */
  policyStore?: PolicyStore,
) {
  const ws = await stack.workspace(scriptedTurns(calls))
  const started = performance.now()
  const startedAt = Date.now()
  const handle = await startAgentRun(stack.client, {
    contract: {
      goal: 'bench',
      workspace: ws.path,
      model: ws.model,
      budgets: { maxSteps: calls.length + 5, maxTokens: 1_000_000_000 },
    },
    policy,
    taskQueue: stack.taskQueue,
    runId: newRunId(),
    ...(scheduling ? { scheduling } : {}),
    ...(policyStore ? { policyStore } : {}),
  })
  const result = handle.result().then((outcome) => {
    if (outcome.outcome !== 'finished')
      throw new Error(`bench run ended ${outcome.outcome}: ${outcome.reason}`)
    return { ms: performance.now() - started, startedAt, runId: handle.workflowId, steps: outcome.steps }
  })
  return { runId: handle.workflowId, workspace: ws.path, result }
}

/** One scripted agentRun, start to finish (see `startScriptedRun`). */
export async function scriptedRun(
  stack: BenchStack,
  calls: readonly (readonly string[])[],
  policy: Policy,
  scheduling?: StartRunOptions['scheduling'],
  policyStore?: PolicyStore,
) {
  return (await startScriptedRun(stack, calls, policy, scheduling, policyStore)).result
}

/**
 * How long a run took to start — from the client's start to its first step's beginning (its audit row, its
 * workspace laid out) — and each of its steps: the time between their ends, the first from its beginning (ms).
 */
export async function stepTimes(
  stack: BenchStack,
  run: { runId: string; startedAt: number },
): Promise<{ start: number; steps: number[] }> {
  const steps: number[] = []
  let start = 0
  let last: number | undefined
  for (const entry of await stack.audit.runTimeline(run.runId)) {
    if (entry.type !== 'step') continue
    if (last === undefined) {
      start = entry.startedAt.getTime() - run.startedAt
      last = entry.startedAt.getTime()
    }
    steps.push(entry.finishedAt.getTime() - last)
    last = entry.finishedAt.getTime()
  }
  return { start, steps }
}

/**
 * A run's history size: as the server stores and counts it (`historySizeBytes`, the figure Temporal's
 * limits apply to), and as JSON (`temporal workflow show --output json`, base64 payloads: about twice that),
 * summed over its continue-as-new runs.
 */
export async function historyBytes(
  stack: BenchStack,
  runId: string,
): Promise<{ bytes: number; json: number; runs: number }> {
  let bytes = 0
  let json = 0
  let runs = 0
  for await (const execution of stack.client.workflow.list({ query: `WorkflowId = '${runId}'` })) {
    const handle = stack.client.workflow.getHandle(runId, execution.runId)
    const info = (await handle.describe()).raw.workflowExecutionInfo
    bytes += Number(info?.historySizeBytes ?? 0)
    json += historyToJSON(await handle.fetchHistory()).length
    runs += 1
  }
  return { bytes, json, runs }
}

/**
 * What `pool`'s database holds now, as written and as its live rows need it (after VACUUM FULL, which
 * compacts it). Space a table freed (rows rewritten, dead rows vacuumed) is reused by later writes, so the
 * growth as written over one run depends on what ran before it; the growth between two compacted readings
 * does not.
 */
export async function compactedBytes(
  pool: Pick<pg.Pool, 'query'>,
): Promise<{ written: number; live: number }> {
  const written = await databaseBytes(pool)
  await pool.query('vacuum full')
  return { written, live: await databaseBytes(pool) }
}

/** Bytes on disk of every table of the database `pool` reaches, with its indexes and TOAST. */
async function databaseBytes(pool: Pick<pg.Pool, 'query'>): Promise<number> {
  const { rows } = await pool.query<{ bytes: string }>(
    `select coalesce(sum(pg_total_relation_size(c.oid)), 0) as bytes
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'm') and n.nspname not in ('pg_catalog', 'information_schema')`,
  )
  return Number(rows[0]?.bytes ?? 0)
}

/** Role → pid of a process the bench started: that process and its descendants count for the role. */
export type CpuRoots = Readonly<Record<string, number>>

/** The roles every reading has: this process's own time, and that of its descendants under no other root. */
export const WORKER = 'worker'
export const LAUNCHER = 'launcher and sandboxes'
/** The roles of the servers a bench stack starts. */
export const TEMPORAL = 'Temporal'
export const POSTGRES = 'PostgreSQL'

/** CPU seconds used so far: the whole machine's busy time, and each role's process trees. */
export interface CpuReading {
  machine: number
  roles: Map<string, number>
}

/**
 * Where CPU has gone, per process tree of the bench, from /proc. Each process counts for the nearest of
 * `roots` it descends from, found by walking parent links from the root, never by its name, so other
 * tenants of the machine never land in it. This process's own time is the `WORKER`'s; its descendants
 * under no root, and the children it has reaped, are the `LAUNCHER`'s (the worker's command launcher and
 * the sandboxes it starts). A process's figure includes its reaped children's (cutime, cstime), so a
 * command that has exited counts in its parent's, and the sum over a tree stays whole when one is reaped.
 * The difference of two readings (`cpuSpent`) says where a stretch of work spent it.
 */
export function readCpu(roots: CpuRoots): CpuReading {
  const ticks = 100 // USER_HZ, fixed on Linux
  const [, ...times] = (readFileSync('/proc/stat', 'latin1').split('\n')[0] as string).trim().split(/\s+/)
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = times
    .slice(0, 8)
    .reduce((sum, value, i) => (i === 3 || i === 4 ? sum : sum + Number(value)), 0)
  const children = new Map<number, number[]>()
  const own = new Map<number, number>()
  const reaped = new Map<number, number>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'latin1')
    } catch {
      continue // gone meanwhile
    }
    // After the name (which may hold spaces and parentheses): state ppid … utime stime cutime cstime.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const pid = Number(name)
    const ppid = Number(fields[1])
    const siblings = children.get(ppid)
    if (siblings) siblings.push(pid)
    else children.set(ppid, [pid])
    own.set(pid, (Number(fields[11]) + Number(fields[12])) / ticks)
    reaped.set(pid, (Number(fields[13]) + Number(fields[14])) / ticks)
  }
  const roles = new Map<string, number>([
    [WORKER, own.get(process.pid) ?? 0],
    [LAUNCHER, reaped.get(process.pid) ?? 0],
  ])
  const rootOf = new Map(Object.entries(roots).map(([role, pid]) => [pid, role]))
  const add = (role: string, pid: number) =>
    roles.set(role, (roles.get(role) ?? 0) + (own.get(pid) ?? 0) + (reaped.get(pid) ?? 0))
  const walk = (pid: number, role: string) => {
    for (const child of children.get(pid) ?? []) {
      if (rootOf.has(child)) continue // a tree of its own
      add(role, child)
      walk(child, role)
    }
  }
  for (const [pid, role] of rootOf) {
    add(role, pid)
    walk(pid, role)
  }
  walk(process.pid, LAUNCHER)
  return { machine: busy / ticks, roles }
}

/** CPU seconds spent between two readings, per role and by the whole machine. */
export function cpuSpent(before: CpuReading, after: CpuReading): CpuReading {
  const roles = new Map<string, number>()
  for (const [role, seconds] of after.roles) roles.set(role, seconds - (before.roles.get(role) ?? 0))
  return { machine: after.machine - before.machine, roles }
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
  /** ms for `runs` such remote-activity workflows at once, each of `activities`. */
  remoteAtOnce(runs: number, activities: number): Promise<number>
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
    async remoteAtOnce(runs, activities) {
      const started = performance.now()
      await Promise.all(Array.from({ length: runs }, () => time('floorRemote', activities)))
      return performance.now() - started
    },
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
