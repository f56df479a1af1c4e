/**
 * Building a Worker that serves tether: shared by `worker.ts`, `tether dev`, the demo and the plugin, so
 * they all load the same workflow code the same way.
 */

import { existsSync } from 'node:fs'
import { totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'
import { getHeapStatistics } from 'node:v8'
import { Client } from '@temporalio/client'
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker'
import {
  createActivities,
  PACING_SINKS,
  type StepPacer,
  unknownNamespace,
  waitThroughOutages,
} from '../activities/index.js'
import { type AuditStore, openAudit } from '../audit/index.js'
import { loadPriceFile, type ModelProvider, type PriceOverrides } from '../model/index.js'
import { builtinFloor, type Floor, floorOf, loadFloor, type Policy } from '../policy/index.js'
import {
  connectTemporalClient,
  connectTemporalWorker,
  type LocalStack,
  type LocalStackOptions,
  localTarget,
  type McpServerConfig,
  startLocalStack,
  type TemporalTarget,
  type WorkerDeployment,
  workflowCacheSetting,
} from '../stack/index.js'
import { loadMcpServers } from '../stack/mcp-servers.js'
import { ReconcilePlugin } from './reconcile.js'
import type { WorkerTelemetry } from './telemetry.js'

/** tether's workflows module: the compiled `.js` in a build, the `.ts` source in a checkout. */
export function tetherWorkflowsPath(): string {
  const js = fileURLToPath(new URL('../workflows/index.js', import.meta.url))
  return existsSync(js) ? js : js.replace(/\.js$/, '.ts')
}

/**
 * The prebuilt bundle of a build (`npm run build`), which starts in milliseconds; else bundle at start. A
 * worker that traces takes the bundle with Temporal's OpenTelemetry workflow interceptors in it.
 */
export function workflowSource(
  traced = false,
): { workflowBundle: { codePath: string } } | { workflowsPath: string } {
  const name = traced ? 'workflow-bundle-otel.js' : 'workflow-bundle.js'
  const bundle = fileURLToPath(new URL(`../../${name}`, import.meta.url))
  return existsSync(bundle)
    ? { workflowBundle: { codePath: bundle } }
    : { workflowsPath: tetherWorkflowsPath() }
}

/**
 * Worker options every tether worker gets (and the plugin sets unless the Worker sets its own). A run in a
 * worker's cache gets its next workflow task on that worker's own (sticky) queue, where it waits at most
 * `stickyQueueScheduleToStartTimeout` before it goes to the shared queue and is replayed there. Too short
 * (3 s) and an overloaded worker bounces run after run, each bounce a replay; too long (60 s) and an approval
 * answered in the 10 s after a crash (while Temporal still sends tasks to the dead worker's queue) waits that
 * long: Temporal's 10 s, measured against both in docs/durability.md §2. A stopping worker (SIGTERM) gives
 * its running commands `shutdownGraceTime` to finish, then hands each to another worker
 * (activities/attempts.ts); the default, 0, would cut every one off at once.
 */
export const TETHER_WORKER_DEFAULTS = {
  stickyQueueScheduleToStartTimeout: '10 seconds',
  shutdownGraceTime: '30 seconds',
  // A run's next task goes to the worker's own (sticky) queue, a new or evicted run's to the shared one. The
  // SDK gives the shared queue this share of the polls and the sticky one the rest, and polls that wait on
  // the shared queue hold workflow-task slots: with 1, the sticky queue had one poll, so a run's next task
  // seldom found a poller waiting and went through the server's database (2.0 task writes per step against
  // 1.0; 11 % more CPU per step and 12 % fewer steps/s at 20 runs). Under a burst of new runs, their starts
  // now wait behind the running runs' steps (docs/durability.md §2).
  nonStickyToStickyPollRatio: 0.2,
  // Runs say when they take an activity's result, so a worker short of CPU holds model turns back rather
  // than letting workflow tasks queue past the sticky timeout (activities/pacing.ts).
  sinks: PACING_SINKS,
} as const satisfies Partial<WorkerOptions>

export interface TetherWorkerOptions {
  connection: NativeConnection
  namespace: string
  taskQueue: string
  audit: AuditStore
  provider?: (choice: string | undefined) => ModelProvider
  /** Runs kept in memory between their tasks (default: `workflowCacheSize()`, from the worker's memory). */
  maxCachedWorkflows?: number | undefined
  /** The operator's floor (see `workerFloor`); default: the built-in one. */
  floor?: WorkerFloor
  /**
   * Worker Versioning: the deployment this worker belongs to and its build. Each run is pinned to the build
   * that started it; a new build takes new runs once it is the deployment's current version.
   */
  deployment?: WorkerDeployment | undefined
  /**
   * The stack's own state folder when it is not the default one (a second stack, the demo): hidden from
   * every command like the default is.
   */
  stateDir?: string
  /** The operator's model prices over the shipped ones: a price file's path (`TETHER_PRICES`) or its content. */
  prices?: WorkerPrices
  /**
   * Traces and metrics (`new WorkerTelemetry(readTelemetry())`: docs/observability.md); the caller starts
   * it and shuts it down after the worker. Default: none.
   */
  telemetry?: WorkerTelemetry
  /** The operator's MCP servers (see `workerMcpServers`); default: none. */
  mcpServers?: WorkerMcpServers
  /** Holds model turns back while too many runs wait for a workflow task; default: the process's. */
  pacer?: StepPacer
}

/** Prices as a worker's configuration gives them: a price file's path, or the loaded overrides. */
export type WorkerPrices = PriceOverrides | string | undefined

/** The operator's prices; a path is read once, here. Throws ModelConfigError naming the file and field. */
export function workerPrices(prices: WorkerPrices): PriceOverrides | undefined {
  return typeof prices === 'string' ? loadPriceFile(prices) : prices
}

/** MCP servers as a worker's configuration gives them: a servers file's path, or the servers. */
export type WorkerMcpServers = readonly McpServerConfig[] | string | undefined

/**
 * The MCP servers this worker offers its runs (docs/mcp.md): a path is read once, here; nothing given is
 * none. Throws ConfigError with one line naming the file and field.
 */
export function workerMcpServers(servers: WorkerMcpServers): readonly McpServerConfig[] {
  if (servers === undefined || servers === '') return []
  return typeof servers === 'string' ? loadMcpServers(servers) : servers
}

/** A floor as a worker's configuration gives it: a floor file's path, a policy, or a loaded floor. */
export type WorkerFloor = Floor | Policy | string | undefined

/**
 * The operator's floor: the first layers of every run's policy on this worker, which a run can only tighten
 * (docs/policy.md#the-operators-floor). A path is read once, here; nothing given is the built-in floor
 * (the sandbox enforced, the secret denies). Throws PolicyError with one line naming the file and field.
 */
export function workerFloor(floor: WorkerFloor): Floor {
  if (floor === undefined || floor === '') return builtinFloor()
  if (typeof floor === 'string') return loadFloor(floor)
  return 'source' in floor ? floor : floorOf(floor)
}

/** What one run kept in a worker's workflow cache holds, measured by `bench/run --concurrent` (RSS per active run). */
export const CACHED_RUN_BYTES = 2 * 2 ** 20

/**
 * Runs a worker keeps in memory between their tasks: as many as a quarter of its memory holds (the V8 heap
 * limit, or the machine's or container's memory when that is smaller), at least 64. Too small a cache is a
 * cliff: past it every task of an active run evicts another active run, which then replays its whole
 * history. Waiting runs still leave it: the least recently active are evicted first and replayed from their
 * (small) history when their answer comes, so the memory waiting runs take is bounded whatever their number.
 */
export function workflowCacheSize(
  memory = {
    heapLimit: getHeapStatistics().heap_size_limit,
    available: process.constrainedMemory?.() || totalmem(),
  },
): number {
  return Math.max(64, Math.floor(Math.min(memory.heapLimit, memory.available) / 4 / CACHED_RUN_BYTES))
}

/**
 * Workflow tasks a worker runs at once: its workflow code runs on one thread, so more only queue inside the
 * worker, where their timeout already runs; never more than the cache holds (the SDK's rule).
 */
export const WORKFLOW_TASK_SLOTS = 16

export function createTetherWorker(options: TetherWorkerOptions): Promise<Worker> {
  const namespace = unknownNamespace()
  const { telemetry } = options
  const source = workflowSource(telemetry?.traces)
  const { interceptors, sinks } = telemetry?.workerOptions() ?? {}
  return Worker.create({
    ...TETHER_WORKER_DEFAULTS,
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...source,
    // A prebuilt bundle has the workflow interceptors in it already.
    ...(interceptors
      ? { interceptors: 'workflowBundle' in source ? { ...interceptors, workflowModules: [] } : interceptors }
      : {}),
    sinks: { ...(options.pacer?.sinks() ?? PACING_SINKS), ...sinks },
    activities: createActivities({
      audit: options.audit,
      namespace,
      floor: workerFloor(options.floor),
      ...priced(options.prices),
      ...(telemetry ? { telemetry: telemetry.activities } : {}),
      mcpServers: workerMcpServers(options.mcpServers),
      ...(options.pacer ? { pacer: options.pacer } : {}),
      ...(options.provider ? { provider: options.provider } : {}),
      ...(options.stateDir ? { sandbox: { hide: [options.stateDir] } } : {}),
    }),
    ...workflowCapacity(options.maxCachedWorkflows ?? workflowCacheSize()),
    ...(options.deployment
      ? {
          workerDeploymentOptions: {
            version: { deploymentName: options.deployment.name, buildId: options.deployment.buildId },
            useWorkerVersioning: true,
            defaultVersioningBehavior: 'PINNED' as const,
          },
        }
      : {}),
    // While it runs, runs Temporal closed by paths the workflow never sees are closed in the audit too.
    plugins: [new ReconcilePlugin(options.audit, namespace)],
  })
}

/** The `prices` option of the activities, when there are prices of the operator's. */
export function priced(prices: WorkerPrices): { prices?: PriceOverrides } {
  const overrides = workerPrices(prices)
  return overrides ? { prices: overrides } : {}
}

function workflowCapacity(cached: number) {
  return {
    maxCachedWorkflows: cached,
    maxConcurrentWorkflowTaskExecutions: Math.max(2, Math.min(WORKFLOW_TASK_SLOTS, cached)),
  }
}

/** tether on one machine: the local stack, the audit store, a client and a running worker. */
export interface LocalTether {
  stack: LocalStack
  audit: AuditStore
  client: Client
  taskQueue: string
  /** Settles when the worker stops (after `stop()`, or SIGINT/SIGTERM through the Temporal runtime). */
  running: Promise<void>
  stop(): Promise<void>
}

/**
 * Starts the local stack and a worker on `taskQueue`; `stop()` undoes all of it, in order. With `temporal`,
 * the stack uses that server (with its TLS or API key) instead of starting one.
 */
export async function startLocalTether(
  options: LocalStackOptions & {
    taskQueue: string
    temporal?: TemporalTarget | undefined
    floor?: WorkerFloor
    prices?: WorkerPrices
    /** The worker's traces and metrics; started here, and shut down by `stop()` after the worker. */
    telemetry?: WorkerTelemetry
    mcpServers?: WorkerMcpServers
  },
): Promise<LocalTether> {
  const stack = await startLocalStack({
    ...options,
    temporalAddress: options.temporal?.address ?? options.temporalAddress,
  })
  const target = options.temporal ?? localTarget(stack.temporalAddress, stack.namespace)
  const closers: Array<() => Promise<void>> = [() => stack.stop()]
  const close = async () => {
    for (const closer of closers.splice(0).reverse()) await closer()
  }
  try {
    const { telemetry } = options
    if (telemetry) {
      await telemetry.start()
      closers.push(() => telemetry.shutdown())
    }
    const audit = await openAudit({
      databaseUrl: stack.databaseUrl,
      migrate: true,
      maxConnections: 20,
      outages: waitThroughOutages(options.log),
    })
    closers.push(() => audit.close())
    const native = await connectTemporalWorker(target)
    closers.push(() => native.close())
    const connection = await connectTemporalClient(target)
    closers.push(() => connection.close())
    const worker = await createTetherWorker({
      connection: native,
      namespace: target.namespace,
      taskQueue: options.taskQueue,
      audit,
      stateDir: options.stateDir,
      maxCachedWorkflows: workflowCacheSetting(),
      ...(options.floor !== undefined ? { floor: options.floor } : {}),
      ...(options.prices !== undefined ? { prices: options.prices } : {}),
      ...(telemetry ? { telemetry } : {}),
      ...(options.mcpServers !== undefined ? { mcpServers: options.mcpServers } : {}),
    })
    const running = worker.run()
    closers.push(async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown()
      await running
    })
    return {
      stack,
      audit,
      client: new Client({ connection, namespace: target.namespace }),
      taskQueue: options.taskQueue,
      running,
      stop: close,
    }
  } catch (error) {
    await close()
    throw error
  }
}
