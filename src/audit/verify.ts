/**
 * Re-verification of recorded answers (`tether audit approvals --verify`, `tether audit verify`). Nothing
 * the answer's own row says is taken on trust:
 *
 * - who could answer, and whether answers had to be signed, come from the run's effective policy — stored
 *   under the digest the run recorded, and refused when it no longer hashes to that digest — or, checked
 *   against Temporal history (anchor.ts), from the run's preparation in history itself. Under a policy that
 *   lists keys an answer without a valid signature fails, whatever the row's `identity` says;
 * - the signed statement must say exactly what the approval was (run, approval id, the digest of
 *   act/target/tree recomputed from the approval, the answer, the rule remembered, the edited command
 *   approved instead, the cost cap raised to, the reason), the key must belong to the approver the row names, and the signature
 *   must verify;
 * - it must have been signed while the approval was open: from its request (less the clock skew the
 *   workflow tolerates) to its deadline.
 */
import {
  actionDigest,
  canonicalJson,
  type DecisionStatement,
  fingerprintOf,
  verifyStatement,
} from '../identity/index.js'
import { Policy, PolicyError } from '../policy/index.js'
import { SIGNATURE_SKEW_MS } from '../run/index.js'
import type { ApprovalAnswerRow, ApprovalRow } from './queries.js'

export type AnswerCheck =
  | { status: 'verified'; fingerprint: string }
  | { status: 'unsigned' }
  | { status: 'failed'; reason: string }

/** Who could answer in a run and how: its approvers with their keys, and whether answers had to be signed. */
export interface AnswerIdentity {
  mode: 'signed' | 'unsigned'
  approvers: ReadonlyArray<{ name: string; keys: readonly string[] }>
}

/** The approval an answer answered, as requested, with the edited command approved instead (if any). */
export type AnsweredApproval = Pick<
  ApprovalRow,
  | 'runId'
  | 'approvalId'
  | 'act'
  | 'target'
  | 'tree'
  | 'requestedAt'
  | 'deadline'
  | 'replacement'
  | 'identity'
  | 'raiseTo'
>

const failed = (reason: string): AnswerCheck => ({ status: 'failed', reason })

/** Checks one answer against the approval it answered and the run's identity (see the module comment). */
export function checkAnswer(
  approval: AnsweredApproval,
  answer: ApprovalAnswerRow,
  identity: AnswerIdentity,
): AnswerCheck {
  // The stricter of the policy and the request: a row cannot make a signed run's answers unsigned.
  const signed = identity.mode === 'signed' || approval.identity === 'signed'
  if (!answer.signature) {
    if (signed) {
      return failed(
        identity.mode === 'signed'
          ? "the run's policy lists approvers with keys, so every answer must be signed; this one is not"
          : 'the approval required signed answers; this one is not signed',
      )
    }
    const names = identity.approvers.map((a) => a.name)
    if (names.length > 0 && !names.includes(answer.approver))
      return failed(`${answer.approver} is not on the run's approver list (${names.join(', ')})`)
    return { status: 'unsigned' }
  }
  const statement = answer.statement as DecisionStatement | undefined
  const key = answer.publicKey
  if (!statement || !key) return failed('the signature is recorded without its statement or key')
  const owner = identity.approvers.find((a) => a.keys.includes(key))
  if (!owner) return failed("the key is not on the approver list of the run's policy")
  if (owner.name !== answer.approver)
    return failed(`the key belongs to ${owner.name}, not ${answer.approver}`)
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
  // A budget approval's approval covers the cap it raised to (nothing else carries one).
  const raised = answer.decision === 'approve' ? (approval.raiseTo ?? null) : null
  if ((statement.raiseTo ?? null) !== raised)
    return failed("the signed statement's raiseTo differs from what the audit records")
  for (const [field, value] of Object.entries(expected)) {
    if (canonicalJson(statement[field as keyof DecisionStatement] ?? null) !== canonicalJson(value))
      return failed(`the signed statement's ${field} differs from what the audit records`)
  }
  // An empty reason is recorded as none.
  if ((statement.reason || null) !== (answer.reason || null))
    return failed("the signed statement's reason differs from what the audit records")
  const window = signingWindowProblem(statement.issuedAt, approval)
  if (window) return failed(window)
  if (!verifyStatement(key, statement, answer.signature)) return failed('the signature does not verify')
  return { status: 'verified', fingerprint: fingerprintOf(key) ?? '' }
}

/** Why `issuedAt` is outside the approval's window (the rule the workflow's validator applies), if it is. */
function signingWindowProblem(
  issuedAt: unknown,
  approval: Pick<AnsweredApproval, 'requestedAt' | 'deadline'>,
): string | undefined {
  if (typeof issuedAt !== 'number' || !Number.isFinite(issuedAt))
    return 'the signed statement has no issuedAt time'
  const at = new Date(issuedAt).toISOString()
  if (issuedAt < approval.requestedAt.getTime() - SIGNATURE_SKEW_MS)
    return `signed at ${at}, before the approval was requested (${approval.requestedAt.toISOString()})`
  if (issuedAt > approval.deadline.getTime())
    return `signed at ${at}, after the approval's deadline (${approval.deadline.toISOString()})`
  return undefined
}

/**
 * Who could answer in a run, from its effective policy as the database holds it: the spec stored under the
 * run's digest (which must still hash to it), or — for runs from before floors — the run's own policy.
 */
export function recordedIdentity(record: {
  policy: unknown
  effective?: { digest: string; spec?: unknown } | undefined
}): { identity: AnswerIdentity } | { problem: string } {
  const { effective } = record
  if (effective && effective.spec === undefined) {
    return {
      problem: `the run's effective policy ${effective.digest.slice(0, 12)}… is not in the policies table`,
    }
  }
  try {
    const policy = Policy.fromSpec(effective ? effective.spec : record.policy)
    if (effective && policy.digest !== effective.digest) {
      return {
        problem: `the policy stored under the run's digest ${effective.digest.slice(0, 12)}… no longer hashes to it: the policies table was edited`,
      }
    }
    return { identity: policy.identity }
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error
    return { problem: `the run's recorded policy does not load: ${error.message}` }
  }
}

/** An answer as the database alone can check it (`approvalAnswers` gives these records). */
export function verifyRecordedAnswer(record: {
  approval: ApprovalRow
  answer: ApprovalAnswerRow
  policy: unknown
  effective?: { digest: string; spec?: unknown } | undefined
}): AnswerCheck {
  const recorded = recordedIdentity(record)
  if ('problem' in recorded) return failed(recorded.problem)
  return checkAnswer(record.approval, record.answer, recorded.identity)
}
