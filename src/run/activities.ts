/**
 * The activities `agentRun` calls, as types only: the workflow imports this file with `import type`, so no
 * activity code (or Node module) reaches the workflow bundle. Names are part of recorded histories: never
 * rename one; add a new name behind `patched()` instead.
 */

import type { OwnToolCall, ValidatedCall } from '../tools/index.js'
import type { TaskContract } from './contract.js'
import type {
  ActionVerdict,
  AgentRunResult,
  Channel,
  GateSummary,
  InlineMessage,
  McpListing,
  McpToolState,
  ModelTurn,
  PendingApproval,
  RememberedRule,
  Resolution,
  RunPreparation,
  ToolSummary,
  WorkspaceLaidOut,
} from './types.js'

export interface RunRef {
  runId: string
  step: number
}

/** Attempts a run's workspace layout gets at its start, in either shape (its own activity, or begin-run's). */
export const LAYOUT_ATTEMPTS = 3

/** What a run's start record holds. */
export interface RunStart {
  runId: string
  /** The Temporal run id of the first execution (stable across continue-as-new); absent in old histories. */
  executionId?: string
  contract: TaskContract
  /** The run's own policy: inline, or by the digest it is stored under (`policyRef`). */
  policy?: unknown
  policyRef?: string
  /** The effective policy's digest from the preparation (absent in old histories and rejected runs). */
  policyDigest?: string
  /** The Worker Deployment build the run started on (Worker Versioning; absent without it). */
  buildId?: string
  taskQueue: string
  parentRunId?: string
  startedAt: number
}

/**
 * The activities `agentRun` calls. A run's contract and policy are recorded when it starts; activities read
 * them by run id (cached per worker) rather than carrying them in every input, which keeps each step's
 * history small. Inputs recorded before still carry them, and are read as given.
 */
export interface TetherActivities {
  /** Local: checks the policy spec, the approver list and the contract's gate before the first step. */
  tetherPrepareRun(input: {
    contract: TaskContract
    policy?: unknown
    policyRef?: string
  }): Promise<RunPreparation>
  /** Records the run and writes the goal as transcript message 0 (idempotent). */
  tetherStartRun(input: RunStart): Promise<void>
  /**
   * `tetherStartRun`, then `tetherLayOutWorkspace`: one round trip where runs recorded before took two. The
   * record is retried until the audit is back; the layout fails the run after LAYOUT_ATTEMPTS failed attempts.
   */
  tetherBeginRun(input: RunStart): Promise<WorkspaceLaidOut>
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
      /** The MCP tools offered this turn, by the digest of the definition the run reviewed. */
      mcpTools?: Array<{ name: string; digest: string }>
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
      /** For a call of an MCP tool: whether the run offers it, and what its reviewed definition says. */
      mcp?: McpToolState
    },
  ): Promise<ActionVerdict>
  /**
   * At a run's start: the workspace laid out from the contract's source (or the contract's folder as it
   * is), and its first snapshot; for a rewind, the earlier run's transcript carried over.
   */
  tetherLayOutWorkspace(input: { runId: string; policyDigest?: string }): Promise<WorkspaceLaidOut>
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
      /** The workspace's root hash history recorded last (absent in runs from before snapshots). */
      tree?: string
      /**
       * The approval the command waited for (approval-judged-by-tool): the activity judges the command again
       * under the policy and `remembered` (an approval never crosses a deny), records the decision, and runs
       * the command only when it was not refused (else `refused` in its result).
       */
      approved?: ApprovedCall
      remembered?: RememberedRule[]
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
      name: Exclude<OwnToolCall['name'], 'exec'>
      workspace: string
      policy?: unknown
      policyDigest?: string
      remembered: RememberedRule[]
      tree?: string
      /** The approval the call waited for (approval-judged-by-tool): judged again, recorded, as for exec. */
      approved?: ApprovedCall
    },
  ): Promise<ToolSummary>
  /**
   * Lists the tools of the run's MCP servers (starting them where this worker has not), records every
   * definition it sees, and compares each with its pin: the run's (`pinned`, name → digest) or the policy's.
   */
  tetherMcpTools(input: RunRef & { servers: string[]; pinned: Record<string, string> }): Promise<McpListing>
  /**
   * Calls one MCP tool; the result, bounded like a command's output, goes to the transcript at `seq` and
   * its row to `mcp_calls`. A tool whose definition is no longer `digest` is not called.
   */
  tetherMcpCall(
    input: RunRef & {
      pending: InlineMessage[]
      call: number
      seq: number
      callId: string
      tool: string
      arguments: Record<string, unknown>
      digest: string
      timeoutMs: number
      outputCeiling: number
      /** The verdict that let it run, for the audit row. */
      verdict: Pick<ActionVerdict, 'effect' | 'rule' | 'layer'>
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
      tree?: string
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
  tetherApprovalDecided(input: ApprovalDecision): Promise<void>
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
  tetherRecordProvenance(input: {
    runId: string
    /** The workspace's root hash history recorded last (absent: no snapshots, the folder as it is). */
    tree?: string
  }): Promise<{ subject: string; keyid: string }>
  tetherRemindApprover(input: {
    runId: string
    request: PendingApproval
    contract?: TaskContract
    reminder: number
  }): Promise<void>
}

/** What a decision's record takes of its request (what approvers were shown is on the request's own row). */
export type DecidedRequest = Pick<
  PendingApproval,
  'approvalId' | 'step' | 'call' | 'act' | 'target' | 'rule' | 'layer' | 'requestedAt'
>

/** An answered approval, as its decision is recorded. */
export interface ApprovalDecision {
  runId: string
  request: DecidedRequest
  resolution: Resolution
  /** The rule added to the run's `remembered` layer, when the approvers chose one. */
  remembered?: { pattern: string }
  /** The re-check after an approval found a deny. */
  refusedAfterApproval?: ActionVerdict
}

/** An approved call's decision, which its tool's own activity judges again and records. */
export type ApprovedCall = Omit<ApprovalDecision, 'runId' | 'refusedAfterApproval'>

/** What the policy judges a call with, besides the call: the run's policy and what the run remembered. */
export interface JudgeRequest {
  /** The effective policy, by the digest history recorded at the run's start (absent in old histories). */
  policyDigest?: string
  remembered: RememberedRule[]
  workspace: string
  noRetry: string[]
  /** The workspace's root hash history recorded last (absent in runs from before snapshots). */
  tree?: string
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
