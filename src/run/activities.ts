/**
 * The activities `agentRun` calls, as types only: the workflow imports this file with `import type`, so no
 * activity code (or Node module) reaches the workflow bundle. Names are part of recorded histories: never
 * rename one; add a new name behind `patched()` instead.
 */

import type { ValidatedCall } from '../tools/index.js'
import type { TaskContract } from './contract.js'
import type {
  ActionVerdict,
  AgentRunResult,
  Channel,
  GateSummary,
  InlineMessage,
  ModelTurn,
  PendingApproval,
  RememberedRule,
  Resolution,
  RunPreparation,
  ToolSummary,
} from './types.js'

export interface RunRef {
  runId: string
  step: number
}

/**
 * The activities `agentRun` calls. A run's contract and policy are recorded when it starts; activities read
 * them by run id (cached per worker) rather than carrying them in every input, which keeps each step's
 * history small. Inputs recorded before still carry them, and are read as given.
 */
export interface TetherActivities {
  /** Local: checks the policy spec, the approver list and the contract's gate before the first step. */
  tetherPrepareRun(input: { contract: TaskContract; policy: unknown }): Promise<RunPreparation>
  /** Records the run and writes the goal as transcript message 0 (idempotent). */
  tetherStartRun(input: {
    runId: string
    /** The Temporal run id of the first execution (stable across continue-as-new); absent in old histories. */
    executionId?: string
    contract: TaskContract
    policy: unknown
    /** The effective policy's digest from the preparation (absent in old histories and rejected runs). */
    policyDigest?: string
    /** The Worker Deployment build the run started on (Worker Versioning; absent without it). */
    buildId?: string
    taskQueue: string
    parentRunId?: string
    startedAt: number
  }): Promise<void>
  /**
   * Records the previous step's row (when the workflow hands it over), stores `pending`, loads the
   * transcript, calls the model, stores the reply at `replySeq`; with `judge`, also returns the policy's
   * verdict on each of the reply's calls, so no separate check is needed before they run.
   */
  tetherModelTurn(
    input: RunRef & {
      replySeq: number
      pending: InlineMessage[]
      contract?: TaskContract
      previousStep?: StepRecord
      judge?: JudgeRequest
    },
  ): Promise<ModelTurn>
  /** Local: the policy's verdict on one validated call (paths resolved on disk, commands analysed). */
  tetherCheckAction(
    input: JudgeRequest & {
      /** The run whose recorded policy judges (runs recorded before carried the spec itself). */
      runId?: string
      policy?: unknown
      call: ValidatedCall
    },
  ): Promise<ActionVerdict>
  /**
   * Runs one command; its observation goes to the transcript at `seq` (after `pending`, the observations
   * the workflow made itself since the last write: the transcript has no gaps) and its row to `exec_results`.
   */
  tetherExec(
    input: RunRef & {
      pending: InlineMessage[]
      call: number
      seq: number
      callId: string
      argv: string[]
      workspace: string
      timeoutMs: number
      outputCeiling: number
      noRetry: boolean
      policyDigest?: string
      /** Told to the model before the result: the command runs in place of the one it asked for. */
      note?: string
    },
  ): Promise<ToolSummary>
  /** Runs one file tool; the full arguments are read back from the transcript (the reply at `replySeq`). */
  tetherFileTool(
    input: RunRef & {
      pending: InlineMessage[]
      call: number
      seq: number
      replySeq: number
      callId: string
      name: Exclude<ValidatedCall['name'], 'exec'>
      workspace: string
      policy?: unknown
      policyDigest?: string
      remembered: RememberedRule[]
    },
  ): Promise<ToolSummary>
  /** Runs the contract's verification command (allow-only) and records the gate events. */
  tetherVerify(
    input: RunRef & {
      pending: InlineMessage[]
      seq: number | null
      contract?: TaskContract
      policy?: unknown
      policyDigest?: string
      timeoutMs: number
    },
  ): Promise<GateSummary>
  /** Projects one finished step: its row and its refusals (idempotent). */
  tetherRecordStep(input: StepRecord): Promise<void>
  /** Records the run's result; `finishedAt` is workflow time. */
  tetherFinishRun(input: AgentRunResult & { finishedAt: number; executionId?: string }): Promise<void>
  tetherApprovalRequested(input: {
    runId: string
    request: PendingApproval
    goal: string
    contract?: TaskContract
  }): Promise<void>
  tetherApprovalDecided(input: {
    runId: string
    request: PendingApproval
    resolution: Resolution
    /** The rule added to the run's `remembered` layer, when the approvers chose one. */
    remembered?: { pattern: string }
    /** The re-check after an approval found a deny. */
    refusedAfterApproval?: ActionVerdict
  }): Promise<void>
  tetherApprovalRejected(input: {
    runId: string
    step: number
    channel: Channel
    at: number
    error: string
    input: unknown
  }): Promise<void>
  /**
   * Signs the finished run's provenance (an in-toto Statement in a DSSE envelope, subject the final
   * workspace tree) with the worker's key and stores it; returns the subject's digest and the key's id.
   */
  tetherRecordProvenance(input: { runId: string }): Promise<{ subject: string; keyid: string }>
  tetherRemindApprover(input: {
    runId: string
    request: PendingApproval
    contract?: TaskContract
    reminder: number
  }): Promise<void>
}

/** What the policy judges a call with, besides the call: the run's policy and what the run remembered. */
export interface JudgeRequest {
  /** The effective policy, by the digest history recorded at the run's start (absent in old histories). */
  policyDigest?: string
  remembered: RememberedRule[]
  workspace: string
  noRetry: string[]
}

export interface StepRecord {
  runId: string
  step: number
  toolCalls: Array<{ id: string; name: string; args: unknown }>
  decision: string
  observation: string
  inputTokens: number
  outputTokens: number
  /** Prompt-cache reads (part of `inputTokens`), the model asked and the turn's cost in micro-dollars. */
  cachedInputTokens?: number
  model?: string
  cost?: number
  startedAt: number
  finishedAt: number
  refusals: Array<{ call: number; verdict: ActionVerdict }>
}
