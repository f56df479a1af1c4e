/**
 * tether's activities, built over their dependencies: the audit store (Postgres) and a way to pick a model
 * provider. Thin adapters: the work lives in policy/, exec/, workspace/, model/ and audit/.
 */
import { Context } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import { AuditConflictError, AuditConnectionError, AuditInputError, type AuditStore } from '../audit/index.js'
import {
  closeWarmSandboxes,
  handBackWorkspace,
  isRootWorker,
  SandboxUnavailableError,
} from '../exec/index.js'
import { McpSessions } from '../mcp/index.js'
import { type ModelProvider, type PriceOverrides, providerFromEnv } from '../model/index.js'
import { builtinFloor, type Floor } from '../policy/index.js'
import { FAILURE, LAYOUT_ATTEMPTS, type TetherActivities, workspaceOf } from '../run/index.js'
import { type ObjectStore, openObjectStore, WorkspaceSnapshots } from '../snapshots/index.js'
import { type McpServerConfig, snapshotSettings, workerKeyFile } from '../stack/index.js'
import { heartbeating } from './heartbeat.js'
import { mcpActivities } from './mcp.js'
import { modelActivities } from './model.js'
import { type StepPacer, stepPacer } from './pacing.js'
import { type NamespaceFacts, policyActivities } from './policy.js'
import { projectionActivities } from './projections.js'
import { provenanceActivities } from './provenance.js'
import { RunConfigs } from './run-config.js'
import { CommandSandbox, type SandboxDependencies } from './sandbox.js'
import { StepSnapshots } from './snapshots.js'
import { type ActivityTelemetry, RunMetrics } from './telemetry.js'
import { toolActivities } from './tools.js'
import { KeptTranscripts } from './transcript.js'

export type { TetherActivities } from '../run/index.js'
export { waitThroughOutages } from './outages.js'
export { PACING_SINKS, StepPacer, stepPacer } from './pacing.js'
export { type NamespaceFacts, unknownNamespace } from './policy.js'
export type { SandboxDependencies } from './sandbox.js'
export type { ActivityTelemetry } from './telemetry.js'

export interface ActivityDependencies {
  audit: AuditStore
  /** Resolves a contract's model choice; default: `providerFromEnv(process.env, choice)`, cached. */
  provider?: (choice: string | undefined) => ModelProvider
  /** Used for approval webhooks (default: global fetch). */
  fetch?: typeof fetch
  /**
   * This worker's side of the command sandbox: its environment (default `process.env`), extra host paths
   * to hide, and `host:port` of services commands must never reach (the Temporal server).
   */
  sandbox?: SandboxDependencies
  /**
   * The operator's floor: the first layers of every run's policy, which a run can only tighten (its sandbox,
   * approvers and identity are the floor's). Default: the built-in floor (sandbox enforced, secrets denied).
   */
  floor?: Floor
  /** The operator's model prices over the shipped ones (`TETHER_PRICES`, loaded with `loadPriceFile`). */
  prices?: PriceOverrides
  /**
   * The file of the key this worker signs each run's provenance with (default `TETHER_WORKER_KEY`, else
   * `worker-key.pem` in the state folder); made on first use, and hidden from every command.
   */
  workerKey?: string
  /** Where metrics go and whether spans carry content excerpts (embed/telemetry.ts); default: neither. */
  telemetry?: ActivityTelemetry
  /**
   * Workspace snapshots: the store (default from `TETHER_SNAPSHOTS`: the audit database; `off` for none)
   * and the folder where workspaces from a source are laid out (default `TETHER_WORKSPACES`).
   */
  snapshots?: { store?: ObjectStore | 'off'; workspaces?: string }
  /** The operator's MCP servers, offered to runs (`TETHER_MCP_SERVERS`, read with `loadMcpServers`). */
  mcpServers?: readonly McpServerConfig[]
  /** What this worker learned of its Temporal namespace when it started (the worker setup fills it in). */
  namespace?: NamespaceFacts
  /** Holds model turns back while too many runs wait for a workflow task (pacing.ts); default: the process's. */
  pacer?: StepPacer
}

export function createActivities(deps: ActivityDependencies): TetherActivities {
  const provider = deps.provider ?? cachedProviders(process.env)
  const floor = deps.floor ?? builtinFloor()
  const keyFile = deps.workerKey ?? workerKeyFile(deps.sandbox?.env)
  const settings = snapshotSettings()
  const workspaces = deps.snapshots?.workspaces ?? settings.workspaces
  const sandbox = new CommandSandbox({
    ...deps.sandbox,
    // The workspaces this worker lays out are each their run's alone (a run's own is bound back in).
    hide: [...(deps.sandbox?.hide ?? []), keyFile, workspaces],
    auditTarget: () => deps.audit.target,
    floor: floor.policy,
  })
  const runs = new RunConfigs(deps.audit, floor)
  const { telemetry } = deps
  const metrics = new RunMetrics(telemetry?.meter)
  let service: WorkspaceSnapshots | undefined | null = null
  const snapshots = new StepSnapshots({
    // Made at first use: a plugin's audit store opens only when its Worker runs.
    service: () => {
      if (service !== null) return service
      const store = deps.snapshots?.store ?? openObjectStore(settings.store, deps.audit.pool)
      service = store && store !== 'off' ? new WorkspaceSnapshots(store, deps.audit.pool) : undefined
      return service
    },
    audit: deps.audit,
    runs,
    sandbox,
    workspaces,
    retentionDays: settings.retentionDays,
    keepWorkspacesHours: settings.keepWorkspacesHours,
  })
  const mcpServers = deps.mcpServers ?? []
  const activities: TetherActivities = {
    ...policyActivities({
      provider,
      sandbox,
      runs,
      prices: deps.prices,
      metrics,
      snapshots,
      mcpServers,
      namespace: deps.namespace,
    }),
    ...modelActivities({
      audit: deps.audit,
      provider,
      runs,
      transcripts: new KeptTranscripts(deps.audit),
      snapshots,
      prices: deps.prices,
      telemetry,
      metrics,
    }),
    ...toolActivities({ audit: deps.audit, runs, sandbox, snapshots, metrics, telemetry }),
    ...mcpActivities({
      audit: deps.audit,
      runs,
      sandbox,
      servers: mcpServers,
      sessions: new McpSessions(),
      env: deps.sandbox?.env ?? process.env,
      folder: (runId, workspace) => snapshots.checkedFolder(runId, workspace),
    }),
    ...projectionActivities({
      audit: deps.audit,
      runs,
      metrics,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      // A sandbox built ahead for a run that has ended would wait 10 minutes for a command that never comes;
      // a root worker's folder goes back to root while the run still holds its claim, before another run
      // may take it over again.
      runEnded: async (runId) => {
        const folder = snapshots.folder(runId, workspaceOf((await runs.get(runId)).contract))
        await closeWarmSandboxes(folder)
        if (!isRootWorker()) return
        const started = (await deps.audit.runSummary(runId))?.startedAt
        if (started) await handBackWorkspace(folder, started)
      },
    }),
    ...provenanceActivities({ audit: deps.audit, runs, snapshots, keyFile }),
    tetherBeginRun: async (start) => {
      await activities.tetherStartRun(start)
      const layOut = {
        runId: start.runId,
        ...(start.policyDigest ? { policyDigest: start.policyDigest } : {}),
      }
      try {
        return await activities.tetherLayOutWorkspace(layOut)
      } catch (error) {
        // The record is retried until the audit is back; a layout that keeps failing ends the run, as its
        // own activity's attempts did.
        if (Context.current().info.attempt < LAYOUT_ATTEMPTS || !(error instanceof Error)) throw error
        const type = (error instanceof ApplicationFailure ? error.type : undefined) ?? error.name
        throw ApplicationFailure.create({ message: error.message, type, nonRetryable: true, cause: error })
      }
    },
  }
  const pacer = deps.pacer ?? stepPacer
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      paced(pacer, name, failFastOnBadInput(fn as (input: never) => Promise<unknown>)),
    ]),
  ) as unknown as TetherActivities
}

/** The activity that begins a step, and so waits when the worker has more steps than it gets through. */
const PACED_ACTIVITY: keyof TetherActivities = 'tetherModelTurn'

/** `fn`, telling `pacer` when it starts and ends (a model turn waits for its turn, heartbeating). */
function paced<I, O>(pacer: StepPacer, name: string, fn: (input: I) => Promise<O>): (input: I) => Promise<O> {
  return async (input) => {
    const context = activityContext()
    const run = context?.info.workflowExecution?.workflowId
    if (!context || run === undefined) return fn(input)
    if (name === PACED_ACTIVITY) {
      await heartbeating(() => pacer.turn(run, context.cancellationSignal), { phase: 'paced' }, context)
    } else pacer.started(run)
    try {
      return await fn(input)
    } finally {
      pacer.ended(run)
    }
  }
}

/** The running activity's context; undefined outside one (an activity called as a plain function). */
function activityContext(): Context | undefined {
  try {
    return Context.current()
  } catch {
    return undefined
  }
}

/**
 * An audit write refused for its content (bad input, a conflicting transcript row) fails the same way on
 * every attempt, and so does a sandbox this worker cannot build: report them as non-retryable instead of
 * retrying forever. A server that is down stays retryable.
 */
function failFastOnBadInput<I, O>(fn: (input: I) => Promise<O>): (input: I) => Promise<O> {
  return async (input) => {
    try {
      return await fn(input)
    } catch (error) {
      if (
        error instanceof AuditInputError ||
        error instanceof AuditConflictError ||
        (error instanceof AuditConnectionError && !error.retryable)
      ) {
        throw ApplicationFailure.nonRetryable(error.message, error.name)
      }
      if (error instanceof SandboxUnavailableError) {
        throw ApplicationFailure.nonRetryable(error.message, FAILURE.sandboxUnavailable)
      }
      throw error
    }
  }
}

function cachedProviders(env: NodeJS.ProcessEnv): (choice: string | undefined) => ModelProvider {
  const cache = new Map<string, ModelProvider>()
  return (choice) => {
    const key = choice ?? ''
    let provider = cache.get(key)
    if (!provider) {
      provider = providerFromEnv(env, choice)
      cache.set(key, provider)
    }
    return provider
  }
}
