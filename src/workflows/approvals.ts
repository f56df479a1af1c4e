/**
 * The approvals of one run: requested asks, the answers that arrive (Update or Signal), deadlines and
 * cancellation. Pure: the workflow keeps one `ApprovalBook` in memory, its Update validator calls
 * `admit`, and its handlers call `answer`. Nothing is ever overwritten: the first denial or the last of
 * the approvals an ask needs decides it.
 *
 * Under signed identity (the policy lists approvers with keys) an answer counts only with a valid
 * Ed25519 signature, by a key on the list, over this run, this approval, this exact action, this answer
 * and this remembered rule, issued while the request was open. Verification is pure JavaScript, so it runs
 * in the Update validator (a refused Update leaves no history) and in the Signal handler alike.
 */
import {
  type DecisionStatement,
  fingerprintOf,
  formatPublicKey,
  parsePublicKey,
  verifyStatement,
} from '../identity/index.js'
import { formatMoney } from '../present/index.js'
import type { Answer, Channel, PendingApproval, Resolution } from '../run/index.js'
import {
  DECISION_LIMITS,
  type DecisionInput,
  type DecisionRejection,
  decisionSchema,
  legacyDecisionSchema,
  parseMoney,
  SIGNATURE_SKEW_MS,
} from '../run/index.js'
import { boundString } from '../tools/index.js'

export type { DecisionInput, DecisionRejection } from '../run/index.js'

/** A refused answer: its type and one line for a person. */
export interface Rejected {
  ok: false
  type: DecisionRejection
  error: string
}

/** Who may answer in this run. */
export interface BookIdentity {
  mode: 'signed' | 'unsigned'
  approvers: Array<{ name: string; keys: string[] }>
}

interface Entry {
  request: PendingApproval
  answers: Answer[]
  resolution?: Resolution
}

type Accepted = { ok: true; decision: DecisionInput; answer: Omit<Answer, 'channel' | 'at'> }
type Checked = Accepted | Rejected

export class ApprovalBook {
  private readonly entries = new Map<string, Entry>()
  private identity: BookIdentity = { mode: 'unsigned', approvers: [] }
  /** Answers that were refused, kept (bounded) so they can be recorded; never applied. */
  readonly rejected: Array<{ channel: Channel; at: number; error: string; input: unknown }> = []
  /** Bumped by every change to what `validate` reads, so an accepted answer is reused only while it holds. */
  private version = 0
  /**
   * The answer `admit` last accepted, with the input (as JSON), time and version it was checked at: an
   * Update's handler gets the input its validator just checked (decoded again), and checking a signature
   * twice costs milliseconds. Reused only when all three are the same, so the result is the one a second
   * check would give; on replay no validator runs and the handler checks the answer itself.
   */
  private accepted: { json: string; now: number; version: number; checked: Accepted } | undefined

  constructor(
    private readonly runId: string,
    /**
     * Every answer bounded before it is stored, echoed or recorded (DECISION_LIMITS); false only for runs
     * recorded before, which replay as they ran.
     */
    private readonly bounded = true,
  ) {}

  /** Set once the policy is known (before any approval is requested). */
  setIdentity(identity: BookIdentity): void {
    this.identity = identity
    this.version += 1
  }

  get identityMode(): BookIdentity['mode'] {
    return this.identity.mode
  }

  request(request: PendingApproval): void {
    this.entries.set(request.approvalId, { request, answers: [] })
    this.version += 1
  }

  /** Why `input` may not be applied now, or the checked answer. Read-only: safe in an Update validator. */
  validate(input: unknown, now: number): Checked {
    const reject = (type: DecisionRejection, error: string): Rejected => ({
      ok: false,
      type,
      error: this.bounded ? boundString(error, DECISION_LIMITS.refusalChars) : error,
    })
    const parsed = (this.bounded ? decisionSchema : legacyDecisionSchema).safeParse(input)
    if (!parsed.success) {
      const issues = parsed.error.issues.map(
        (issue) => `${issue.path.join('.') || '(decision)'}: ${issue.message}`,
      )
      return reject('InvalidDecision', `malformed decision: ${issues.join('; ')}`)
    }
    const decision = parsed.data
    const entry = this.entries.get(decision.approvalId)
    if (!entry) return reject('UnknownApproval', `no approval ${decision.approvalId} in this run`)
    const { request } = entry
    if (entry.resolution) {
      return reject(
        'AlreadyDecided',
        `approval ${decision.approvalId} was already ${entry.resolution.decision} by ${entry.resolution.decidedBy}`,
      )
    }
    const remember = rememberedBy(decision, request)
    if (typeof remember === 'object') return reject('InvalidDecision', remember.error)
    const replacement = replacementRefusal(decision, request)
    if (replacement) return reject('InvalidDecision', replacement)
    const raise = raiseRefusal(decision, request)
    if (raise) return reject('InvalidDecision', raise)

    let signed: Answer['signed']
    let approver = decision.approver
    if (this.identity.mode === 'signed') {
      const proof = decision.signature
      if (!proof) {
        return reject(
          'Unsigned',
          `this run's policy requires signed decisions; answer approval ${decision.approvalId} with \`tether approve\` or \`tether deny\` and your key`,
        )
      }
      // Keys are compared in the one spelling a policy may list them in: the same 32 bytes written another
      // way are the same key, never a second approver.
      const parsedKey = parsePublicKey(proof.key)
      const key = parsedKey.ok ? formatPublicKey(parsedKey.key) : proof.key
      const owner = this.identity.approvers.find((a) => a.keys.includes(key))
      const fingerprint = fingerprintOf(key) ?? 'an unreadable key'
      if (!owner) return reject('UnknownKey', `key ${fingerprint} is not on this run's approver list`)
      if (owner.name !== decision.approver) {
        return reject('UnknownKey', `key ${fingerprint} belongs to ${owner.name}, not ${decision.approver}`)
      }
      // A request may be for some approvers only (a budget approval: the budget approvers).
      if (request.approvers.length > 0 && !request.approvers.includes(owner.name)) {
        return reject(
          'NotAnApprover',
          `${owner.name} may not answer approval ${decision.approvalId}; approvers: ${request.approvers.join(', ')}`,
        )
      }
      const statement: DecisionStatement = {
        run: this.runId,
        approval: decision.approvalId,
        action: request.actionDigest ?? '',
        decision: decision.decision,
        remember: remember ?? null,
        reason: decision.reason ?? null,
        replacement: decision.replacement ?? null,
        ...(decision.raiseTo !== undefined ? { raiseTo: decision.raiseTo } : {}),
        issuedAt: proof.issuedAt,
      }
      if (!verifyStatement(key, statement, proof.value)) {
        return reject(
          'BadSignature',
          `the signature does not match this run, approval, action and answer (key ${fingerprint}); it may be forged, altered or made for another approval`,
        )
      }
      if (proof.issuedAt < request.requestedAt - SIGNATURE_SKEW_MS) {
        return reject(
          'OutsideValidity',
          `signed at ${iso(proof.issuedAt)}, before approval ${decision.approvalId} was requested (${iso(request.requestedAt)})`,
        )
      }
      if (proof.issuedAt > request.deadline) {
        return reject(
          'OutsideValidity',
          `signed at ${iso(proof.issuedAt)}, after the deadline of approval ${decision.approvalId} (${iso(request.deadline)})`,
        )
      }
      if (proof.issuedAt > now + SIGNATURE_SKEW_MS) {
        return reject(
          'OutsideValidity',
          `signed at ${iso(proof.issuedAt)}, in the future; check the signing machine's clock`,
        )
      }
      signed = { key, fingerprint, signature: proof.value, statement }
      approver = owner.name
    } else {
      const { approvers } = request
      if (approvers.length > 0 && !approvers.includes(decision.approver)) {
        return reject(
          'NotAnApprover',
          `${decision.approver} may not answer approval ${decision.approvalId}; approvers: ${approvers.join(', ')}`,
        )
      }
    }
    if (decision.decision === 'approve' && entry.answers.some((a) => a.approver === approver)) {
      return reject(
        'DuplicateApprover',
        `${approver} has already approved ${decision.approvalId}; it needs ${request.approvalsRequired ?? 1} different approvers`,
      )
    }
    // Everyone who approves one request approves the same command: as asked, or the same replacement.
    const earlier = entry.answers.find((a) => a.decision === 'approve')
    if (
      decision.decision === 'approve' &&
      earlier &&
      !sameCommand(earlier.replacement, decision.replacement)
    ) {
      return reject(
        'InvalidDecision',
        `${earlier.approver} approved ${decision.approvalId} ${earlier.replacement ? `with the edited command \`${earlier.replacement.join(' ')}\`` : 'as asked'}; approve the same command or deny`,
      )
    }
    return {
      ok: true,
      decision,
      answer: {
        approver,
        decision: decision.decision,
        ...(decision.reason ? { reason: decision.reason } : {}),
        ...(remember ? { remember } : {}),
        ...(decision.replacement ? { replacement: decision.replacement } : {}),
        ...(decision.raiseTo ? { raiseTo: decision.raiseTo } : {}),
        ...(signed ? { signed } : {}),
      },
    }
  }

  /**
   * An Update validator's check: `validate`, remembering an accepted answer so that `answer`, given the same
   * input at the same time and state, applies it without checking it again.
   */
  admit(input: unknown, now: number): Checked {
    const checked = this.validate(input, now)
    if (checked.ok) this.accepted = { json: JSON.stringify(input), now, version: this.version, checked }
    return checked
  }

  /**
   * Applies a valid answer: a denial decides, an approval decides once enough distinct approvers agree
   * (until then the request stays pending: `resolution` is undefined). An invalid answer is recorded in
   * `rejected` and changes nothing.
   */
  answer(
    input: unknown,
    channel: 'update' | 'signal',
    now: number,
  ): { ok: true; resolution?: Resolution; approvals: number; required: number } | Rejected {
    const checked = this.acceptedBefore(input, now) ?? this.validate(input, now)
    this.accepted = undefined
    if (!checked.ok) {
      this.rejected.push({
        channel,
        at: now,
        error: checked.error,
        input: this.bounded ? claimed(input) : input,
      })
      return checked
    }
    const entry = this.entries.get(checked.decision.approvalId) as Entry
    entry.answers.push({ ...checked.answer, channel, at: now })
    this.version += 1
    const required = entry.request.approvalsRequired ?? 1
    const approvals = entry.answers.filter((a) => a.decision === 'approve')
    if (checked.answer.decision === 'deny' || approvals.length >= required) {
      entry.resolution = this.resolve(entry, checked.answer.decision, channel, now)
    }
    return {
      ok: true,
      ...(entry.resolution ? { resolution: entry.resolution } : {}),
      approvals: approvals.length,
      required,
    }
  }

  /** What `admit` accepted for this very input, time and state, if nothing has changed since. */
  private acceptedBefore(input: unknown, now: number): Accepted | undefined {
    const last = this.accepted
    if (!last || last.now !== now || last.version !== this.version) return undefined
    return last.json === JSON.stringify(input) ? last.checked : undefined
  }

  private resolve(entry: Entry, last: 'approve' | 'deny', channel: Channel, now: number): Resolution {
    const answers = [...entry.answers]
    const deciding = last === 'deny' ? answers.filter((a) => a.decision === 'deny') : answers
    const approving = answers.filter((a) => a.decision === 'approve')
    const rules = new Set(approving.map((a) => a.remember))
    const remember = last === 'approve' && rules.size === 1 ? [...rules][0] : undefined
    const reason = deciding.at(-1)?.reason
    // Every approving answer named the same replacement, or none (see replacementRefusal).
    const replacement = last === 'approve' ? approving.at(-1)?.replacement : undefined
    const raiseTo = last === 'approve' ? approving.at(-1)?.raiseTo : undefined
    return {
      decision: last === 'approve' ? 'approved' : 'denied',
      decidedBy: deciding.map((a) => a.approver).join(', '),
      channel,
      decidedAt: now,
      ...(reason ? { reason } : {}),
      ...(remember ? { remember } : {}),
      ...(replacement ? { replacement } : {}),
      ...(raiseTo ? { raiseTo } : {}),
      identity: this.identity.mode,
      answers,
    }
  }

  /**
   * Resolves a still-pending approval without a human: its deadline passed (or the run's budget ran out:
   * `reason` says so), or the run was cancelled.
   */
  expire(
    approvalId: string,
    kind: 'timeout' | 'cancelled',
    now: number,
    reason?: string,
  ): Resolution | undefined {
    const entry = this.entries.get(approvalId)
    if (!entry || entry.resolution) return undefined
    this.version += 1
    entry.resolution = {
      decision: kind,
      decidedBy: 'tether',
      channel: kind === 'timeout' ? 'timeout' : 'cancel',
      decidedAt: now,
      reason: reason ?? (kind === 'timeout' ? 'timeout' : 'run cancelled'),
      ...(entry.answers.length > 0 ? { answers: [...entry.answers] } : {}),
    }
    return entry.resolution
  }

  resolution(approvalId: string): Resolution | undefined {
    return this.entries.get(approvalId)?.resolution
  }

  /** Approvals given so far to a request that needs several. */
  answers(approvalId: string): readonly Answer[] {
    return this.entries.get(approvalId)?.answers ?? []
  }

  pending(): PendingApproval[] {
    return [...this.entries.values()].filter((entry) => !entry.resolution).map((entry) => entry.request)
  }

  get(approvalId: string): PendingApproval | undefined {
    return this.entries.get(approvalId)?.request
  }
}

/**
 * What a refused answer claimed, as the audit records it (who, for which approval, which way), each bounded:
 * the rest of what was sent is not kept.
 */
function claimed(input: unknown): Record<string, string> {
  const sent = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>
  const kept: Record<string, string> = {}
  for (const [field, chars] of [
    ['approvalId', DECISION_LIMITS.approvalIdChars],
    ['approver', DECISION_LIMITS.approverChars],
    ['decision', 10],
  ] as const) {
    const value = sent[field]
    if (typeof value === 'string') kept[field] = boundString(value, chars)
  }
  return kept
}

/** The exact rule an answer remembers, or why it cannot (the request offered no such rule). */
function rememberedBy(
  decision: DecisionInput,
  request: PendingApproval,
): string | undefined | { error: string } {
  if (decision.decision !== 'approve' || !decision.remember) return undefined
  const offer = request.remember
  // A request recorded before offers had two forms carried one `pattern`.
  if (offer && 'pattern' in offer) return offer.pattern
  if (!offer || 'refused' in offer) {
    return {
      error: `approval ${decision.approvalId} offers no rule to remember${offer ? `: ${offer.refused}` : ''}`,
    }
  }
  if (decision.remember === 'wider') {
    return (
      offer.wider ?? {
        error: `approval ${decision.approvalId} offers no wider rule, only the exact one (\`${offer.exact}\`)`,
      }
    )
  }
  return offer.exact
}

/**
 * Why an answer's edited command cannot be taken: only an approval of a command can replace it, without
 * remembering (the offered rule is for the command as asked), and it needs a program to run.
 */
function replacementRefusal(decision: DecisionInput, request: PendingApproval): string | undefined {
  const { replacement } = decision
  if (!replacement) return undefined
  if (decision.decision !== 'approve') return 'a denial carries no replacement command'
  if (request.act !== 'exec') {
    return `only a command can be replaced; approval ${decision.approvalId} is a ${request.act}`
  }
  if (decision.remember) {
    return 'remember applies to the command as asked; approve the edited command without remembering'
  }
  if (!replacement[0]) return 'the replacement command needs a program (its first word is empty)'
  if (replacement.some((word) => word.includes('\u0000')))
    return 'the replacement command contains a NUL byte'
  return undefined
}

/**
 * Why an answer's cost cap cannot be taken: only a budget approval's approval raises a cap, and it must
 * (a budget approval approved without a new cap would stop again at once), to an amount above what the run
 * has spent.
 */
function raiseRefusal(decision: DecisionInput, request: PendingApproval): string | undefined {
  const { raiseTo } = decision
  if (request.act !== 'budget' || !request.budget) {
    return raiseTo === undefined
      ? undefined
      : `only a budget approval raises a cost cap; approval ${decision.approvalId} is a ${request.act}`
  }
  if (decision.decision !== 'approve') {
    return raiseTo === undefined ? undefined : 'a denial ends the run; it carries no new cap'
  }
  const spent = formatMoney(request.budget.spent)
  if (raiseTo === undefined) {
    return `approval ${decision.approvalId} is the run's cost cap: approve it with the new cap (raise to more than the ${spent} spent), or deny to end the run`
  }
  const parsed = parseMoney(raiseTo)
  if (!parsed.ok) return `raiseTo: ${parsed.error}`
  if (parsed.micros <= request.budget.spent) {
    return `raiseTo: ${formatMoney(parsed.micros)} is not more than the ${spent} the run has spent; raise the cap above it`
  }
  return undefined
}

function sameCommand(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (!a || !b) return a === b
  return a.length === b.length && a.every((word, i) => word === b[i])
}

function iso(ms: number): string {
  return new Date(ms).toISOString()
}
