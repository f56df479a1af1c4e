/**
 * An approver's answer as it is sent, and the statement they sign for it: built from what they were shown
 * of the approval. Pure, so `tether approve` (signing with Node) and the web inbox (signing in the
 * browser with WebCrypto) build the very same statement from the very same code.
 */
import { actionDigest, type DecisionStatement } from './statement.js'

/** What an approver is shown of an approval: the fields of the audit's approval row that a statement covers. */
export interface ShownApproval {
  runId: string
  approvalId: string
  act: string
  target: string
  /** The judged command tree (a string for exec; null otherwise). */
  tree: unknown
  actionDigest?: string | undefined
  rememberOffer?: { exact: string; wider?: string | undefined } | { refused: string } | undefined
  identity?: 'signed' | 'unsigned' | undefined
}

/** What an approver says about one approval, before it is signed (when the run requires signatures). */
export interface AnswerDraft {
  decision: 'approve' | 'deny'
  /** The approver's name, as the policy lists it. */
  approver: string
  reason?: string | undefined
  /** Remember the exact rule the request offered, or the wider one (approve only). */
  remember?: 'exact' | 'wider' | undefined
  /** Approve this command instead (exec only): argv, program first. */
  replacement?: string[] | undefined
  /** A budget approval: the new cost cap (`"50 USD"`) this approval raises the run's cap to. */
  raiseTo?: string | undefined
}

/** The decision as the `decide` Update and Signal take it, before its signature. */
export interface UnsignedDecision {
  approvalId: string
  decision: 'approve' | 'deny'
  approver: string
  reason?: string
  remember?: 'exact' | 'wider'
  replacement?: string[]
  raiseTo?: string
}

export class AnswerError extends Error {
  override name = 'AnswerError'
}

/**
 * The decision to send for `approval`, and — when its run requires signed decisions — the statement to
 * sign: the run, the approval, the digest of the action (recomputed here from what the approver is shown,
 * and refused if it differs from the recorded one), the answer, the exact rule remembered, the edited
 * command and the time.
 */
export function prepareAnswer(
  approval: ShownApproval,
  draft: AnswerDraft,
  issuedAt: number,
): { decision: UnsignedDecision; statement?: DecisionStatement } {
  const approving = draft.decision === 'approve'
  const remember = approving ? rememberedRule(approval, draft.remember) : undefined
  const replacement = approving && draft.replacement ? [...draft.replacement] : undefined
  const raiseTo = approving ? draft.raiseTo : undefined
  const decision: UnsignedDecision = {
    approvalId: approval.approvalId,
    decision: draft.decision,
    approver: draft.approver,
    ...(draft.reason ? { reason: draft.reason } : {}),
    ...(draft.remember && approving ? { remember: draft.remember } : {}),
    ...(replacement ? { replacement } : {}),
    ...(raiseTo ? { raiseTo } : {}),
  }
  if (approval.identity !== 'signed') return { decision }
  const shown = actionDigest({
    act: approval.act,
    target: approval.target,
    tree: typeof approval.tree === 'string' ? approval.tree : undefined,
  })
  if (!approval.actionDigest || shown !== approval.actionDigest) {
    throw new AnswerError(
      `the recorded action of approval ${approval.approvalId} does not match its digest; refusing to sign what the audit shows`,
    )
  }
  return {
    decision,
    statement: {
      run: approval.runId,
      approval: approval.approvalId,
      action: approval.actionDigest,
      decision: draft.decision,
      remember: remember ?? null,
      reason: draft.reason ?? null,
      replacement: replacement ?? null,
      ...(raiseTo ? { raiseTo } : {}),
      issuedAt,
    },
  }
}

/** The exact rule an answer remembers, from what the request offered. */
function rememberedRule(approval: ShownApproval, which: 'exact' | 'wider' | undefined): string | undefined {
  if (!which) return undefined
  const offer = approval.rememberOffer
  if (!offer || 'refused' in offer) {
    throw new AnswerError(
      `nothing can be remembered for approval ${approval.approvalId}${offer ? `: ${offer.refused}` : ''}; answer without remembering`,
    )
  }
  if (which === 'wider') {
    if (!offer.wider) {
      throw new AnswerError(
        `approval ${approval.approvalId} offers no wider rule; remember the exact one (\`${offer.exact}\`) or nothing`,
      )
    }
    return offer.wider
  }
  return offer.exact
}
