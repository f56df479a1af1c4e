/**
 * `agentRun`: one coding-agent run as a durable Temporal workflow (DESIGN §1). A thin shell: the decisions
 * live in `run-state.ts` and `approvals.ts` (pure, unit-tested); this file only sequences activities, waits
 * for humans and keeps history small (transcript and output live in Postgres).
 *
 * Deterministic by construction: no I/O, no environment, workflow time only; activity names are stable
 * (see run/activities.ts). A change to the command sequence goes behind `patched()`.
 */
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common'
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  CancellationScope,
  ContinueAsNew,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  isCancellation,
  log,
  makeContinueAsNewFunc,
  patched,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow'
import { execActivityOptions } from '../exec/activity-options.js'
import { actionDigest } from '../identity/index.js'
import { clip } from '../present/index.js'
import type {
  ActionVerdict,
  AgentRunInput,
  AgentRunResult,
  ApprovedCall,
  DecidedRequest,
  JudgeRequest,
  ModelTurn,
  Outcome,
  PendingApproval,
  RememberOffer,
  Resolution,
  StepRecord,
  TetherActivities,
  WorkspaceLaidOut,
} from '../run/index.js'
import {
  approvedDecision,
  describeRule,
  describeWorkspace,
  FAILURE,
  LAYOUT_ATTEMPTS,
  MODEL_FAILURES_NOT_RETRIED,
  parseContract,
  parseMoney,
  replacementVerdict,
  startProblem,
  type TaskContract,
  workspaceOf,
} from '../run/index.js'
import type { McpCall, ValidatedCall } from '../tools/index.js'
import { ApprovalBook, type DecisionInput } from './approvals.js'
import { DEFINITION_REVIEW_CALL, definitionReview, isMcpCall, McpBook, validateCall } from './mcp.js'
import { pacedActivities, pacedLocalActivities } from './pacing.js'
import {
  budgetOutcome,
  commandTimeout,
  costBudgetReason,
  costCapReached,
  costCapWords,
  deniedByApproverObservation,
  initialState,
  invalidCallObservation,
  nextAfterTurn,
  type RunState,
  recordUsage,
  refusalObservation,
  replacementNote,
  reserveSeq,
  reserveSeqs,
  stepDecision,
} from './run-state.js'
import { traceApproval, traceGate, traceRun, traceTool, traceTurn } from './tracing.js'

export const PENDING_APPROVAL = defineSearchAttributeKey('TetherPendingApproval', SearchAttributeType.KEYWORD)
/** How a run ended (`verified`, `failed`, …) and where it worked: to find runs with `temporal workflow list`. */
export const OUTCOME_ATTRIBUTE = defineSearchAttributeKey('TetherOutcome', SearchAttributeType.KEYWORD)
export const WORKSPACE_ATTRIBUTE = defineSearchAttributeKey('TetherWorkspace', SearchAttributeType.KEYWORD)

export interface DecideResult {
  approvalId: string
  /** `pending` while a rule that needs several approvers still waits for more. */
  decision: Resolution['decision'] | 'pending'
  /** Distinct approvals so far, and how many the request needs. */
  approvals: number
  required: number
  /** The rule that will be remembered for the rest of the run (once the action is judged again). */
  remember?: string
}

/**
 * An approver's answer; rejected (no history) when malformed, unknown, already decided, unauthorised, or —
 * under signed identity — unsigned, signed by a key not on the list, or not signed over this exact action.
 */
export const decideUpdate = defineUpdate<DecideResult, [DecisionInput]>('decide')
/** The same answer as a Signal, for when no worker is running; invalid ones are recorded, never applied. */
export const decideSignal = defineSignal<[DecisionInput]>('decide')
export const pendingApprovalsQuery = defineQuery<PendingApproval[]>('pendingApprovals')

export interface RunStatus {
  step: number
  inputTokens: number
  outputTokens: number
  /** Micro-dollars spent on priced model turns (absent when none was priced). */
  cost?: number
  pendingApprovals: number
  phase: 'starting' | 'model' | 'tools' | 'approval' | 'verifying' | 'done'
  outcome?: Outcome
}
export const statusQuery = defineQuery<RunStatus>('status')

// How fast a dead worker is noticed, per activity kind (docs/durability.md): long activities heartbeat
// every few seconds and time out 10 s after the last beat; short ones have a start-to-close of 10 s;
// local activities die with their workflow task, whose 10 s timeout moves it to another worker.
const local = pacedLocalActivities<TetherActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
})
// Projections retry until Postgres is back: a run never fails because its audit store blinked. Each is a
// few writes (a webhook has 8 s), so an attempt that takes 10 s is on a dead or stuck worker: try again.
const projections = pacedActivities<TetherActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
})
// The step projection runs on every step: as a local activity it costs a few milliseconds instead of a
// task-queue round trip. (Runs recorded before this change keep the remote activity: see recordStep.)
const localProjections = pacedLocalActivities<TetherActivities>({
  startToCloseTimeout: '30 seconds',
  localRetryThreshold: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
})
// The provider call is long; its heartbeat is not (the activity beats every 2.5 s while it waits).
const model = pacedActivities<TetherActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '2 minutes',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [...MODEL_FAILURES_NOT_RETRIED],
  },
})
// File tools heartbeat too: most take milliseconds, a search over a big tree may take a while.
const files = pacedActivities<TetherActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
})

// Provenance digests the whole workspace: long for a big one, so it heartbeats like the file tools.
const provenance = pacedActivities<TetherActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
})

// Laying out a workspace may clone a repository or restore a large tree: long, so it heartbeats.
const workspaceSetup = pacedActivities<TetherActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: LAYOUT_ATTEMPTS },
})

// A run's start: its record, retried until the audit is back (as projections are), and its workspace laid
// out, which heartbeats (the activity ends the retries once the layout has failed LAYOUT_ATTEMPTS times).
const beginning = pacedActivities<TetherActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
})

/**
 * How a command (and the gate) is retried: without limit, because a lost or stopping worker is not the
 * command's fault — the activity itself ends the retries once the command's own failures reach their limit
 * (activities/attempts.ts). A retry after a lost worker comes within seconds of its heartbeat timeout.
 */
const COMMAND_RETRY = {
  initialInterval: '1 second',
  maximumInterval: '10 seconds',
  maximumAttempts: Number.POSITIVE_INFINITY,
}

// Listing a run's MCP servers may start them (a package to load, a handshake); a server that fails is an
// observation the activity returns, so what is retried here is this worker's own trouble (the audit).
const mcpListings = pacedActivities<TetherActivities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 10,
  },
})

/** One MCP call: its server's timeout, plus slack to start the server and list its tools first. */
function mcpCalls(timeoutMs: number) {
  return pacedActivities<TetherActivities>({
    startToCloseTimeout: timeoutMs + 120_000,
    heartbeatTimeout: '10 seconds',
    retry: { initialInterval: '1 second', maximumAttempts: 3 },
  })
}

function execActivities(timeoutMs: number) {
  // One attempt's cap is the command's own timeout plus slack for drain and kill; a worker crash is noticed
  // by the heartbeat timeout, and the retry re-runs the command — unless it is on the contract's noRetry
  // list, in which case the retry tells the model the outcome is unknown instead (see tetherExec).
  const options = execActivityOptions(timeoutMs)
  return pacedActivities<TetherActivities>({ ...options, retry: { ...options.retry, ...COMMAND_RETRY } })
}

/** What a step's row keeps of the model's turn. */
type StepTurn = Pick<ModelTurn, 'text' | 'toolCalls' | 'usage' | 'model' | 'cost'>
/**
 * The verification gate runs a command too: the same timeouts and heartbeat as exec, so a long gate is not
 * cut off and a dead worker is noticed in seconds. (Cancellation stays as recorded runs had it.)
 */
function gateActivities(timeoutMs: number) {
  const { startToCloseTimeout, heartbeatTimeout } = execActivityOptions(timeoutMs)
  return pacedActivities<TetherActivities>({ startToCloseTimeout, heartbeatTimeout, retry: COMMAND_RETRY })
}

/** Cap for the bounded texts that travel through history (the transcript keeps the full text). */
const OBSERVATION_LIMIT = 2_000

export function agentRun(input: AgentRunInput): Promise<AgentRunResult> {
  // The run's span (no-op unless the worker traces): see tracing.ts.
  return traceRun(workflowInfo().workflowId, () => runAgent(input))
}

async function runAgent(input: AgentRunInput): Promise<AgentRunResult> {
  const info = workflowInfo()
  const runId = info.workflowId
  const change = changesOfThisRun()
  const contract = parseInput(input, change)
  // New changes to the command sequence are decided here, in the run's first task, before any await: a
  // patch decided right after a local activity can fall into another workflow task on replay than it did
  // when recorded, which Temporal reports as nondeterminism.
  const changes = {
    legible: change('legible-in-temporal'),
    trueDeadline: change('true-deadline'),
    continueOnCurrentBuild: change('continue-on-current-build'),
    judgeWithTurn: change('judge-with-turn'),
    mcpTools: change('mcp-tools'),
    snapshots: change('workspace-snapshots'),
    // What crosses into the run is bounded before it is stored, echoed or passed on.
    bounded: change('bounded-inputs'),
    costBudget: change('cost-budget'),
    provenance: change('provenance'),
    // The run's own policy goes on by the digest the audit holds it under, not as its spec.
    policyByReference: change('policy-by-reference'),
    // The start record and the workspace's layout in one activity: one round trip fewer for every run.
    beginRun: change('begin-run'),
    // An approved call of tether's own tools is judged again, and its decision recorded, by the tool's own
    // activity: nothing runs between an approver's answer and the tool but the task that takes the answer.
    approvalJudgedByTool: patched('approval-judged-by-tool'),
  }
  if (changes.bounded) refuseOversizedStart(input)
  const state: RunState = initialState(input.carried, Date.now())
  const book = new ApprovalBook(runId, changes.bounded)
  /** Whether the TetherPendingApproval search attribute says this run waits for a person. */
  let waitingForPeople = false
  /** The step in progress, until its row is recorded: what a run that ends mid-step still records. */
  let inStep: { step: number; startedAt: number; turn?: StepTurn } | undefined
  /** A finished step's row that the next model turn records (judge-with-turn), or any other path flushes. */
  let unrecordedStep: StepRecord | undefined
  let phase: RunStatus['phase'] = 'starting'
  let outcome: Outcome | undefined

  // Handlers first, before any await, so an answer that arrives with the first activation is not lost.
  setHandler(
    decideUpdate,
    (decision) => {
      const applied = book.answer(decision, 'update', Date.now())
      if (!applied.ok) throw ApplicationFailure.nonRetryable(applied.error, applied.type)
      const { resolution, approvals, required } = applied
      return {
        approvalId: decision.approvalId,
        decision: resolution?.decision ?? 'pending',
        approvals,
        required,
        ...(resolution?.remember ? { remember: resolution.remember } : {}),
      }
    },
    {
      validator: (decision) => {
        // A typed, non-retryable failure: any SDK can branch on its type (see DecisionRejection).
        const checked = book.admit(decision, Date.now())
        if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.error, checked.type)
      },
    },
  )
  setHandler(decideSignal, async (decision) => {
    const applied = book.answer(decision, 'signal', Date.now())
    // A refused answer is recorded when it arrives, not at the end of a step that may never complete.
    if (!applied.ok && change('record-rejected-answers-at-once')) await recordRejectedAnswers(state.step)
  })
  setHandler(pendingApprovalsQuery, () => book.pending())
  setHandler(statusQuery, () => ({
    step: state.step,
    inputTokens: state.inputTokens,
    outputTokens: state.outputTokens,
    ...spent(),
    pendingApprovals: book.pending().length,
    phase,
    ...(outcome ? { outcome } : {}),
  }))

  /** What Temporal's UI shows of the run, and which of tether's search attributes the namespace has. */
  let legible: { searchAttributes: Set<string> } | undefined
  /** The run's current details in Temporal's UI and CLI: where it works, under what, and where it is. */
  const showDetails = (now?: string) => {
    const lines = [
      `**workspace** \`${describeWorkspace(contract)}\``,
      ...(policyDigest.policyDigest ? [`**policy** \`${policyDigest.policyDigest.slice(0, 12)}\``] : []),
      `**step** ${state.step} · **${phase}**${now ? ` — ${now}` : ''}`,
      ...(outcome ? [`**outcome** ${outcome}`] : []),
    ]
    setCurrentDetails(lines.join('\n\n'))
  }
  const setPhase = (next: RunStatus['phase'], now?: string) => {
    phase = next
    showDetails(now)
  }

  const finish = async (
    result: { outcome: Outcome; reason?: string },
    options: { provenance: boolean } = { provenance: true },
  ): Promise<AgentRunResult> => {
    await flushStep()
    outcome = result.outcome
    setPhase('done', result.reason ? clip(result.reason, 200) : undefined)
    if (legible) {
      upsertMemo({ outcome: result.outcome, ...(result.reason ? { reason: clip(result.reason, 500) } : {}) })
      if (legible.searchAttributes.has(OUTCOME_ATTRIBUTE.name)) {
        upsertSearchAttributes([{ key: OUTCOME_ATTRIBUTE, value: result.outcome }])
      }
    }
    if (change('tidy-exit')) {
      // Whatever path ends the run: a closed run is not waiting for anyone, and no handler is left
      // half-done (a refused answer still being recorded).
      if (waitingForPeople) upsertSearchAttributes([{ key: PENDING_APPROVAL, value: null }])
      waitingForPeople = false
      await condition(allHandlersFinished)
    }
    await projections.tetherFinishRun.executeWithOptions(meta(`record the outcome: ${result.outcome}`), [
      {
        runId,
        executionId: info.firstExecutionRunId,
        outcome: result.outcome,
        ...(result.reason ? { reason: result.reason } : {}),
        steps: state.step,
        inputTokens: state.inputTokens,
        outputTokens: state.outputTokens,
        ...spent(),
        finishedAt: Date.now(),
      },
    ])
    if (options.provenance && changes.provenance) await recordProvenance()
    return {
      runId,
      outcome: result.outcome,
      ...(result.reason ? { reason: result.reason } : {}),
      steps: state.step,
      inputTokens: state.inputTokens,
      outputTokens: state.outputTokens,
      ...spent(),
    }
  }

  /**
   * The run's provenance, signed by the worker. A run whose provenance cannot be made (its workspace is gone)
   * still ends as it ended: the audit then has no provenance for it, and the worker's log says why.
   */
  async function recordProvenance(): Promise<void> {
    try {
      // The tree history recorded last: the worker digests the workspace as the run left it.
      await provenance.tetherRecordProvenance.executeWithOptions(meta("sign the run's provenance"), [
        { runId, ...tree() },
      ])
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error
      log.warn('no provenance recorded for the run', { runId, reason: failureReason(error) })
    }
  }

  /** The run's spend, where any turn was priced. */
  function spent(): { cost?: number } {
    return state.cost !== undefined ? { cost: state.cost } : {}
  }

  /** The effective policy (the worker's floor with the run's policy on it), by the digest history records. */
  let policyDigest: { policyDigest: string } | Record<string, never> = {}
  const startRecord = () => ({
    runId,
    executionId: info.firstExecutionRunId,
    contract,
    ...ownPolicy(input, storedPolicyRef()),
    ...policyDigest,
    taskQueue: info.taskQueue,
    ...(info.currentDeploymentVersion ? { buildId: info.currentDeploymentVersion.buildId } : {}),
    ...(info.parent ? { parentRunId: info.parent.workflowId } : {}),
    startedAt: state.startedAt,
  })
  const recordStart = async () => {
    if (input.carried) return
    await projections.tetherStartRun.executeWithOptions(meta("record the run's start"), [startRecord()])
  }

  // The contract against the worker's world (workspace, gate program, model) and the policy (the gate must
  // be allowed): a run that cannot work fails here, before anyone is asked anything.
  const preparation = await local.tetherPrepareRun.executeWithOptions(
    meta('check the contract and the policy against this worker'),
    [{ contract, ...ownPolicy(input) }],
  )
  if (preparation.policyDigest) policyDigest = { policyDigest: preparation.policyDigest }
  /** Where the audit holds the run's own policy, for the start record and the next part to name it by. */
  const storedPolicyRef = () => (changes.policyByReference ? preparation.policyRef : undefined)
  if (changes.legible) {
    legible = { searchAttributes: new Set(preparation.searchAttributes ?? []) }
    upsertMemo({ goal: clip(contract.goal, 500), workspace: describeWorkspace(contract), ...policyDigest })
    if (legible.searchAttributes.has(WORKSPACE_ATTRIBUTE.name)) {
      upsertSearchAttributes([{ key: WORKSPACE_ATTRIBUTE, value: clip(describeWorkspace(contract), 1_000) }])
    }
  }
  showDetails()
  if (preparation.rejected) {
    // Recorded like any other run, so `tether ls` and `tether show` say why it never started.
    if (change('record-rejected-run')) {
      await recordStart()
      // Nothing ran, so there is nothing to attest: no provenance.
      throw runFailure(
        FAILURE.contractRejected,
        await finish({ outcome: 'failed', reason: preparation.rejected }, { provenance: false }),
      )
    }
    throw ApplicationFailure.nonRetryable(preparation.rejected, FAILURE.contractRejected)
  }
  const { approvers } = preparation
  const mcp = new McpBook(preparation.mcp ?? [], input.carried?.mcp)
  // Runs recorded before identity existed trusted the names their policy listed.
  book.setIdentity(
    preparation.identity ?? { mode: 'unsigned', approvers: approvers.map((name) => ({ name, keys: [] })) },
  )

  try {
    if (changes.beginRun) await beginRun()
    else {
      await recordStart()
      await layOutWorkspace()
    }

    for (;;) {
      const budget = budgetOutcome(state, contract, Date.now())
      if (budget) return await finish(budget)
      const overspent = await costGate()
      if (overspent) return await finish(overspent)
      if (workflowInfo().continueAsNewSuggested) {
        // Safe point: nothing in flight, no approval pending, every handler done.
        await condition(allHandlersFinished)
        await flushStep()
        const next = {
          contract,
          ...ownPolicy(input, storedPolicyRef()),
          carried: {
            ...state,
            continuedAsNew: state.continuedAsNew + 1,
            ...(mcp.active ? { mcp: mcp.carry() } : {}),
          },
        }
        // A run is pinned to the build that started it (Worker Versioning); the next run of its chain
        // starts on the deployment's current build. Without versioned workers this changes nothing.
        if (changes.continueOnCurrentBuild) {
          await makeContinueAsNewFunc<typeof agentRun>({ initialVersioningBehavior: 'AUTO_UPGRADE' })(next)
        } else await continueAsNew<typeof agentRun>(next)
      }

      const stepStarted = Date.now()
      state.step += 1
      const step = state.step
      inStep = { step, startedAt: stepStarted }
      if (mcp.active && changes.mcpTools) await reviewMcpTools(step)
      setPhase('model')
      const replySeq = state.nextSeq
      const turn = await traceTurn(runId, step, () =>
        model.tetherModelTurn.executeWithOptions(meta(`model turn ${step}`), [
          {
            runId,
            step,
            replySeq,
            pending: state.pending,
            ...handedToTurn(),
            ...(mcp.active ? { mcpTools: mcp.offer() } : {}),
          },
        ]),
      )
      unrecordedStep = undefined
      inStep.turn = turn
      state.pending = []
      recordUsage(state, turn)
      const seqs = reserveSeqs(state, turn.toolCalls.length)
      const next = nextAfterTurn(turn, contract)

      if (next !== 'calls') {
        await recordStep(runId, step, turn, [], 'model ended its turn', stepStarted, [])
        if (next === 'finish') {
          return await finish({
            outcome: 'finished',
            reason: clip(turn.text || 'the model ended its turn', 300),
          })
        }
        setPhase('verifying')
        const gate = await verify(step, reserveSeq(state))
        if (gate.passed) return await finish({ outcome: 'verified', reason: gate.summary })
        continue
      }

      setPhase('tools')
      const { lines, refusals } = await runCalls(step, turn, seqs.reply, seqs.results)
      await recordStep(runId, step, turn, lines, stepDecision(lines, turn), stepStarted, refusals, {
        handOver: changes.judgeWithTurn,
      })

      if (contract.verifyWhen === 'every-step' && contract.verification) {
        await flushStep()
        setPhase('verifying')
        const gate = await verify(step, null)
        if (gate.passed) return await finish({ outcome: 'verified', reason: gate.summary })
      }
    }
  } catch (error) {
    if (error instanceof ContinueAsNew) throw error
    if (isCancellation(error)) {
      await CancellationScope.nonCancellable(async () => {
        await flushStep()
        for (const request of book.pending()) {
          const resolution = book.expire(request.approvalId, 'cancelled', Date.now()) as Resolution
          await projections.tetherApprovalDecided({ runId, request, resolution })
        }
        await recordInterruptedStep('cancelled during this step')
        await finish({ outcome: 'cancelled', reason: 'the run was cancelled' })
      })
      throw error
    }
    const reason = failureReason(error)
    const result = await CancellationScope.nonCancellable(async () => {
      await flushStep()
      await recordInterruptedStep(`failed during this step: ${reason}`)
      return finish({ outcome: 'failed', reason })
    })
    // A failed run fails its workflow, so Temporal's own UI, CLI and a parent workflow see the truth;
    // budget outcomes stay results.
    if (change('failed-run-fails-workflow')) throw runFailure(FAILURE.runFailed, result)
    return result
  }

  async function verify(step: number, seq: number | null) {
    const timeoutMs = commandTimeout(state, contract, Date.now())
    const gate = await traceGate(runId, step, () =>
      gateActivities(timeoutMs).tetherVerify.executeWithOptions(
        meta(`gate: ${contract.verification?.command.join(' ') ?? ''}`),
        [
          {
            runId,
            step,
            pending: seq === null ? [] : state.pending,
            seq,
            timeoutMs,
            ...policyDigest,
            ...tree(),
          },
        ],
      ),
    )
    if (seq !== null && !gate.passed) state.pending = []
    if (gate.tree) state.tree = gate.tree
    return gate
  }

  /**
   * The workspace as state: laid out from the contract's source (or taken as it is) and snapshotted before
   * the first step, so every tool after it is given the root hash history recorded last (`tree`), and each
   * one that can change the workspace returns the next. A continuation carries the tree on.
   */
  async function layOutWorkspace(): Promise<void> {
    if (input.carried || !changes.snapshots) return
    laidOut(
      await workspaceSetup.tetherLayOutWorkspace.executeWithOptions(
        meta('lay out the workspace and take its first snapshot'),
        [{ runId, ...policyDigest }],
      ),
    )
  }

  /** The start record and the workspace laid out, in one activity (begin-run); a continuation has both. */
  async function beginRun(): Promise<void> {
    if (input.carried) return
    laidOut(
      await beginning.tetherBeginRun.executeWithOptions(
        meta("record the run's start, lay out the workspace and take its first snapshot"),
        [startRecord()],
      ),
    )
  }

  function laidOut(laid: WorkspaceLaidOut): void {
    if (laid.tree) state.tree = laid.tree
    if (laid.nextSeq !== undefined) state.nextSeq = laid.nextSeq
  }

  function tree(): { tree: string } | Record<string, never> {
    return state.tree ? { tree: state.tree } : {}
  }

  /** Judges every call, asks humans for the asks (all at once), then runs what may run, in call order. */
  async function runCalls(step: number, turn: ModelTurn, replySeq: number, resultSeqs: number[]) {
    const calls = turn.toolCalls
    const lines: string[] = []
    const refusals: Array<{ call: number; verdict: ActionVerdict }> = []
    const judged: Array<{ index: number; call: ValidatedCall; verdict: ActionVerdict; approval?: string }> =
      []

    for (const [index, raw] of calls.entries()) {
      const validated = validateCall(raw, mcp)
      if (!validated.ok) {
        state.pending.push(invalidCallObservation(resultSeqs[index] as number, raw, validated.error))
        lines.push(`${raw.name}: invalid call`)
        continue
      }
      // Judged with the turn where the worker did (judge-with-turn); else by a check of its own.
      // A call of an MCP tool is always checked here: only the workflow knows whether the run offers it.
      const verdict =
        (isMcpCall(validated.call) ? undefined : turn.verdicts?.[index]) ??
        (await checkAction(validated.call))
      judged.push({ index, call: validated.call, verdict })
    }

    const asks = judged.filter((entry) => entry.verdict.effect === 'ask')
    if (asks.length > 0) {
      setPhase(
        'approval',
        `waiting for a person: ${clip(asks.map((entry) => `${entry.verdict.act} ${entry.verdict.target}`).join('; '), 300)}`,
      )
      for (const entry of asks) entry.approval = await requestApproval(step, entry.index, entry.verdict)
      await waitForPeople(asks.map((entry) => entry.approval as string))
      setPhase('tools')
    }

    for (const entry of judged) {
      const { call } = entry
      const shown = { index: entry.index, id: call.id, name: call.name, argv: argvOf(call) }
      await traceTool(runId, step, shown, () => runJudged(entry))
    }
    return { lines, refusals }

    /** One judged call: its approval's answer, then its run (or its refusal). */
    async function runJudged(entry: (typeof judged)[number]) {
      const { index } = entry
      let call = entry.call
      const seq = resultSeqs[index] as number
      let verdict = entry.verdict
      let note: string | undefined
      const approvalId = entry.approval
      /** An approved call's decision, which its tool's own activity judges again and records. */
      let approved: ApprovedCall | undefined
      if (entry.approval) {
        const request = book.get(entry.approval) as PendingApproval
        const resolution = book.resolution(entry.approval) as Resolution
        if (resolution.decision !== 'approved') {
          await decisionRecorder().tetherApprovalDecided({ runId, request, resolution })
          state.pending.push(deniedByApproverObservation(seq, call, verdict, resolution))
          // "exec denied: …", "exec cancelled: …"; a timeout is no decision anyone made.
          const ended = resolution.decision === 'timeout' ? 'timed out unanswered' : resolution.decision
          lines.push(`${verdict.act} ${ended}: ${clip(verdict.target, 200)}`)
          return { verdict, approvalId }
        }
        const remembered = resolution.remember ? remember(verdict.act, resolution.remember) : undefined
        // An edited command takes the asked one's place: it is what is judged again, and what runs.
        const { replacement } = resolution
        if (replacement && call.name === 'exec' && change('approval-replacement')) {
          note = replacementNote(call.args.argv, replacement, resolution.decidedBy)
          call = { ...call, args: { ...call.args, argv: replacement } }
        }
        if (!isMcpCall(call) && changes.approvalJudgedByTool) {
          approved = { request: decided(request), resolution, ...(remembered ? { remembered } : {}) }
        } else {
          // An approval never crosses a deny: judge again, with whatever was just remembered.
          verdict = await checkAction(call)
          if (note) verdict = replacementVerdict(verdict, resolution)
          await decisionRecorder().tetherApprovalDecided(
            approvedDecision(runId, { request, resolution, ...(remembered ? { remembered } : {}) }, verdict),
          )
        }
      }
      const refuse = (refused: ActionVerdict) => {
        refusals.push({ call: index, verdict: refused })
        state.pending.push(refusalObservation(seq, call, refused, note))
        lines.push(`${refused.act} refused: ${clip(refused.target, 200)} (${describeRule(refused)})`)
        return { verdict: refused, approvalId }
      }
      if (verdict.effect === 'deny') return refuse(verdict)
      const timeoutMs = commandTimeout(state, contract, Date.now())
      const summary =
        call.name === 'exec'
          ? await execActivities(timeoutMs).tetherExec.executeWithOptions(
              meta(`exec: ${call.args.argv.join(' ')}`),
              [
                {
                  runId,
                  step,
                  pending: state.pending,
                  call: index,
                  seq,
                  callId: call.id,
                  argv: call.args.argv,
                  workspace: workspaceOf(contract),
                  timeoutMs,
                  outputCeiling: contract.outputCeiling,
                  noRetry: verdict.noRetry === true,
                  ...(note ? { note } : {}),
                  ...(approved ? { approved, remembered: state.remembered } : {}),
                  ...policyDigest,
                  ...tree(),
                },
              ],
            )
          : isMcpCall(call)
            ? await callMcp(step, index, seq, call, verdict)
            : await files.tetherFileTool.executeWithOptions(
                meta(`${call.name} ${'path' in call.args ? call.args.path : call.args.pattern}`),
                [
                  {
                    runId,
                    step,
                    pending: state.pending,
                    call: index,
                    seq,
                    replySeq,
                    callId: call.id,
                    name: call.name,
                    workspace: workspaceOf(contract),
                    remembered: state.remembered,
                    ...(approved ? { approved } : {}),
                    ...policyDigest,
                    ...tree(),
                  },
                ],
              )
      // Judged again after its approval, the call met a deny: nothing ran, nothing was written.
      if (summary.refused) return refuse(summary.refused)
      // The activity wrote the workflow's own observations before its result.
      state.pending = []
      if (summary.tree) state.tree = summary.tree
      lines.push(clip(summary.summary, 300))
      return { verdict, summary, approvalId }
    }
  }

  /**
   * The run's MCP tools before the model's turn: listed (a server that cannot be reached is an observation),
   * new ones pinned, and each definition that is not the reviewed one asked about, the step waiting for the
   * answers: approved, it is offered from now on; refused or unanswered, it stays withheld.
   */
  async function reviewMcpTools(step: number): Promise<void> {
    const listing = await mcpListings.tetherMcpTools.executeWithOptions(
      meta(`list MCP tools (step ${step})`),
      [{ runId, step, servers: mcp.servers.map((server) => server.name), pinned: mcp.pinned() }],
    )
    const changed = mcp.take(listing)
    const note = mcp.note(() => reserveSeq(state))
    if (note) state.pending.push(note)
    if (changed.length === 0) return
    // The step before is in the audit while the run waits for people, as when a call is asked about.
    await flushStep()
    setPhase(
      'approval',
      `waiting for a person: changed MCP tool definitions ${clip(changed.map((change) => change.name).join(', '), 300)}`,
    )
    const asked: string[] = []
    for (const [i, change] of changed.entries())
      asked.push(await requestApproval(step, DEFINITION_REVIEW_CALL + i, definitionReview(change)))
    await waitForPeople(asked)
    for (const [i, change] of changed.entries()) {
      const request = book.get(asked[i] as string) as PendingApproval
      const resolution = book.resolution(asked[i] as string) as Resolution
      if (resolution.decision === 'approved') mcp.accept(change)
      else mcp.refuse(change)
      await decisionRecorder().tetherApprovalDecided({ runId, request, resolution })
    }
  }

  /** One call of an MCP tool the policy let through, against the definition the run reviewed. */
  function callMcp(step: number, index: number, seq: number, call: McpCall, verdict: ActionVerdict) {
    const timeoutMs = mcp.timeoutMs(call.name)
    return mcpCalls(timeoutMs).tetherMcpCall.executeWithOptions(meta(`mcp ${call.name}`), [
      {
        runId,
        step,
        pending: state.pending,
        call: index,
        seq,
        callId: call.id,
        tool: call.name,
        arguments: call.args,
        digest: mcp.digest(call.name),
        timeoutMs,
        outputCeiling: contract.outputCeiling,
        verdict: {
          effect: verdict.effect,
          ...(verdict.rule !== undefined ? { rule: verdict.rule } : {}),
          ...(verdict.layer !== undefined ? { layer: verdict.layer } : {}),
        },
      },
    ])
  }

  /**
   * Decisions are recorded on the path from an answer to the approved command's start: as a local activity
   * they cost a few milliseconds instead of a task-queue round trip. (Runs recorded before keep the remote
   * activity.)
   */
  function decisionRecorder(): TetherActivities {
    return change('record-decision-locally') ? localProjections : projections
  }

  function checkAction(call: ValidatedCall): Promise<ActionVerdict> {
    // The activities read the run's contract and policy by run id: they stay out of every step's history.
    return local.tetherCheckAction({
      runId,
      ...policyDigest,
      remembered: state.remembered,
      workspace: workspaceOf(contract),
      call,
      noRetry: contract.noRetry,
      ...tree(),
      ...(isMcpCall(call) ? { mcp: mcp.state(call.name) } : {}),
    })
  }

  /** Adds the rule the approvers chose (and, when signed, signed) for the rest of the run. */
  function remember(act: ActionVerdict['act'], pattern: string): { pattern: string } {
    if (!state.remembered.some((r) => r.act === act && r.pattern === pattern))
      state.remembered.push({ act, pattern })
    return { pattern }
  }

  function requestApproval(step: number, call: number, verdict: ActionVerdict): Promise<string> {
    return openApproval({
      step,
      call,
      act: verdict.act,
      target: verdict.target,
      ...(verdict.rule !== undefined ? { rule: verdict.rule } : {}),
      ...(verdict.layer !== undefined ? { layer: verdict.layer } : {}),
      ...(verdict.tree !== undefined ? { tree: verdict.tree } : {}),
      actionDigest: actionDigest(verdict),
      ...(verdict.remember ? { remember: rememberOffer(verdict.remember) } : {}),
      ...(verdict.approvalsRequired ? { approvalsRequired: verdict.approvalsRequired } : {}),
      approvers,
    })
  }

  /** Records a request for people to answer, with its id, deadline and the run's identity mode. */
  async function openApproval(
    fields: Omit<PendingApproval, 'approvalId' | 'identity' | 'requestedAt' | 'deadline' | 'deadlineBy'>,
  ): Promise<string> {
    const now = Date.now()
    const requested = now + contract.approvals.timeout
    const budgetEnd = state.startedAt + contract.budgets.maxWallTime
    // The wait ends at the earlier of the two: approvers are told that time, and which limit sets it.
    const deadline = changes.trueDeadline
      ? budgetEnd < requested
        ? { deadline: budgetEnd, deadlineBy: 'wall-time budget' as const }
        : { deadline: requested, deadlineBy: 'approval timeout' as const }
      : { deadline: requested }
    const request: PendingApproval = {
      approvalId: uuid4(),
      ...fields,
      identity: book.identityMode,
      requestedAt: now,
      ...deadline,
    }
    book.request(request)
    state.approvals += 1
    await projections.tetherApprovalRequested.executeWithOptions(
      meta(`approval requested: ${request.act} ${request.target}`),
      [{ runId, request, goal: contract.goal }],
    )
    return request.approvalId
  }

  /** Waits for every request's answer, with the run marked as waiting for people meanwhile. */
  async function waitForPeople(approvalIds: readonly string[]): Promise<void> {
    upsertSearchAttributes([{ key: PENDING_APPROVAL, value: 'true' }])
    waitingForPeople = true
    await Promise.all(approvalIds.map(waitForAnswer))
    upsertSearchAttributes([{ key: PENDING_APPROVAL, value: null }])
    waitingForPeople = false
  }

  /**
   * At its cost cap a run does not end: it waits, as an approval for the policy's budget approvers, for one
   * of them to raise the cap (a signed answer naming the new cap) or end the run. The outcome `cost-budget`
   * when nobody may raise it, a budget approver ends it, or nobody answers in time.
   */
  async function costGate(): Promise<{ outcome: Outcome; reason: string } | undefined> {
    const at = costCapReached(state, contract)
    if (!at || !changes.costBudget) return undefined
    const budgetApprovers = preparation.budgetApprovers ?? []
    if (budgetApprovers.length === 0) return { outcome: 'cost-budget', reason: costBudgetReason(at) }
    // The step before is in the audit while the run waits, not held for a model turn that may never come.
    await flushStep()
    const target = costCapWords(at)
    setPhase('approval', `waiting for a budget approver: ${target}`)
    const approvalId = await openApproval({
      step: state.step,
      call: -1,
      act: 'budget',
      target,
      actionDigest: actionDigest({ act: 'budget', target }),
      approvers: budgetApprovers,
      budget: at,
    })
    await waitForPeople([approvalId])
    const request = book.get(approvalId) as PendingApproval
    const resolution = book.resolution(approvalId) as Resolution
    await decisionRecorder().tetherApprovalDecided({ runId, request, resolution })
    const raised = resolution.decision === 'approved' ? parseMoney(resolution.raiseTo) : undefined
    if (!raised?.ok) return { outcome: 'cost-budget', reason: costBudgetReason(at, resolution) }
    state.costCap = raised.micros
    return undefined
  }

  /**
   * Waits (durably, at no cost) for an answer, reminding on an interval, until the deadline — or until the
   * run's wall-time budget runs out, whichever comes first.
   */
  function waitForAnswer(approvalId: string): Promise<void> {
    const request = book.get(approvalId) as PendingApproval
    return traceApproval(
      runId,
      request,
      () => waitUntilAnswered(request),
      () => book.resolution(approvalId),
    )
  }

  async function waitUntilAnswered(request: PendingApproval): Promise<void> {
    const { approvalId } = request
    const answered = () => book.resolution(approvalId) !== undefined
    const budgetEnd = state.startedAt + contract.budgets.maxWallTime
    const end = change('approval-wait-within-budget')
      ? Math.min(request.deadline, budgetEnd)
      : request.deadline
    let reminder = 0
    for (;;) {
      const remaining = end - Date.now()
      if (remaining <= 0) break
      const every = contract.approvals.reminderEvery
      const wait = every ? Math.min(every, remaining) : remaining
      if (await condition(answered, wait)) return
      if (every && end - Date.now() > 0) {
        reminder += 1
        await projections.tetherRemindApprover({ runId, request, reminder })
      }
    }
    // With true deadlines the request's deadline may be the budget's own end: then it is the budget that ran out.
    const outOfBudget = end < request.deadline || request.deadlineBy === 'wall-time budget'
    book.expire(
      approvalId,
      'timeout',
      Date.now(),
      outOfBudget ? "the run's wall-time budget ran out" : undefined,
    )
  }

  async function recordStep(
    id: string,
    step: number,
    turn: StepTurn,
    lines: string[],
    decision: string,
    startedAt: number,
    refusals: Array<{ call: number; verdict: ActionVerdict }>,
    { handOver = false } = {},
  ) {
    inStep = undefined
    const record: StepRecord = {
      runId: id,
      step,
      toolCalls: turn.toolCalls,
      decision: clip(decision, OBSERVATION_LIMIT),
      observation: clip(lines.length > 0 ? lines.join('\n') : turn.text, OBSERVATION_LIMIT),
      inputTokens: turn.usage.inputTokens,
      outputTokens: turn.usage.outputTokens,
      ...(turn.usage.cachedInputTokens ? { cachedInputTokens: turn.usage.cachedInputTokens } : {}),
      ...(turn.model ? { model: turn.model } : {}),
      ...(turn.cost !== undefined ? { cost: turn.cost } : {}),
      startedAt,
      finishedAt: Date.now(),
      refusals,
    }
    // Handed to the next model turn, which records it with its reply: no activity or commit of its own.
    if (handOver) unrecordedStep = record
    else await writeStep(record)
    // Answers that were refused (a bad signal) are recorded, never applied.
    await recordRejectedAnswers(step)
  }

  async function writeStep(record: StepRecord): Promise<void> {
    const recorder = change('record-step-locally') ? localProjections : projections
    await recorder.tetherRecordStep.executeWithOptions(meta(`record step ${record.step}`), [record])
  }

  /** Records the step row no model turn took over (the run ends, continues as new or verifies first). */
  async function flushStep(): Promise<void> {
    const record = unrecordedStep
    unrecordedStep = undefined
    if (record) await writeStep(record)
  }

  /** What the model turn takes over from separate activities (judge-with-turn): the verdicts, the step row. */
  function handedToTurn(): { judge?: JudgeRequest; previousStep?: StepRecord } {
    if (!changes.judgeWithTurn) return {}
    return {
      judge: {
        ...policyDigest,
        remembered: state.remembered,
        workspace: workspaceOf(contract),
        noRetry: contract.noRetry,
        ...tree(),
      },
      ...(unrecordedStep ? { previousStep: unrecordedStep } : {}),
    }
  }

  async function recordRejectedAnswers(step: number): Promise<void> {
    for (const rejected of book.rejected.splice(0)) {
      await projections.tetherApprovalRejected({ runId, step, ...rejected })
    }
  }

  /** The row of a step the run ended in (cancelled, failed), with whatever of it happened. */
  async function recordInterruptedStep(decision: string): Promise<void> {
    if (!inStep || !change('record-interrupted-step')) return
    const { step, startedAt, turn } = inStep
    const calls = turn ?? { text: '', toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 } }
    await recordStep(runId, step, calls, [], decision, startedAt, [])
  }
}

/** What Temporal's UI and CLI show for an activity call: one line a person reads (`exec: npm test`). */
function meta(text: string): { summary: string } {
  return { summary: clip(text.replace(/\s+/g, ' '), 200) }
}

/** What a verdict lets an approver remember, as the request shows it (verdicts from before had one form). */
function rememberOffer(remember: NonNullable<ActionVerdict['remember']>): RememberOffer {
  if (!remember.ok) return { refused: remember.reason }
  if ('pattern' in remember) return { exact: remember.pattern }
  return { exact: remember.exact, ...(remember.wider ? { wider: remember.wider } : {}) }
}

/** What an approved call's activity records of its request: not what approvers were shown (`tree`). */
function decided(request: PendingApproval): DecidedRequest {
  const { approvalId, step, call, act, target, rule, layer, requestedAt } = request
  return {
    approvalId,
    step,
    call,
    act,
    target,
    requestedAt,
    ...(rule !== undefined ? { rule } : {}),
    ...(layer !== undefined ? { layer } : {}),
  }
}

/** A command's argv, for the span of its call (the program is all the span shows). */
function argvOf(call: ValidatedCall): readonly string[] | undefined {
  return call.name === 'exec' ? call.args.argv : undefined
}

/**
 * The changes to the command sequence that one marker decides, through begin-run. Closed: a later change
 * calls `patched()` itself, since runs recorded with the one marker never took it.
 */
type SettledChange =
  | 'contract-durations-with-units'
  | 'legible-in-temporal'
  | 'true-deadline'
  | 'continue-on-current-build'
  | 'judge-with-turn'
  | 'mcp-tools'
  | 'workspace-snapshots'
  | 'bounded-inputs'
  | 'cost-budget'
  | 'provenance'
  | 'policy-by-reference'
  | 'record-rejected-answers-at-once'
  | 'tidy-exit'
  | 'record-rejected-run'
  | 'failed-run-fails-workflow'
  | 'approval-replacement'
  | 'record-decision-locally'
  | 'approval-wait-within-budget'
  | 'record-step-locally'
  | 'record-interrupted-step'
  | 'begin-run'

/**
 * Whether this run takes each settled change. Every marker costs a history event and a TemporalChangeVersion
 * upsert that Temporal re-sends with every id so far: twenty of them were a tenth of a 10-step run's history.
 * A run that starts on this code takes them all under one marker; a run recorded before replays each by its
 * own marker, as it was recorded (begin-run had none: those runs never took it). Decided in the run's first
 * task, before any await.
 */
function changesOfThisRun(): (id: SettledChange) => boolean {
  const all = patched('settled-changes-through-begin-run')
  return (id) => all || (id !== 'begin-run' && patched(id))
}

/**
 * The run's own policy as an activity or the run's next part takes it: by the digest it was started with, or
 * the one the audit stored its inline spec under (`storedRef`); else inline, as the run was given it.
 */
function ownPolicy(input: AgentRunInput, storedRef?: string): { policy: unknown } | { policyRef: string } {
  const ref = input.policyRef ?? storedRef
  return ref !== undefined ? { policyRef: ref } : { policy: input.policy }
}

function parseInput(input: AgentRunInput, change: (id: SettledChange) => boolean): TaskContract {
  // Runs started before durations needed a unit read numbers as milliseconds; so does a continuation,
  // whose contract the first run already validated (and passes on in milliseconds). Spaced durations
  // (`30 m`) are read as runs recorded before clients refused them read them.
  const legacyDurations = input.carried !== undefined || !change('contract-durations-with-units')
  try {
    return parseContract(input.contract, { legacyDurations, spacedDurations: true })
  } catch (error) {
    // Clipped: the message may quote a field, and a failure over Temporal's limit would not be recorded.
    throw ApplicationFailure.nonRetryable(clip((error as Error).message, 2_000), FAILURE.contractError)
  }
}

/**
 * A client other than tether's may not have checked the sizes: over one, the run ends here, in its first
 * task, before it schedules anything Temporal would refuse (a continuation's were checked when it started).
 */
function refuseOversizedStart(input: AgentRunInput): void {
  const problem = input.carried === undefined ? startProblem(input) : undefined
  if (problem) throw ApplicationFailure.nonRetryable(problem.message, FAILURE.contractError)
}

/**
 * How a run that did not succeed ends its workflow: a non-retryable failure of `type` (`ContractRejected`,
 * `RunFailed`) whose message is the reason and whose details hold the run's result.
 */
function runFailure(
  type: typeof FAILURE.contractRejected | typeof FAILURE.runFailed,
  result: AgentRunResult,
): ApplicationFailure {
  return ApplicationFailure.create({
    type,
    message: result.reason ?? result.outcome,
    nonRetryable: true,
    details: [result],
  })
}

function failureReason(error: unknown): string {
  let current: unknown = error
  // An activity failure's cause says what actually went wrong.
  while (current instanceof ActivityFailure && current.cause) current = current.cause
  const message = current instanceof Error ? current.message : String(current)
  return clip(message, 500)
}
