/**
 * Offline re-verification of a recorded answer trusts no row: the identity comes from the run's effective
 * policy (which must still hash to the digest the run recorded), a policy that lists keys fails an unsigned
 * answer whatever the rows say, and the signature must have been made while the approval was open.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ApprovalAnswerRow, type ApprovalRow, verifyRecordedAnswer } from '../../../src/audit/index.js'
import { actionDigest, type DecisionStatement, fingerprintOf } from '../../../src/identity/index.js'
import { type ApproverKey, createKey, loadKey } from '../../../src/identity/keyring.js'
import { Policy } from '../../../src/policy/index.js'
import { SIGNATURE_SKEW_MS } from '../../../src/run/decision.js'

let dir: string
let alice: ApproverKey
let mallory: ApproverKey
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-verify-'))
  for (const name of ['alice', 'mallory']) createKey(name, dir)
  alice = loadKey('alice', dir)
  mallory = loadKey('mallory', dir)
})
afterAll(() => rm(dir, { recursive: true, force: true }))

const REQUESTED = Date.parse('2030-01-01T10:00:00Z')
const DEADLINE = REQUESTED + 3_600_000

function approval(overrides: Partial<ApprovalRow> = {}): ApprovalRow {
  const action = { act: 'exec' as const, target: 'touch a.txt', tree: 'ask command touch a.txt' }
  return {
    approvalId: 'a-1',
    runId: 'run-1',
    step: 1,
    call: 0,
    ...action,
    approvers: ['alice'],
    requestedAt: new Date(REQUESTED),
    deadline: new Date(DEADLINE),
    decision: 'approved',
    decidedBy: 'alice',
    actionDigest: actionDigest(action),
    approvalsRequired: 1,
    identity: 'signed',
    fromFloor: false,
    ...overrides,
  }
}

/** alice's answer, signed by `key` at `issuedAt`. */
function answer(key: ApproverKey, issuedAt = REQUESTED + 60_000): ApprovalAnswerRow {
  const row = approval()
  const statement: DecisionStatement = {
    run: row.runId,
    approval: row.approvalId,
    action: row.actionDigest as string,
    decision: 'approve',
    remember: null,
    reason: null,
    replacement: null,
    issuedAt,
  }
  return {
    approvalId: row.approvalId,
    approver: 'alice',
    decision: 'approve',
    channel: 'update',
    answeredAt: new Date(issuedAt),
    publicKey: key.publicKey,
    keyFingerprint: fingerprintOf(key.publicKey),
    signature: key.sign(statement),
    statement,
  }
}

const signedPolicy = (key = alice) =>
  Policy.tiered()
    .withApprovers([{ name: 'alice', keys: [key.publicKey] }])
    .toSpec()
/** The run's effective policy as the policies table holds it: its spec under its digest. */
const stored = (spec: unknown) => ({ digest: Policy.fromSpec(spec).digest, spec })

describe('verifyRecordedAnswer', () => {
  it('verifies a signed answer against the effective policy stored under the run digest', () => {
    const check = verifyRecordedAnswer({
      approval: approval(),
      answer: answer(alice),
      // The run's own policy lists nobody: its approvers came from the floor, in the effective policy.
      policy: Policy.tiered().toSpec(),
      effective: stored(signedPolicy()),
    })
    expect(check).toEqual({ status: 'verified', fingerprint: fingerprintOf(alice.publicKey) })
  })

  it('fails an unsigned answer under a policy that lists keys, even when the rows say unsigned', () => {
    const unsigned: ApprovalAnswerRow = { ...answer(alice), signature: undefined, statement: undefined }
    const check = verifyRecordedAnswer({
      approval: approval({ identity: 'unsigned' }),
      answer: { ...unsigned, publicKey: undefined, keyFingerprint: undefined },
      policy: signedPolicy(),
    })
    expect(check).toEqual({
      status: 'failed',
      reason: "the run's policy lists approvers with keys, so every answer must be signed; this one is not",
    })
  })

  it('keeps an unsigned answer unsigned where the policy trusts names, but only for a listed name', () => {
    const names = Policy.tiered().withApprovers(['alice'], 'unsigned').toSpec()
    const unsigned = (approver: string): ApprovalAnswerRow => ({
      ...answer(alice),
      approver,
      signature: undefined,
      statement: undefined,
      publicKey: undefined,
      keyFingerprint: undefined,
    })
    const record = (approver: string) => ({
      approval: approval({ identity: 'unsigned' }),
      answer: unsigned(approver),
      policy: names,
    })
    expect(verifyRecordedAnswer(record('alice'))).toEqual({ status: 'unsigned' })
    expect(verifyRecordedAnswer(record('mallory'))).toEqual({
      status: 'failed',
      reason: "mallory is not on the run's approver list (alice)",
    })
  })

  it('fails a signature made outside the approval window: issuedAt 0, before the request, after the deadline', () => {
    const check = (issuedAt: number) =>
      verifyRecordedAnswer({ approval: approval(), answer: answer(alice, issuedAt), policy: signedPolicy() })
    expect(check(0)).toEqual({
      status: 'failed',
      reason: `signed at 1970-01-01T00:00:00.000Z, before the approval was requested (2030-01-01T10:00:00.000Z)`,
    })
    expect(check(REQUESTED - SIGNATURE_SKEW_MS - 1)).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('before the approval was requested'),
    })
    expect(check(DEADLINE + 1)).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining("after the approval's deadline"),
    })
    // The clock skew the workflow tolerates, and the deadline itself, are inside.
    expect(check(REQUESTED - SIGNATURE_SKEW_MS)).toMatchObject({ status: 'verified' })
    expect(check(DEADLINE)).toMatchObject({ status: 'verified' })
  })

  it('fails when the policy stored under the run digest no longer hashes to it, or is gone', () => {
    const swapped = { digest: stored(signedPolicy()).digest, spec: signedPolicy(mallory) }
    expect(
      verifyRecordedAnswer({ approval: approval(), answer: answer(mallory), policy: {}, effective: swapped }),
    ).toMatchObject({ status: 'failed', reason: expect.stringContaining('no longer hashes to it') })
    expect(
      verifyRecordedAnswer({
        approval: approval(),
        answer: answer(alice),
        policy: signedPolicy(),
        effective: { digest: stored(signedPolicy()).digest },
      }),
    ).toMatchObject({ status: 'failed', reason: expect.stringContaining('is not in the policies table') })
  })

  it("fails a key that is not the policy's, and an edited reason", () => {
    expect(
      verifyRecordedAnswer({ approval: approval(), answer: answer(mallory), policy: signedPolicy() }),
    ).toEqual({ status: 'failed', reason: "the key is not on the approver list of the run's policy" })
    expect(
      verifyRecordedAnswer({
        approval: approval(),
        answer: { ...answer(alice), reason: 'approved after review' },
        policy: signedPolicy(),
      }),
    ).toEqual({
      status: 'failed',
      reason: "the signed statement's reason differs from what the audit records",
    })
  })
})
