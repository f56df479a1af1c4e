/** Verdict wording and rules that the workflow and the command activity both apply. */
import { backticks, ruleWords, words } from '../present/index.js'
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
