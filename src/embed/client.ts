/**
 * Starting runs and answering approvals from a Temporal client: what the CLI, the demo and a user's own
 * tooling call. Bad input is refused here, before anything reaches Temporal.
 */

import { createHash, randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  ApplicationFailure,
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type WorkflowHandle,
  WorkflowUpdateFailedError,
} from '@temporalio/client'
import type { ApprovalRow, AuditStore } from '../audit/index.js'
import { type PlantedGitFile, plantedGitFiles } from '../exec/index.js'
import { type AnswerDraft, AnswerError, prepareAnswer } from '../identity/index.js'
import type { ApproverKey } from '../identity/keyring.js'
import { Policy, PolicyError, stricterPolicy } from '../policy/index.js'
import { clip } from '../present/index.js'
import {
  ContractError,
  contractInput,
  describeWorkspace,
  gateRefusal,
  parseContract,
  runIdProblem,
  startProblem,
  type TaskContract,
  type TaskContractInput,
} from '../run/index.js'
import { type ObjectStore, type SnapshotRow, treeAtStep, WorkspaceSnapshots } from '../snapshots/index.js'
import {
  agentRun,
  type DecideResult,
  type DecisionInput,
  type DecisionRejection,
  decideSignal,
  decideUpdate,
  statusQuery,
} from '../workflows/index.js'

export interface StartRunOptions {
  contract: TaskContractInput
  policy: Policy
  taskQueue: string
  /** Default: `run-<utc date and time>-<random>`. */
  runId?: string
  /**
   * How the run shares its task queue under overload (Temporal's priority and fairness keys): `tenant` is
   * its fairness key — runs of one tenant share one turn — and without it each run is its own; a run a
   * person waits on (`interactive`, as `tether run` is) goes before batch runs. `fair: false` leaves the run
   * without keys, as runs were started before (for comparison: `bench/run --concurrent`).
   */
  scheduling?: { tenant?: string; interactive?: boolean; fair?: boolean }
  /**
   * The audit the workers read (`AuditStore`, or anything that can store a run's policy in it): the run's
   * policy is stored there and the run carries its digest only, so its history does not grow with the
   * policy. Without it the policy travels inline, in the run's input (an embedder without the audit).
   */
  policyStore?: PolicyStore
}

/** Where a client stores a run's own policy for the workers to read by its digest: the workers' audit. */
export type PolicyStore = Pick<AuditStore, 'storeRunPolicy'>

/** Temporal's priority keys: lower goes first; its default is 3. */
const INTERACTIVE_PRIORITY = 2
const BATCH_PRIORITY = 3
/** A fairness key may take 64 bytes. */
const FAIRNESS_KEY_BYTES = 64

/** The Temporal priority of a run: its fairness key (its tenant, or itself) and whether a person waits. */
export function runPriority(
  runId: string,
  scheduling: StartRunOptions['scheduling'] = {},
): { priorityKey: number; fairnessKey?: string } {
  const priorityKey = scheduling.interactive ? INTERACTIVE_PRIORITY : BATCH_PRIORITY
  if (scheduling.fair === false) return { priorityKey }
  const key = scheduling.tenant ? `tenant:${scheduling.tenant}` : `run:${runId}`
  // A longer key is named by its digest: two keys never share a turn by being cut to the same prefix.
  const fairnessKey =
    Buffer.byteLength(key) <= FAIRNESS_KEY_BYTES
      ? key
      : `sha256:${createHash('sha256').update(key).digest('base64url')}`
  return { priorityKey, fairnessKey }
}

/**
 * Starts `agentRun`; a run id that cannot name a run, a goal, contract or policy over its size limit
 * (START_LIMITS), a policy a worker would refuse, an invalid contract, or one whose gate the policy would
 * not allow, is refused before anything reaches Temporal: `InvalidRunIdError`, `ContractError`,
 * `PolicyError`, each one line naming what was wrong. The contract travels as given (durations as text), and
 * the run validates it again.
 */
export async function startAgentRun(
  client: Client,
  options: StartRunOptions,
): Promise<WorkflowHandle<typeof agentRun>> {
  const runId = options.runId ?? newRunId()
  const badId = typeof runId === 'string' ? runIdProblem(runId) : 'the run id is not a string'
  if (badId) throw new InvalidRunIdError(badId)
  const spec = options.policy.toSpec()
  const tooBig = startProblem({ contract: options.contract, policy: spec })
  if (tooBig?.field === 'policy') throw new PolicyError(tooBig.message)
  if (tooBig) throw new ContractError(tooBig.message)
  // The builder checks less than a policy file's loader: what a worker would refuse is refused here, before
  // the spec is stored (the audit cannot hold some of it: a NUL, half a UTF-16 pair).
  Policy.fromSpec(spec)
  const contract = parseContract(options.contract)
  const refused = gateRefusal(contract, options.policy)
  if (refused) throw new ContractError(refused)
  // Stored first: a worker that takes the run finds its policy under the digest the run carries.
  if (options.policyStore) await options.policyStore.storeRunPolicy(options.policy.digest, spec)
  const policy = options.policyStore ? { policyRef: options.policy.digest } : { policy: spec }
  try {
    return await client.workflow.start(agentRun, {
      taskQueue: options.taskQueue,
      workflowId: runId,
      // A run id names one run forever: its audit, its transcript, its approvals.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      args: [{ contract: options.contract, ...policy }],
      // What Temporal's UI and CLI show first: the goal, and where the run works.
      staticSummary: clip(contract.goal.replace(/\s+/g, ' '), 200),
      staticDetails: `workspace \`${describeWorkspace(contract)}\``,
      // Activities inherit it: every task of the run is ordered by it under overload.
      priority: runPriority(runId, options.scheduling),
    })
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) {
      throw new RunIdTakenError(runId)
    }
    throw error
  }
}

export interface RewindOptions {
  /** The run to go back in. */
  run: string
  /** The step whose tree and transcript the new run starts from (0: the workspace as the run found it). */
  toStep: number
  taskQueue: string
  /**
   * Layers stacked on the earlier run's own policy: the new run works under the same policy or a stricter
   * one, never a looser (see `stricterPolicy`).
   */
  policy?: Policy
  /** Default: `run-<utc date and time>-<random>`. */
  runId?: string
}

const noRun = (run: string) => `no run ${run} in the audit; list runs with \`tether ls\``

/**
 * The workspace tree run `run` ended step `step` with (the last snapshot at or before it; without a step,
 * its last), as rewind, diff and checkout read it. A run the audit does not hold, a step the run never reached, a step before its first
 * snapshot and a tree retention has collected are each a ContractError that says which; `label` names the
 * step as the caller's user gave it (`--to-step`).
 */
export async function workspaceAtStep(
  audit: AuditStore,
  run: string,
  step: number | undefined,
  label = 'step',
): Promise<SnapshotRow> {
  const summary = await audit.runSummary(run)
  if (!summary) throw new ContractError(noRun(run))
  if (step !== undefined && (!Number.isInteger(step) || step < 0 || step > summary.steps)) {
    throw new ContractError(`run ${run} has steps 0 to ${summary.steps}; ${label} ${step} is not one of them`)
  }
  const tree = await treeAtStep(audit.pool, run, step)
  if (!tree) {
    throw new ContractError(
      `run ${run} has no workspace snapshot ${step === undefined ? '' : `at or before step ${step} `}(it stopped before its first, or ran before snapshots or with them off)`,
    )
  }
  if (tree.collectedAt) {
    throw new ContractError(
      `the snapshots of run ${run} were collected on ${tree.collectedAt.toISOString()} (retention)`,
    )
  }
  return tree
}

/**
 * Starts a new run linked to `run`, from its step `toStep`: the workspace tree that step ended with and the
 * transcript up to there, the same contract (goal, gate, budgets) and the same or a stricter policy. The
 * earlier run's audit is never touched; `tether show` of either names the other.
 */
export async function rewindRun(
  client: Client,
  audit: AuditStore,
  options: RewindOptions,
): Promise<WorkflowHandle<typeof agentRun>> {
  const config = await audit.runConfig(options.run)
  if (!config) throw new ContractError(noRun(options.run))
  await workspaceAtStep(audit, options.run, options.toStep, '--to-step')
  const { workspace: _folder, source: _source, ...contract } = contractInput(config.contract as TaskContract)
  return startAgentRun(client, {
    contract: { ...contract, source: { run: options.run, step: options.toStep, transcript: true } },
    policy: stricterPolicy(Policy.fromSpec(config.policy), options.policy),
    taskQueue: options.taskQueue,
    policyStore: audit,
    ...(options.runId ? { runId: options.runId } : {}),
  })
}

export interface CheckoutOptions {
  run: string
  /** The step whose tree (default: the run's last). */
  step?: number | undefined
  /** Where to lay it out: a folder that does not exist yet, or an empty one. */
  into: string
}

/**
 * Lays out the workspace tree run `run` had at a step (default: its last) in a new or empty folder, from
 * `store` (the store the run's worker used): every object checked against its name, the tree's hash
 * confirmed, then moved into place, so a failure leaves nothing. Declared caches and what the run's policy
 * hid from reads or its sandbox hid were never stored, so they are not there. Returns the snapshot the tree came from and
 * what was written; a run, step, folder or store that will not do is a ContractError that says which.
 */
export async function checkoutRun(
  audit: AuditStore,
  store: ObjectStore,
  options: CheckoutOptions,
): Promise<{ tree: SnapshotRow; files: number; bytes: number; plantedGit: PlantedGitFile[] }> {
  const found = await readdir(options.into).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return []
    if (error.code === 'ENOTDIR')
      throw new ContractError(`${options.into} is a file; give a new folder or an empty one`)
    throw error
  })
  if (found.length > 0)
    throw new ContractError(`${options.into} is not empty; give a new folder or an empty one`)
  const tree = await workspaceAtStep(audit, options.run, options.step)
  if (tree.store !== store.name) {
    throw new ContractError(
      `the snapshots of run ${options.run} are in ${tree.store}, but the store given is ${store.name}; open the one the run's worker used (TETHER_SNAPSHOTS, for the CLI)`,
    )
  }
  const written = await new WorkspaceSnapshots(store, audit.pool).restore(tree.root, options.into, {
    key: 'none',
    excluded: () => false,
  })
  // Every file came from the run's workspace: all of git's in it that would run a program is told.
  return { tree, ...written, plantedGit: plantedGitFiles(options.into, new Date(0)) }
}

/** A run id that an earlier run already used: run ids are never reused. */
export class RunIdTakenError extends Error {
  override name = 'RunIdTakenError'
  constructor(readonly runId: string) {
    super(`run id ${runId} is taken (an earlier run used it); a run id is never reused: choose another`)
  }
}

/** A run id that cannot name a run: empty, too long, or holding characters that break a line or hide. */
export class InvalidRunIdError extends Error {
  override name = 'InvalidRunIdError'
}

/** A run that failed before it started working: its contract does not fit the worker's world. */
export class RunRejectedError extends Error {
  override name = 'RunRejectedError'
  constructor(
    readonly runId: string,
    /** The failure's type: `ContractRejected`, `ContractError`, `RunFailed`, … */
    readonly type: string,
    message: string,
  ) {
    super(message)
  }
}

/**
 * Waits until a worker has checked the run against its world (workspace, gate program, model, policy)
 * and the run is working: `started`, or `no-worker` when no worker took it within `timeoutMs` (it starts
 * when one does). A run that fails meanwhile throws `RunRejectedError` with the run's own reason.
 */
export async function waitForStart(
  handle: WorkflowHandle<typeof agentRun>,
  options: { timeoutMs?: number; pollMs?: number } = {},
): Promise<'started' | 'no-worker'> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000)
  for (;;) {
    const { status } = await handle.describe()
    if (status.name === 'FAILED') throw await rejection(handle)
    if (status.name !== 'RUNNING') return 'started'
    // The query needs a worker; without one it would block, so it gets a short deadline of its own.
    const phase = await handle.client
      .withDeadline(Date.now() + 2_000, () => handle.query(statusQuery))
      .then((s) => s.phase)
      .catch(() => undefined)
    if (phase !== undefined && phase !== 'starting' && phase !== 'done') return 'started'
    if (Date.now() > deadline) return 'no-worker'
    await sleep(options.pollMs ?? 150)
  }
}

async function rejection(handle: WorkflowHandle<typeof agentRun>): Promise<RunRejectedError> {
  try {
    await handle.result()
  } catch (error) {
    const cause = error instanceof WorkflowFailedError ? error.cause : undefined
    if (cause instanceof ApplicationFailure) {
      return new RunRejectedError(handle.workflowId, cause.type ?? 'Error', cause.message)
    }
    return new RunRejectedError(handle.workflowId, 'Error', (cause ?? (error as Error)).message)
  }
  return new RunRejectedError(handle.workflowId, 'Error', 'the run closed without a result')
}

export function newRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')
  return `run-${stamp}-${randomBytes(3).toString('hex')}`
}

export interface AnswerResult {
  channel: 'update' | 'signal'
  result?: DecideResult
}

/**
 * Answers an approval of run `runId`: as an Update (validated by the run, the answer is final when this
 * returns), or — when no worker takes the Update within `updateTimeoutMs` — as a Signal, which the run
 * applies (or records as rejected) once a worker is back.
 */
export async function answerApproval(
  client: Client,
  runId: string,
  decision: DecisionInput,
  options: { via?: 'auto' | 'update' | 'signal'; updateTimeoutMs?: number } = {},
): Promise<AnswerResult> {
  const handle = client.workflow.getHandle(runId)
  const via = options.via ?? 'auto'
  if (via === 'signal') {
    await handle.signal(decideSignal, decision)
    return { channel: 'signal' }
  }
  const update = handle.executeUpdate(decideUpdate, { args: [decision] })
  if (via === 'update') return { channel: 'update', result: await update }
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), options.updateTimeoutMs ?? 15_000)
  })
  try {
    const first = await Promise.race([update, timedOut])
    if (first !== 'timeout') return { channel: 'update', result: first }
  } finally {
    clearTimeout(timer)
  }
  update.catch(() => {})
  await handle.signal(decideSignal, decision)
  return { channel: 'signal' }
}

export { type AnswerDraft, AnswerError } from '../identity/index.js'

/**
 * The answer to send for `approval` (a row of the audit): signed with `key` when the run's policy requires
 * signed decisions (see `prepareAnswer` for what the signature covers).
 */
export function draftAnswer(approval: ApprovalRow, draft: AnswerDraft, key?: ApproverKey): DecisionInput {
  const { decision, statement } = prepareAnswer(approval, draft, Date.now())
  if (!statement) return decision
  if (!key) throw new AnswerError(`run ${approval.runId} requires signed decisions; answer with your key`)
  return {
    ...decision,
    signature: { key: key.publicKey, value: key.sign(statement), issuedAt: statement.issuedAt },
  }
}

/** The run's own words for a refused Update, and its type (`NotAnApprover`, `AlreadyDecided`, …). */
export function updateRejection(
  error: unknown,
): { type: DecisionRejection | string; message: string } | undefined {
  if (!(error instanceof WorkflowUpdateFailedError)) return undefined
  const cause = error.cause
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? 'Error', message: cause.message }
  return { type: 'Error', message: cause?.message ?? error.message }
}
