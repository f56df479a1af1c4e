/**
 * The approvals of one run: requested asks, the answers that arrive (Update or Signal), deadlines and
 * cancellation. Pure: the workflow keeps one `ApprovalBook` in memory, its Update validator calls
 * `validate`, and its handlers call `answer`. The first valid answer wins; nothing is ever overwritten.
 */
import { z } from 'zod'
import type { Act } from './types.js'

export const decisionSchema = z
  .object({
    approvalId: z.string().min(1),
    decision: z.enum(['approve', 'deny']),
    approver: z.string().trim().min(1, 'the approver must be named'),
    reason: z.string().max(2_000).optional(),
    remember: z.boolean().optional(),
  })
  .strict()

/** An answer to an approval request, as an approver sends it. */
export type DecisionInput = z.infer<typeof decisionSchema>

/**
 * Why an answer was refused, as a machine-readable type: the Update validator throws a non-retryable
 * `ApplicationFailure` of this type, so a client in any SDK can branch on it.
 */
export type DecisionRejection =
  /** The answer does not have the decision shape (a field missing, unknown or of the wrong type). */
  | 'InvalidDecision'
  /** No approval with this id was requested in this run. */
  | 'UnknownApproval'
  /** The approval was already answered, timed out or cancelled. */
  | 'AlreadyDecided'
  /** The policy names approvers and this one is not among them. */
  | 'NotAnApprover'

/** A refused answer: its type and one line for a person. */
export interface Rejected {
  ok: false
  type: DecisionRejection
  error: string
}

export type Channel = 'update' | 'signal' | 'timeout' | 'cancel'

export interface Resolution {
  decision: 'approved' | 'denied' | 'timeout' | 'cancelled'
  decidedBy: string
  channel: Channel
  decidedAt: number
  reason?: string
  remember: boolean
}

export interface PendingApproval {
  approvalId: string
  step: number
  call: number
  act: Act
  target: string
  rule?: string
  layer?: string
  tree?: string
  /** What "approve and remember" would add to the run's `remembered` layer, or why it cannot. */
  remember?: { pattern: string } | { refused: string }
  requestedAt: number
  deadline: number
  approvers: string[]
}

interface Entry {
  request: PendingApproval
  resolution?: Resolution
}

export class ApprovalBook {
  private readonly entries = new Map<string, Entry>()
  /** Answers that were refused, kept so they can be recorded; never applied. */
  readonly rejected: Array<{ channel: Channel; at: number; error: string; input: unknown }> = []

  request(request: PendingApproval): void {
    this.entries.set(request.approvalId, { request })
  }

  /** Why `input` may not be applied now, or the parsed decision. Read-only: safe in an Update validator. */
  validate(input: unknown): { ok: true; decision: DecisionInput } | Rejected {
    const reject = (type: DecisionRejection, error: string): Rejected => ({ ok: false, type, error })
    const parsed = decisionSchema.safeParse(input)
    if (!parsed.success) {
      const issues = parsed.error.issues.map(
        (issue) => `${issue.path.join('.') || '(decision)'}: ${issue.message}`,
      )
      return reject('InvalidDecision', `malformed decision: ${issues.join('; ')}`)
    }
    const decision = parsed.data
    const entry = this.entries.get(decision.approvalId)
    if (!entry) return reject('UnknownApproval', `no approval ${decision.approvalId} in this run`)
    if (entry.resolution) {
      return reject(
        'AlreadyDecided',
        `approval ${decision.approvalId} was already ${entry.resolution.decision} by ${entry.resolution.decidedBy}`,
      )
    }
    const { approvers } = entry.request
    if (approvers.length > 0 && !approvers.includes(decision.approver)) {
      return reject(
        'NotAnApprover',
        `${decision.approver} may not answer approval ${decision.approvalId}; approvers: ${approvers.join(', ')}`,
      )
    }
    return { ok: true, decision }
  }

  /** Applies a valid answer; an invalid one is recorded in `rejected` and changes nothing. */
  answer(
    input: unknown,
    channel: 'update' | 'signal',
    now: number,
  ): { ok: true; resolution: Resolution } | Rejected {
    const checked = this.validate(input)
    if (!checked.ok) {
      this.rejected.push({ channel, at: now, error: checked.error, input })
      return checked
    }
    const { decision } = checked
    const resolution: Resolution = {
      decision: decision.decision === 'approve' ? 'approved' : 'denied',
      decidedBy: decision.approver,
      channel,
      decidedAt: now,
      remember: decision.decision === 'approve' && decision.remember === true,
      ...(decision.reason ? { reason: decision.reason } : {}),
    }
    ;(this.entries.get(decision.approvalId) as Entry).resolution = resolution
    return { ok: true, resolution }
  }

  /** Resolves a still-pending approval without a human: its deadline passed, or the run was cancelled. */
  expire(approvalId: string, kind: 'timeout' | 'cancelled', now: number): Resolution | undefined {
    const entry = this.entries.get(approvalId)
    if (!entry || entry.resolution) return undefined
    entry.resolution = {
      decision: kind,
      decidedBy: 'tether',
      channel: kind === 'timeout' ? 'timeout' : 'cancel',
      decidedAt: now,
      reason: kind === 'timeout' ? 'timeout' : 'run cancelled',
      remember: false,
    }
    return entry.resolution
  }

  resolution(approvalId: string): Resolution | undefined {
    return this.entries.get(approvalId)?.resolution
  }

  pending(): PendingApproval[] {
    return [...this.entries.values()].filter((entry) => !entry.resolution).map((entry) => entry.request)
  }

  get(approvalId: string): PendingApproval | undefined {
    return this.entries.get(approvalId)?.request
  }
}
