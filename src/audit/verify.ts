/**
 * Offline re-verification of recorded decisions (`tether audit approvals --verify`): each signed answer
 * must verify against the statement it recorded, that statement must say exactly what the audit says the
 * approval was (run, approval id, the digest of act/target/tree recomputed from the row, the answer, the
 * rule remembered, the edited command approved instead), and the key must be on the approver list of the
 * policy the run recorded.
 */
import {
  actionDigest,
  canonicalJson,
  type DecisionStatement,
  fingerprintOf,
  verifyStatement,
} from '../identity/index.js'
import { Policy, PolicyError } from '../policy/index.js'
import type { ApprovalAnswerRow, ApprovalRow } from './queries.js'

export type AnswerCheck =
  | { status: 'verified'; fingerprint: string }
  | { status: 'unsigned' }
  | { status: 'failed'; reason: string }

export function verifyRecordedAnswer(record: {
  approval: ApprovalRow
  answer: ApprovalAnswerRow
  policy: unknown
}): AnswerCheck {
  const { approval, answer } = record
  if (!answer.signature) {
    return approval.identity === 'signed'
      ? { status: 'failed', reason: 'the run required signatures, but this answer has none' }
      : { status: 'unsigned' }
  }
  const statement = answer.statement as DecisionStatement | undefined
  const key = answer.publicKey
  if (!statement || !key)
    return { status: 'failed', reason: 'the signature is recorded without its statement or key' }
  let approvers: ReadonlyArray<{ name: string; keys: string[] }>
  try {
    approvers = Policy.fromSpec(record.policy).identity.approvers
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error
    return { status: 'failed', reason: `the run's recorded policy does not load: ${error.message}` }
  }
  const owner = approvers.find((a) => a.keys.includes(key))
  if (!owner)
    return { status: 'failed', reason: "the key is not on the approver list of the run's recorded policy" }
  if (owner.name !== answer.approver)
    return { status: 'failed', reason: `the key belongs to ${owner.name}, not ${answer.approver}` }
  const digest = actionDigest({
    act: approval.act,
    target: approval.target,
    tree: typeof approval.tree === 'string' ? approval.tree : undefined,
  })
  const expected: Partial<DecisionStatement> = {
    run: approval.runId,
    approval: approval.approvalId,
    action: digest,
    decision: answer.decision,
    remember: answer.remember ?? null,
    // An approval covers the edited command that ran instead of the asked one (statements before carry null).
    replacement: answer.decision === 'approve' ? (approval.replacement ?? null) : null,
  }
  for (const [field, value] of Object.entries(expected)) {
    if (canonicalJson(statement[field as keyof DecisionStatement] ?? null) !== canonicalJson(value)) {
      return {
        status: 'failed',
        reason: `the signed statement's ${field} differs from what the audit records`,
      }
    }
  }
  if (!verifyStatement(key, statement, answer.signature))
    return { status: 'failed', reason: 'the signature does not verify' }
  return { status: 'verified', fingerprint: fingerprintOf(key) ?? '' }
}
