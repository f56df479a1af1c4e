/**
 * The data that crosses the workflow boundary: the run's input and result, what activities return, and what
 * continue-as-new carries. Plain JSON only, bounded in size: transcripts and command output live in
 * Postgres, never in Temporal history. Shared by workflows and activities, so neither imports the other.
 */

import type { DecisionStatement } from '../identity/index.js'
import type { ToolCall } from '../tools/index.js'
import type { TaskContract, TaskContractInput } from './contract.js'

export type Act = 'read' | 'write' | 'exec' | 'net' | 'mcp'
export type Effect = 'allow' | 'ask' | 'deny'
/** What an approval is about: an action the policy asked about, or the run's cost cap (`budget`). */
export type ApprovalAct = Act | 'budget'

export type Outcome =
  | 'verified'
  | 'finished'
  | 'step-cap'
  | 'token-budget'
  | 'time-budget'
  | 'cost-budget'
  | 'cancelled'
  | 'failed'

/** A policy rule an approver asked tether to remember for the rest of the run. */
export interface RememberedRule {
  act: Act
  pattern: string
}

export interface AgentRunInput {
  contract: TaskContractInput | TaskContract
  /**
   * The run's own policy spec (`Policy#toSpec()` / a policy file's content), inline: for a client without the
   * worker's audit (an embedder's own workflow). Give it or `policyRef`, not both.
   */
  policy?: unknown
  /**
   * The run's own policy by reference: the digest (`Policy#digest`) it is stored under in the worker's audit
   * (`AuditStore#storeRunPolicy`), so history carries 64 characters whatever the policy's size.
   */
  policyRef?: string
  /** Set by continue-as-new; absent on a fresh start. */
  carried?: CarriedState
}

/** What one run hands to the next after continue-as-new. */
export interface CarriedState {
  step: number
  nextSeq: number
  inputTokens: number
  outputTokens: number
  startedAt: number
  remembered: RememberedRule[]
  pending: InlineMessage[]
  approvals: number
  continuedAsNew: number
  /** Micro-dollars spent on priced model turns (absent in runs from before costs). */
  cost?: number
  /** The cost cap a budget approver raised it to, when one did (it replaces `budgets.maxCost`). */
  costCap?: number
  /** The workspace's root hash history recorded last (absent in runs from before snapshots). */
  tree?: string
  /** The MCP tools the run reviewed and refused (absent: none, or a run from before MCP). */
  mcp?: McpCarried
}

/** An MCP server a run uses, as its preparation found it in the worker's configuration. */
export interface McpServerRef {
  name: string
  /** How long one call of its tools may take. */
  timeoutMs: number
}

/** What the workflow knows of an MCP tool when a call of it is judged. */
export type McpToolState = { offered: true; readOnly?: true } | { offered: false; why: string }

/** A tool as a listing found it: its name (`server.tool`) and the digest of its definition. */
export interface ListedTool {
  name: string
  digest: string
  /** The definition says it only reads (see `readsOnly`). */
  readOnly?: true
}

/** A listed definition that is not the one reviewed (the run's pin, or the policy's): a person decides. */
export interface ToolChange {
  name: string
  digest: string
  /** Why it is asked about, in one sentence. */
  reason: string
  /** What changed, for the approver: a line diff of the definitions (bounded). */
  diff: string
}

/** What `tetherMcpTools` found on the run's servers. */
export interface McpListing {
  tools: ListedTool[]
  /** Listed definitions that differ from their pins; each is withheld until approved. */
  changes: ToolChange[]
  /** Servers that could not be listed: an observation, and the run goes on without their tools. */
  unavailable: Array<{ server: string; reason: string }>
}

/** What a run keeps of its MCP tools across steps and continue-as-new. */
export interface McpCarried {
  /** The definitions reviewed: the first seen, or a change an approver approved. */
  pins: Record<string, { digest: string; readOnly?: true }>
  /** Changed definitions an approver refused (or nobody answered for): withheld without asking again. */
  refused: Record<string, string>
}

export interface AgentRunResult {
  runId: string
  outcome: Outcome
  reason?: string
  steps: number
  inputTokens: number
  outputTokens: number
  /** Micro-dollars spent on priced model turns; absent when no turn had a price. */
  cost?: number
}

/** The policy's judgement of one tool call, made in a local activity so it is recorded in history. */
export interface ActionVerdict {
  act: Act
  target: string
  effect: Effect
  rule?: string
  layer?: string
  /** One sentence for a human and the model. */
  reason: string
  /** The judged command tree, rendered for a human (exec only). */
  tree?: string
  /** Every judged node (exec only), for the audit. */
  checks?: unknown
  /** The command matches the contract's `noRetry` patterns. */
  noRetry?: boolean
  /**
   * What an approver's "remember" may add (the exact rule, and a wider one where safe), or why nothing may.
   * Verdicts recorded before offers had two forms carry a single `pattern`.
   */
  remember?:
    | { ok: true; act: Act; exact: string; wider?: string }
    | { ok: true; act: Act; pattern: string }
    | { ok: false; reason: string }
  /** Distinct approvers an ask needs (the deciding ask rules' `approvals`, default 1). */
  approvalsRequired?: number
}

/** What `tetherPrepareRun` learns from the policy before the first step. */
export interface RunPreparation {
  approvers: string[]
  /** Who may answer and whether answers must be signed (absent in runs recorded before: unsigned names). */
  identity?: { mode: 'signed' | 'unsigned'; approvers: Array<{ name: string; keys: string[] }> }
  /** Why the contract is rejected (its gate is not allowed), if it is. */
  rejected?: string
  /**
   * The digest of the effective policy (the worker's floor with the run's policy on it): recorded in history,
   * passed to every activity that judges or sandboxes. Absent in runs recorded before floors.
   */
  policyDigest?: string
  /** The floor's source: its file on the worker, or `built-in`. */
  floor?: string
  /**
   * The digest the run's own policy is stored under in the audit (`run_policies`): what its later parts carry
   * instead of the spec. Absent in runs recorded before, and when the audit could not take an inline spec.
   */
  policyRef?: string
  /** Who may raise the run's cost cap (approver names); absent in runs recorded before cost caps. */
  budgetApprovers?: string[]
  /** The worker's MCP servers this run uses (absent or empty: none). */
  mcp?: McpServerRef[]
  /**
   * tether's search attributes the namespace has registered (besides TetherPendingApproval): the run sets
   * only these, so a namespace without them still runs (recorded, so replay sets the same).
   */
  searchAttributes?: string[]
}

/** A transcript message the workflow made itself (a refusal, an invalid call, a gate failure). */
export interface InlineMessage {
  seq: number
  message:
    | { role: 'user'; content: string }
    | { role: 'tool'; results: Array<{ callId: string; name: string; output: string }> }
}

export interface ModelTurn {
  /** The assistant's text, bounded (the full text is in the transcript). */
  text: string
  toolCalls: ToolCall[]
  /** `cachedInputTokens` (prompt-cache reads) are part of `inputTokens`. */
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number }
  /** The model that answered, as the provider reported it. */
  modelId: string
  /** The model asked, as a provider id (`anthropic:claude-sonnet-4-5`): what the turn is priced as. */
  model?: string
  /** Why the model stopped (`stop`, `tool-calls`, `length`, …); absent in turns recorded before. */
  finishReason?: string
  /** What the turn cost, in micro-dollars; absent when no price is known for the model. */
  cost?: number
  /** The policy's verdict on each call, in order (null: not a valid call), when the turn was asked to judge. */
  verdicts?: Array<ActionVerdict | null>
}

/** What a tool activity returns; its full (bounded) observation went straight into the transcript. */
export interface ToolSummary {
  ok: boolean
  /** One line for the step's decision column, e.g. `exec npm test → exit 1`. */
  summary: string
  status?: string
  exitCode?: number
  /** The workspace's root hash after a tool that can change it (its snapshot). */
  tree?: string
  /** Judged again after its approval, the call met a deny: it did not run, and nothing was written. */
  refused?: ActionVerdict
}

export interface GateSummary {
  passed: boolean
  summary: string
  exitCode?: number
  status: string
  /** The workspace's root hash after the gate. */
  tree?: string
}

/** The workspace at a run's start: its first snapshot, and the next message seq when a transcript came along. */
export interface WorkspaceLaidOut {
  tree?: string
  nextSeq?: number
}

/** How an approval was answered: by an approver (Update or Signal), by its deadline, or by cancellation. */
export type Channel = 'update' | 'signal' | 'timeout' | 'cancel'

/** One person's answer, with its proof when signed. */
export interface Answer {
  approver: string
  decision: 'approve' | 'deny'
  channel: 'update' | 'signal'
  at: number
  reason?: string
  /** The rule this answer asked to remember (exact pattern), if any. */
  remember?: string
  /** The edited command this answer approved instead of the asked one. */
  replacement?: string[]
  /** The new cost cap this answer approves (a budget approval), as signed: `"0.05 USD"`. */
  raiseTo?: string
  signed?: { key: string; fingerprint: string; signature: string; statement: DecisionStatement }
}

export interface Resolution {
  decision: 'approved' | 'denied' | 'timeout' | 'cancelled'
  decidedBy: string
  channel: Channel
  decidedAt: number
  reason?: string
  /** The rule remembered for the rest of the run: only when every approving answer asked for the same one. */
  remember?: string
  /** The edited command approved instead of the asked one (every approving answer named the same one). */
  replacement?: string[]
  /** The cost cap approved (a budget approval), as signed. */
  raiseTo?: string
  /** Whether the answers were signed (`unsigned`: names were trusted, as the policy said). */
  identity?: 'signed' | 'unsigned'
  /** Every answer that counted, in order. */
  answers?: Answer[]
}

/** What "approve and remember" may add: the exact rule, and a wider one where that is safe. */
export type RememberOffer = { exact: string; wider?: string } | { refused: string }

export interface PendingApproval {
  approvalId: string
  step: number
  /** The call's index in its step; -1 for a budget approval (about the run, not a call). */
  call: number
  act: ApprovalAct
  target: string
  rule?: string
  layer?: string
  tree?: string
  /** SHA-256 of the judged action (act, target, tree): what a signature covers. */
  actionDigest?: string
  /** Shown before anyone answers: what "approve and remember" would add, or why it cannot. */
  remember?: RememberOffer | { pattern: string }
  /** Distinct approvers needed (a two-person rule is 2). */
  approvalsRequired?: number
  /** Whether answers must be signed (the policy's identity mode when the request was made). */
  identity?: 'signed' | 'unsigned'
  requestedAt: number
  /** When the wait ends: the approval timeout, or the run's wall-time budget when that ends first. */
  deadline: number
  /** Which of the two sets the deadline (absent in runs recorded before it was said). */
  deadlineBy?: DeadlineBy
  approvers: string[]
  /** A budget approval: micro-dollars spent and the cap reached; a raise must go above `spent`. */
  budget?: { spent: number; cap: number }
}

export type DeadlineBy = 'approval timeout' | 'wall-time budget'
