/**
 * tether as a Temporal Worker plugin: adds tether's activities to a user's existing Worker and tether's
 * workflows to its workflow bundle, so the user's own workflows can start `agentRun` as a child workflow.
 *
 * ```ts
 * const worker = await Worker.create({ connection, taskQueue, workflowsPath, plugins: [tetherPlugin()] })
 * ```
 *
 * With `workflowsPath`, the plugin bundles a small entry that re-exports the user's workflows and tether's.
 * With a prebuilt `workflowBundle`, re-export tether's workflows from your own workflows module instead:
 * `export { agentRun } from '@tether-agent/tether/workflows'`.
 */

import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { SimplePlugin } from '@temporalio/plugin'
import type { ReplayWorkerOptions, WorkerOptions } from '@temporalio/worker'
import { createActivities, PACING_SINKS, unknownNamespace, waitThroughOutages } from '../activities/index.js'
import { type AuditStore, openAudit } from '../audit/index.js'
import type { ModelProvider } from '../model/index.js'
import {
  databaseUrl,
  floorFile,
  mcpServersFile,
  pricesFile,
  readTelemetry,
  runningDevStack,
  tetherStateDir,
} from '../stack/index.js'
import { type WorkerTarget, whileReconciling, workerTarget } from './reconcile.js'
import { WorkerTelemetry } from './telemetry.js'
import {
  priced,
  TETHER_WORKER_DEFAULTS,
  tetherWorkflowsPath,
  type WorkerFloor,
  type WorkerMcpServers,
  type WorkerPrices,
  workerFloor,
  workerMcpServers,
} from './worker.js'

export interface TetherPluginOptions {
  /**
   * An audit store the caller manages. Without one, the plugin opens (and migrates) one when the Worker
   * runs: `databaseUrl`, else `DATABASE_URL`, else the database of the `tether dev` running on this machine;
   * with none of those the Worker stops at once, saying so in one line.
   */
  audit?: AuditStore
  /** The audit PostgreSQL for the store the plugin opens. */
  databaseUrl?: string
  /**
   * tether's state folder (default `TETHER_STATE_DIR`, else the per-user one): where a running `tether dev`
   * is found — and, when given explicitly and no database is, where an embedded PostgreSQL keeps its data.
   */
  stateDir?: string
  provider?: (choice: string | undefined) => ModelProvider
  /**
   * The operator's floor for every run this Worker serves: a floor file's path or a Policy (default:
   * TETHER_FLOOR, else the built-in floor — sandbox enforced, secrets denied). A run's own policy can only
   * tighten it.
   */
  floor?: WorkerFloor
  /** The operator's model prices over the shipped ones: a price file's path or its content (default TETHER_PRICES). */
  prices?: WorkerPrices
  /**
   * Traces and metrics (docs/observability.md): default, as the `OTEL_*` and `TETHER_METRICS_*` variables
   * say (nothing when none is set); `false` for none, when the Worker already has Temporal's OpenTelemetry
   * plugin (tether's spans then join its traces).
   */
  telemetry?: WorkerTelemetry | false
  /** The operator's MCP servers offered to runs: a servers file's path or the servers (default: TETHER_MCP_SERVERS, else none). */
  mcpServers?: WorkerMcpServers
}

export function tetherPlugin(options: TetherPluginOptions = {}): SimplePlugin {
  let store = options.audit
  // The activities exist before the Worker runs; the store they use is opened in runContext.
  const audit = new Proxy({} as AuditStore, {
    get(_target, property) {
      if (!store) throw new Error('the tether audit store is not open yet: run the Worker with worker.run()')
      const value = Reflect.get(store, property, store)
      return typeof value === 'function' ? value.bind(store) : value
    },
  })
  const namespace = unknownNamespace()
  const telemetry =
    options.telemetry === false ? undefined : (options.telemetry ?? new WorkerTelemetry(readTelemetry()))
  const { interceptors, sinks } = telemetry?.workerOptions() ?? {}
  const plugin: TetherPlugin = new TetherPlugin(
    {
      name: 'tether',
      activities: createActivities({
        audit,
        namespace,
        floor: workerFloor(options.floor ?? floorFile()),
        mcpServers: workerMcpServers(options.mcpServers ?? mcpServersFile()),
        ...priced(options.prices ?? pricesFile()),
        ...(options.provider ? { provider: options.provider } : {}),
        ...(telemetry ? { telemetry: telemetry.activities } : {}),
      }),
      workflowsPath: (existing) => (existing ? combinedEntry(existing) : tetherWorkflowsPath()),
      ...(interceptors ? { workerInterceptors: interceptors } : {}),
      runContext: async (next) => {
        await telemetry?.start()
        try {
          if (options.audit) return await whileReconciling(options.audit, plugin.target, next, namespace)
          store = await openAudit({
            databaseUrl: pluginDatabase(options),
            ...(options.stateDir ? { stateDir: options.stateDir } : {}),
            migrate: true,
            outages: waitThroughOutages(),
          })
          try {
            await whileReconciling(store, plugin.target, next, namespace)
          } finally {
            await store.close()
            store = undefined
          }
        } finally {
          await telemetry?.shutdown()
        }
      },
    },
    sinks ?? {},
  )
  return plugin
}

/** The audit database the plugin opens; a Worker with nowhere to record runs does not start. */
function pluginDatabase(options: TetherPluginOptions): string | undefined {
  const url =
    options.databaseUrl || databaseUrl() || runningDevStack(options.stateDir ?? tetherStateDir())?.databaseUrl
  if (url || options.stateDir) return url
  throw new Error(
    'tether plugin: no audit database: set DATABASE_URL (the PostgreSQL tether records runs in), run ' +
      '`tether dev` on this machine, or pass tetherPlugin({ databaseUrl }) or tetherPlugin({ audit })',
  )
}

/**
 * The Worker also gets tether's defaults (a short sticky-queue timeout) where it sets none of its own, and,
 * when it traces, the sink its workflow spans leave by; its connection, namespace and task queue serve to
 * keep the audit in step with Temporal (reconcile.ts).
 */
class TetherPlugin extends SimplePlugin {
  target: WorkerTarget | undefined

  constructor(
    options: ConstructorParameters<typeof SimplePlugin>[0],
    private readonly sinks: NonNullable<WorkerOptions['sinks']>,
  ) {
    super(options)
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    this.target = workerTarget(options)
    return super.configureWorker({
      ...TETHER_WORKER_DEFAULTS,
      ...options,
      sinks: { ...PACING_SINKS, ...options.sinks, ...this.sinks },
    })
  }

  override configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    return super.configureReplayWorker({ ...options, sinks: { ...options.sinks, ...this.sinks } })
  }
}

/**
 * A bundle entry exporting the user's workflows and tether's. It sits beside the user's workflows module
 * (as a hidden file, one per distinct pair of paths) because the bundler resolves the SDK's own modules
 * from the entry's folder, exactly as it would for the user's module.
 */
function combinedEntry(userWorkflows: string): string {
  const source = `export * from ${JSON.stringify(userWorkflows)}\nexport * from ${JSON.stringify(tetherWorkflowsPath())}\n`
  const path = join(
    dirname(userWorkflows),
    `.tether-workflows-${createHash('sha256').update(source).digest('hex').slice(0, 12)}.js`,
  )
  writeFileSync(path, source)
  return path
}
