/**
 * One truth with Temporal. A run Temporal closes by a path its workflow never sees — terminated (also what a
 * parent's close does to a child by default), timed out — gets its terminal outcome in the audit, and its
 * approvals leave every waiting list; an approval a running run no longer waits for (a reset took it back)
 * leaves them too. Every worker sweeps the runs of its task queue when it starts and then every few seconds
 * while it runs, so nothing lists an approval whose workflow is closed for longer than that.
 */

import { Client, isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client'
import { SimplePlugin } from '@temporalio/plugin'
import type { WorkerOptions } from '@temporalio/worker'
import type { NamespaceFacts } from '../activities/index.js'
import type { AuditStore } from '../audit/index.js'
import { handBackWorkspace } from '../exec/index.js'
import { type AgentRunResult, lostRunReason } from '../run/index.js'
import { pendingApprovalsQuery } from '../workflows/index.js'

/** How often a worker compares its runs with Temporal. */
const SWEEP_MS = 5_000
/** How often a sweep also looks for runs Temporal no longer has, and how old a run must be to be looked for. */
const LOST_EVERY_MS = 60_000
const LOST_AFTER_MS = 120_000
/** Runs described at once. */
const CONCURRENCY = 8
/** Running runs read from the audit at a time, and named in one visibility query. */
const PAGE = 1_000
const PER_QUERY = 100
/** Workflow ids a visibility query can name as they are; others are described one by one. */
const PLAIN_ID = /^[\w.:@/+=-]+$/
/** Executions Temporal has closed for good (a continued-as-new one lives on in its successor). */
const CLOSED_STATUSES = ['Completed', 'Failed', 'Canceled', 'Terminated', 'TimedOut']

/** What a closed workflow's status means as a run's outcome, and in words. */
const CLOSED: Record<string, { outcome: string; how: string }> = {
  TERMINATED: { outcome: 'terminated', how: 'terminated in Temporal' },
  TIMED_OUT: { outcome: 'timed-out', how: 'timed out in Temporal (its execution or run timeout)' },
  CANCELLED: { outcome: 'cancelled', how: 'cancelled in Temporal' },
  FAILED: { outcome: 'failed', how: 'failed in Temporal' },
  COMPLETED: { outcome: 'finished', how: 'completed in Temporal' },
}

export interface AuditReconcilerOptions {
  audit: AuditStore
  client: Client
  taskQueue: string
  intervalMs?: number
  log?: (line: string) => void
}

/** Starts sweeping at once and every few seconds; `stop()` waits for a sweep in progress. */
export function reconcileWithTemporal(options: AuditReconcilerOptions): { stop(): Promise<void> } {
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let current: Promise<void> = Promise.resolve()
  const state: SweepState = { checked: new Map(), listing: true, lostAt: Number.NEGATIVE_INFINITY }
  const tick = () => {
    current = sweep(options, state)
      .catch((error: unknown) =>
        options.log?.(`tether: comparing runs with Temporal failed: ${String(error)}`),
      )
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, options.intervalMs ?? SWEEP_MS)
      })
  }
  tick()
  return {
    async stop() {
      stopped = true
      clearTimeout(timer)
      await current
    },
  }
}

interface SweepState {
  /** The execution whose approvals were last compared with the audit's, by run (a reset makes a new one). */
  checked: Map<string, string>
  /** Whether the namespace answers visibility queries; without them every run is described. */
  listing: boolean
  /** When a sweep last looked for runs Temporal no longer has. */
  lostAt: number
}

type RunningRun = Awaited<ReturnType<AuditStore['runningRuns']>>[number]

/**
 * Waiting is free: a sweep asks Temporal one visibility query per hundred running runs for those with an
 * execution it has closed (ended, or replaced by a reset), and describes only those, not every run; and
 * it queries a running workflow (a workflow task, a replay when the run is not cached) only after a reset.
 */
async function sweep(options: AuditReconcilerOptions, state: SweepState): Promise<void> {
  const { audit, taskQueue } = options
  const seen = new Set<string>()
  const lookForLost = state.listing && Date.now() - state.lostAt >= LOST_EVERY_MS
  if (lookForLost) state.lostAt = Date.now()
  for (let after: string | undefined; ; ) {
    const runs = await audit.runningRuns({ taskQueue, limit: PAGE, ...(after ? { after } : {}) })
    for (const run of runs) seen.add(run.runId)
    const closed = await closedIn(options, state, runs)
    const suspects = lookForLost && state.listing ? [...closed, ...(await unknownIn(options, runs))] : closed
    for (let i = 0; i < suspects.length; i += CONCURRENCY) {
      await Promise.all(
        suspects.slice(i, i + CONCURRENCY).map((run) => reconcileRun(audit, options.client, run, state)),
      )
    }
    if (runs.length < PAGE) break
    after = runs.at(-1)?.runId
  }
  for (const runId of state.checked.keys()) if (!seen.has(runId)) state.checked.delete(runId)
}

/** The runs among `runs` with an execution Temporal has closed; all of them when that cannot be asked. */
async function closedIn(
  options: AuditReconcilerOptions,
  state: SweepState,
  runs: RunningRun[],
): Promise<RunningRun[]> {
  if (!state.listing) return runs
  const plain = runs.filter((run) => PLAIN_ID.test(run.runId))
  let found: Set<string>
  try {
    found = await listed(
      options.client,
      plain,
      ` AND ExecutionStatus IN (${CLOSED_STATUSES.map((s) => `'${s}'`).join(', ')})`,
    )
  } catch (error) {
    // A rate limit or an outage fails this sweep (the next one tries again); only a namespace that cannot
    // answer such a query at all is described run by run from now on.
    if (!cannotList(error)) throw error
    state.listing = false
    options.log?.(
      `tether: the namespace cannot list workflows by status (${String(error).split('\n')[0]}); every running run is described on each sweep instead`,
    )
    return runs
  }
  return runs.filter((run) => found.has(run.runId) || !PLAIN_ID.test(run.runId))
}

/** The ids of `runs` (plain ones) whose executions a visibility query finds, with `and` added to it. */
async function listed(client: Client, runs: RunningRun[], and: string): Promise<Set<string>> {
  const found = new Set<string>()
  for (let i = 0; i < runs.length; i += PER_QUERY) {
    const ids = runs.slice(i, i + PER_QUERY).map((run) => `'${run.runId}'`)
    for await (const execution of client.workflow.list({ query: `WorkflowId IN (${ids.join(', ')})${and}` }))
      found.add(execution.workflowId)
  }
  return found
}

/**
 * The runs among `runs` that may be lost: of this namespace, started LOST_AFTER_MS ago or more, and unknown
 * to visibility under any status. Each is then described (visibility lags behind; a describe does not).
 */
async function unknownIn(options: AuditReconcilerOptions, runs: RunningRun[]): Promise<RunningRun[]> {
  const old = runs.filter((run) => mayBeLost(options.client, run) && PLAIN_ID.test(run.runId))
  if (old.length === 0) return []
  const found = await listed(options.client, old, '')
  return old.filter((run) => !found.has(run.runId))
}

/**
 * Whether a run Temporal does not find can be taken for lost (its history lost with a dev server's, or
 * deleted): only a run recorded with this client's namespace (the audit may be shared with another
 * namespace's workers), and not one just started.
 */
function mayBeLost(client: Client, run: RunningRun): boolean {
  return run.namespace === client.options.namespace && run.startedAt.getTime() <= Date.now() - LOST_AFTER_MS
}

/** gRPC codes of a query the namespace's visibility store does not take (not of a passing failure). */
const INVALID_ARGUMENT = 3
const UNIMPLEMENTED = 12

function cannotList(error: unknown): boolean {
  // The client wraps the server's gRPC error in a ServiceError, as its cause.
  const grpc = [error, (error as { cause?: unknown } | undefined)?.cause].find(isGrpcServiceError)
  return grpc?.code === INVALID_ARGUMENT || grpc?.code === UNIMPLEMENTED
}

async function reconcileRun(
  audit: AuditStore,
  client: Client,
  run: RunningRun,
  state: SweepState,
): Promise<void> {
  const handle = client.workflow.getHandle(run.runId)
  let description: Awaited<ReturnType<typeof handle.describe>>
  try {
    description = await handle.describe()
  } catch (error) {
    if (!(error instanceof WorkflowNotFoundError)) throw error
    // A run Temporal does not have would never end, and its approvals would wait for ever.
    if (mayBeLost(client, run)) {
      const lost = lostRunReason(client.options.namespace)
      await letGoOfFolder(run)
      await audit.recordEndedOutside(run, {
        outcome: 'failed',
        reason: lost,
        at: new Date(),
        decidedBy: 'temporal',
        why: lost,
      })
    }
    return
  }
  const status = description.status.name
  if (status === 'RUNNING') {
    // Only a reset takes an approval back; once per execution, and only when the run was ever reset.
    const reset = description.raw.workflowExtendedInfo?.lastResetTime
    if (run.waiting && reset && state.checked.get(run.runId) !== description.runId) {
      if (await dropApprovalsNoLongerAwaited(audit, handle, run.runId))
        state.checked.set(run.runId, description.runId)
    }
    return
  }
  const closed = CLOSED[status]
  if (!closed) return
  const { outcome, reason } = await closedOutcome(handle, status, closed)
  await letGoOfFolder(run)
  await audit.recordEndedOutside(run, {
    outcome,
    reason,
    at: description.closeTime ?? new Date(),
    decidedBy: 'temporal',
    why: `the run was ${closed.how}`,
  })
}

/**
 * What a run's own end lets go of, for a run that ended without it: a root worker gives the run's folder back
 * to root (when it is a folder of this machine that this machine took over), before the end is recorded and
 * another run may take the folder. Never fails the sweep.
 */
async function letGoOfFolder(run: RunningRun): Promise<void> {
  // A source's folder is named by its source (`git URL at ref`), not by a path.
  if (!run.workspace.startsWith('/')) return
  await handBackWorkspace(run.workspace, run.startedAt).catch(() => undefined)
}

/** A run's outcome from how Temporal closed it: the result when it completed, the reason it was terminated. */
async function closedOutcome(
  handle: ReturnType<Client['workflow']['getHandle']>,
  status: string,
  closed: { outcome: string; how: string },
): Promise<{ outcome: string; reason: string }> {
  if (status === 'COMPLETED') {
    const result = (await handle.result()) as AgentRunResult
    return { outcome: result.outcome, reason: result.reason ?? closed.how }
  }
  if (status === 'TERMINATED') {
    const history = await handle.fetchHistory()
    const last = history.events?.at(-1)?.workflowExecutionTerminatedEventAttributes
    return { outcome: closed.outcome, reason: `${closed.how}${last?.reason ? `: ${last.reason}` : ''}` }
  }
  return { outcome: closed.outcome, reason: closed.how }
}

/** Approvals the audit holds as waiting that the running workflow no longer has (a reset took them back). */
async function dropApprovalsNoLongerAwaited(
  audit: AuditStore,
  handle: ReturnType<Client['workflow']['getHandle']>,
  runId: string,
): Promise<boolean> {
  // Without a worker the query cannot answer: then nothing is known, and nothing is changed.
  const pending = await handle.client
    .withDeadline(Date.now() + 2_000, () => handle.query(pendingApprovalsQuery))
    .catch(() => undefined)
  if (!pending) return false
  const awaited = new Set(pending.map((approval) => approval.approvalId))
  for (const approval of await audit.pendingApprovals({ runId })) {
    if (awaited.has(approval.approvalId)) continue
    await audit.recordApprovalDecision({
      approvalId: approval.approvalId,
      decision: 'cancelled',
      decidedBy: 'temporal',
      channel: 'cancel',
      decidedAt: new Date(),
      reason: 'the run no longer waits for this approval (it was reset in Temporal)',
    })
  }
  return true
}

/** Where a Worker runs: a client on its own connection and namespace, and its task queue. */
export interface WorkerTarget {
  client: Client
  taskQueue: string
}

/** The target of a Worker with these options (the Worker's own connection serves the client too). */
export function workerTarget(options: WorkerOptions): WorkerTarget | undefined {
  if (!options.connection) return undefined
  return {
    client: new Client({
      connection: options.connection,
      ...(options.namespace ? { namespace: options.namespace } : {}),
    }),
    taskQueue: options.taskQueue,
  }
}

/**
 * Runs `next` (the Worker) while the audit is kept in step with Temporal; first learns which of tether's
 * search attributes the namespace has (into `namespace`, which the activities read).
 */
export async function whileReconciling(
  audit: AuditStore,
  target: WorkerTarget | undefined,
  next: () => Promise<void>,
  namespace?: NamespaceFacts,
): Promise<void> {
  if (target && namespace) await learnSearchAttributes(target.client, namespace)
  const reconciler = target
    ? reconcileWithTemporal({ audit, ...target, log: (line) => console.warn(line) })
    : undefined
  try {
    await next()
  } finally {
    await reconciler?.stop()
  }
}

/**
 * The search attributes registered in the worker's namespace. Listing them is an operator call some
 * credentials may not make: then none is assumed, and runs set only TetherPendingApproval.
 */
async function learnSearchAttributes(client: Client, facts: NamespaceFacts): Promise<void> {
  try {
    const listed = await client.connection.operatorService.listSearchAttributes({
      namespace: client.options.namespace,
    })
    facts.searchAttributes = new Set(Object.keys(listed.customAttributes ?? {}))
  } catch (error) {
    console.warn(
      `tether: cannot list the namespace's search attributes (${String(error).split('\n')[0]}); runs set TetherPendingApproval only`,
    )
  }
}

/** For a Worker whose audit store is open already: keeps it in step with Temporal while the Worker runs. */
export class ReconcilePlugin extends SimplePlugin {
  private target: WorkerTarget | undefined

  constructor(audit: AuditStore, namespace?: NamespaceFacts) {
    super({
      name: 'tether-reconcile',
      runContext: (next) => whileReconciling(audit, this.target, next, namespace),
    })
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    this.target = workerTarget(options)
    return super.configureWorker(options)
  }
}
