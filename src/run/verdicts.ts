/** Verdict wording and rules that the workflow, the tool activities and the audit's verifier all apply. */
import { backticks, ruleWords, words } from '../present/index.js'
import type { ApprovalDecision, ApprovedCall } from './activities.js'
import type { ActionVerdict } from './types.js'

export function describeRule(verdict: Pick<ActionVerdict, 'rule' | 'layer' | 'act'>): string {
  return words(ruleWords(verdict, backticks))
}

/**
 * The verdict on an approved edited command. Its approvers answered for exactly this command, so an ask it
 * meets is answered — unless that ask needs more approvers than approved it; a deny stays a deny.
 */
export function replacementVerdict(
  verdict: ActionVerdict,
  resolution: { answers?: Array<{ decision: string }> | undefined },
): ActionVerdict {
  if (verdict.effect !== 'ask') return verdict
  const approvals = (resolution.answers ?? []).filter((a) => a.decision === 'approve').length
  const required = verdict.approvalsRequired ?? 1
  if (approvals >= required) return verdict
  return {
    ...verdict,
    effect: 'deny',
    reason: `the edited command needs ${required} approvers (${describeRule(verdict)}) and ${approvals} approved it`,
  }
}

/** An approved call's decision as recorded: with the deny its re-check met, when `verdict` is one. */
export function approvedDecision(
  runId: string,
  approved: ApprovedCall,
  verdict?: ActionVerdict,
): ApprovalDecision {
  return { runId, ...approved, ...(verdict?.effect === 'deny' ? { refusedAfterApproval: verdict } : {}) }
}
