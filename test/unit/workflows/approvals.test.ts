import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { actionDigest, type DecisionStatement } from '../../../src/identity/index.js'
import { type ApproverKey, createKey, loadKey } from '../../../src/identity/keyring.js'
import { SIGNATURE_SKEW_MS } from '../../../src/run/decision.js'
import type { PendingApproval } from '../../../src/run/index.js'
import { ApprovalBook, type DecisionInput } from '../../../src/workflows/approvals.js'

const RUN = 'run-1'

function request(overrides: Partial<PendingApproval> = {}): PendingApproval {
  const base = {
    act: 'exec' as const,
    target: 'git push origin feature',
    tree: 'ask command git push origin feature',
  }
  return {
    approvalId: 'a-1',
    step: 3,
    call: 0,
    ...base,
    actionDigest: actionDigest(base),
    remember: { exact: 'git push origin feature' },
    requestedAt: 1_000_000,
    deadline: 1_000_000 + 3_600_000,
    approvers: ['alice', 'bob'],
    ...overrides,
  }
}

describe('ApprovalBook, unsigned (names trusted)', () => {
  const unsigned = () => {
    const book = new ApprovalBook(RUN)
    book.setIdentity({
      mode: 'unsigned',
      approvers: [
        { name: 'alice', keys: [] },
        { name: 'bob', keys: [] },
      ],
    })
    return book
  }

  it('applies the first valid answer and keeps who, when, why, the channel and the rule remembered', () => {
    const book = unsigned()
    book.request(request())
    const answered = book.answer(
      { approvalId: 'a-1', decision: 'approve', approver: 'alice', reason: 'fine', remember: true },
      'update',
      1_005_000,
    )
    expect(answered).toMatchObject({
      ok: true,
      approvals: 1,
      required: 1,
      resolution: {
        decision: 'approved',
        decidedBy: 'alice',
        channel: 'update',
        decidedAt: 1_005_000,
        reason: 'fine',
        remember: 'git push origin feature',
        identity: 'unsigned',
      },
    })
    expect(book.pending()).toEqual([])
  })

  it('rejects a second answer, leaving the first in place', () => {
    const book = unsigned()
    book.request(request())
    book.answer({ approvalId: 'a-1', decision: 'deny', approver: 'bob', reason: 'no' }, 'signal', 2_000)
    const second = book.answer({ approvalId: 'a-1', decision: 'approve', approver: 'alice' }, 'update', 3_000)
    expect(second).toEqual({
      ok: false,
      type: 'AlreadyDecided',
      error: 'approval a-1 was already denied by bob',
    })
    expect(book.resolution('a-1')?.decision).toBe('denied')
    expect(book.rejected).toHaveLength(1)
    expect(book.rejected[0]?.channel).toBe('update')
  })

  it('rejects unknown ids, unlisted approvers and malformed payloads without applying them', () => {
    const book = unsigned()
    book.request(request())
    expect(book.validate({ approvalId: 'nope', decision: 'approve', approver: 'alice' }, 0)).toEqual({
      ok: false,
      type: 'UnknownApproval',
      error: 'no approval nope in this run',
    })
    expect(book.validate({ approvalId: 'a-1', decision: 'approve', approver: 'mallory' }, 0)).toEqual({
      ok: false,
      type: 'NotAnApprover',
      error: 'mallory may not answer approval a-1; approvers: alice, bob',
    })
    const malformed = book.validate({ approvalId: 'a-1', decision: 'maybe', approver: 'alice' }, 0)
    expect(malformed).toMatchObject({
      ok: false,
      type: 'InvalidDecision',
      error: expect.stringMatching(/^malformed decision: decision: /),
    })
    for (const bad of [
      { approvalId: 'a-1', decision: 'approve', approver: '  ' },
      { approvalId: 'a-1', decision: 'approve', approver: 'alice', extra: 1 },
      { approvalId: 'a-1', decision: 'approve', approver: 'alice', remember: 'everything' },
      'approve',
    ]) {
      expect(book.validate(bad, 0)).toMatchObject({ ok: false, type: 'InvalidDecision' })
    }
    expect(book.pending()).toHaveLength(1)
  })

  it('lets anyone answer when the approver list is empty', () => {
    const book = new ApprovalBook(RUN)
    book.request(request({ approvers: [] }))
    expect(book.validate({ approvalId: 'a-1', decision: 'deny', approver: 'carol' }, 0).ok).toBe(true)
  })

  it('remembers only on approve, only what was offered, and a wider rule only when asked for by name', () => {
    const book = unsigned()
    book.request(request({ remember: { exact: 'go test ./...', wider: 'go test*' } }))
    const denied = book.answer(
      { approvalId: 'a-1', decision: 'deny', approver: 'alice', remember: true },
      'update',
      1,
    )
    expect(denied.ok && denied.resolution?.remember).toBeUndefined()
    book.request(request({ approvalId: 'a-2', remember: { exact: 'go test ./...', wider: 'go test*' } }))
    const wider = book.answer(
      { approvalId: 'a-2', decision: 'approve', approver: 'alice', remember: 'wider' },
      'update',
      1,
    )
    expect(wider.ok && wider.resolution?.remember).toBe('go test*')
    book.request(request({ approvalId: 'a-3' }))
    expect(
      book.validate({ approvalId: 'a-3', decision: 'approve', approver: 'alice', remember: 'wider' }, 1),
    ).toMatchObject({
      ok: false,
      type: 'InvalidDecision',
      error: 'approval a-3 offers no wider rule, only the exact one (`git push origin feature`)',
    })
    book.request(
      request({ approvalId: 'a-4', remember: { refused: 'sh runs whatever program text it is given' } }),
    )
    expect(
      book.validate({ approvalId: 'a-4', decision: 'approve', approver: 'alice', remember: true }, 1),
    ).toMatchObject({
      ok: false,
      error: 'approval a-4 offers no rule to remember: sh runs whatever program text it is given',
    })
  })

  it('takes an edited command only with an approval of a command, without remember, the same for every approver', () => {
    const book = unsigned()
    book.request(request({ approvalsRequired: 2 }))
    const edit = ['git', 'push', 'origin', 'feature', '--dry-run']
    const refused = (answer: Record<string, unknown>, error: string) =>
      expect(book.validate({ approvalId: 'a-1', approver: 'alice', ...answer }, 1)).toEqual({
        ok: false,
        type: 'InvalidDecision',
        error,
      })
    refused({ decision: 'deny', replacement: edit }, 'a denial carries no replacement command')
    refused(
      { decision: 'approve', replacement: edit, remember: true },
      'remember applies to the command as asked; approve the edited command without remembering',
    )
    refused(
      { decision: 'approve', replacement: ['', 'x'] },
      'the replacement command needs a program (its first word is empty)',
    )
    refused(
      { decision: 'approve', replacement: ['ls', 'a\u0000b'] },
      'malformed decision: replacement: argv[1] holds a NUL character (at character 1); the OS ends arguments at NUL: pass binary data through a file',
    )
    expect(
      book.validate({ approvalId: 'a-1', approver: 'alice', decision: 'approve', replacement: [] }, 1),
    ).toMatchObject({
      ok: false,
      type: 'InvalidDecision',
    })

    expect(
      book.answer(
        { approvalId: 'a-1', decision: 'approve', approver: 'alice', replacement: edit },
        'update',
        1,
      ),
    ).toEqual({
      ok: true,
      approvals: 1,
      required: 2,
    })
    // bob approving the command as asked would approve something alice did not.
    expect(book.validate({ approvalId: 'a-1', decision: 'approve', approver: 'bob' }, 2)).toEqual({
      ok: false,
      type: 'InvalidDecision',
      error:
        'alice approved a-1 with the edited command `git push origin feature --dry-run`; approve the same command or deny',
    })
    const both = book.answer(
      { approvalId: 'a-1', decision: 'approve', approver: 'bob', replacement: edit },
      'update',
      2,
    )
    expect(both).toMatchObject({ ok: true, resolution: { decision: 'approved', replacement: edit } })
    expect(both.ok && both.resolution?.answers?.map((a) => a.replacement)).toEqual([edit, edit])

    book.request(request({ approvalId: 'a-2', act: 'write', target: 'src/a.js', tree: undefined }))
    expect(
      book.validate({ approvalId: 'a-2', decision: 'approve', approver: 'alice', replacement: edit }, 1),
    ).toEqual({
      ok: false,
      type: 'InvalidDecision',
      error: 'only a command can be replaced; approval a-2 is a write',
    })
  })

  it('expires a pending approval as timeout or cancelled, never an answered one', () => {
    const book = unsigned()
    book.request(request())
    book.request(request({ approvalId: 'a-2' }))
    book.answer({ approvalId: 'a-1', decision: 'approve', approver: 'bob' }, 'update', 10)
    expect(book.expire('a-1', 'timeout', 20)).toBeUndefined()
    expect(book.expire('a-2', 'timeout', 20)).toEqual({
      decision: 'timeout',
      decidedBy: 'tether',
      channel: 'timeout',
      decidedAt: 20,
      reason: 'timeout',
    })
    book.request(request({ approvalId: 'a-3' }))
    expect(book.expire('a-3', 'cancelled', 30)?.channel).toBe('cancel')
    expect(book.resolution('a-1')?.decision).toBe('approved')
  })
})

describe('ApprovalBook, signed (keys on the policy)', () => {
  let dir: string
  let alice: ApproverKey
  let aliceNew: ApproverKey
  let bob: ApproverKey
  let mallory: ApproverKey
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tether-keys-'))
    for (const name of ['alice', 'alice2', 'bob', 'mallory']) createKey(name, dir)
    alice = loadKey('alice', dir)
    aliceNew = loadKey('alice2', dir)
    bob = loadKey('bob', dir)
    mallory = loadKey('mallory', dir)
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  const signedBook = (req = request()) => {
    const book = new ApprovalBook(RUN)
    book.setIdentity({
      mode: 'signed',
      approvers: [
        { name: 'alice', keys: [alice.publicKey, aliceNew.publicKey] },
        { name: 'bob', keys: [bob.publicKey] },
      ],
    })
    book.request(req)
    return book
  }

  /** An answer signed by `key`; `statement` overrides what is signed (to forge, replay or tamper). */
  function signed(
    key: ApproverKey,
    answer: Omit<DecisionInput, 'signature'>,
    statement: Partial<DecisionStatement> = {},
    req = request(),
  ): DecisionInput {
    const issuedAt = statement.issuedAt ?? req.requestedAt + 1_000
    const full: DecisionStatement = {
      run: RUN,
      approval: answer.approvalId,
      action: req.actionDigest as string,
      decision: answer.decision,
      remember: answer.remember ? (req.remember as { exact: string }).exact : null,
      reason: answer.reason ?? null,
      replacement: answer.replacement ?? null,
      issuedAt,
      ...statement,
    }
    return { ...answer, signature: { key: key.publicKey, value: key.sign(full), issuedAt } }
  }
  const now = request().requestedAt + 2_000

  it('accepts a valid signed approval and a valid signed denial, and keeps the proof', () => {
    const book = signedBook()
    const answer = signed(alice, {
      approvalId: 'a-1',
      decision: 'approve',
      approver: 'alice',
      remember: true,
    })
    const applied = book.answer(answer, 'update', now)
    expect(applied).toMatchObject({
      ok: true,
      resolution: {
        decision: 'approved',
        decidedBy: 'alice',
        remember: 'git push origin feature',
        identity: 'signed',
      },
    })
    const proof = applied.ok ? applied.resolution?.answers?.[0]?.signed : undefined
    expect(proof).toMatchObject({
      key: alice.publicKey,
      fingerprint: expect.stringMatching(/^SHA256:[0-9a-f]{32}$/),
    })
    expect(proof?.statement).toMatchObject({ run: RUN, approval: 'a-1', decision: 'approve' })

    const denyBook = signedBook()
    const deny = signed(bob, { approvalId: 'a-1', decision: 'deny', approver: 'bob', reason: 'not on main' })
    expect(denyBook.answer(deny, 'signal', now)).toMatchObject({
      ok: true,
      resolution: { decision: 'denied', reason: 'not on main' },
    })
  })

  it('accepts a signed edited command and keeps it in the proof', () => {
    const book = signedBook()
    const replacement = ['git', 'push', '--dry-run', 'origin', 'feature']
    const applied = book.answer(
      signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice', replacement }),
      'update',
      now,
    )
    expect(applied).toMatchObject({ ok: true, resolution: { decision: 'approved', replacement } })
    expect(applied.ok && applied.resolution?.answers?.[0]?.signed?.statement.replacement).toEqual(replacement)
  })

  it('accepts any of an approver’s listed keys (rotation)', () => {
    const book = signedBook()
    expect(
      book.validate(signed(aliceNew, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }), now).ok,
    ).toBe(true)
  })

  it.each([
    ['unsigned', () => ({ approvalId: 'a-1', decision: 'approve', approver: 'alice' }), 'Unsigned'],
    [
      'forged (signature of other bytes)',
      () => {
        const good = signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' })
        const other = signed(alice, { approvalId: 'a-1', decision: 'deny', approver: 'alice' })
        return { ...good, signature: { ...(good.signature as object), value: other.signature?.value } }
      },
      'BadSignature',
    ],
    [
      'signed with a key not on the list',
      () => signed(mallory, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }),
      'UnknownKey',
    ],
    [
      "someone else's listed key",
      () => signed(bob, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }),
      'UnknownKey',
    ],
    [
      'made for another approval',
      () => signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }, { approval: 'a-0' }),
      'BadSignature',
    ],
    [
      'made for another run',
      () => signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }, { run: 'run-2' }),
      'BadSignature',
    ],
    [
      'over a different action',
      () =>
        signed(
          alice,
          { approvalId: 'a-1', decision: 'approve', approver: 'alice' },
          {
            action: actionDigest({ act: 'exec', target: 'git push origin main' }),
          },
        ),
      'BadSignature',
    ],
    [
      'a signed deny turned into an approve',
      () => {
        const deny = signed(alice, { approvalId: 'a-1', decision: 'deny', approver: 'alice' })
        return { ...deny, decision: 'approve' }
      },
      'BadSignature',
    ],
    [
      'remember added after signing',
      () => ({
        ...signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }),
        remember: true,
      }),
      'BadSignature',
    ],
    [
      'with an edited command added after signing',
      () => ({
        ...signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }),
        replacement: ['git', 'push', 'origin', 'main'],
      }),
      'BadSignature',
    ],
    [
      'with its edited command changed after signing',
      () => ({
        ...signed(alice, {
          approvalId: 'a-1',
          decision: 'approve',
          approver: 'alice',
          replacement: ['git', 'push', '--dry-run'],
        }),
        replacement: ['git', 'push', '--force'],
      }),
      'BadSignature',
    ],
    [
      'issued before the request',
      () =>
        signed(
          alice,
          { approvalId: 'a-1', decision: 'approve', approver: 'alice' },
          {
            issuedAt: request().requestedAt - SIGNATURE_SKEW_MS - 1,
          },
        ),
      'OutsideValidity',
    ],
    [
      'issued after the deadline',
      () =>
        signed(
          alice,
          { approvalId: 'a-1', decision: 'approve', approver: 'alice' },
          { issuedAt: request().deadline + 1 },
        ),
      'OutsideValidity',
    ],
  ])('rejects an answer %s', (_, make, type) => {
    const book = signedBook()
    expect(book.answer(make(), 'update', now)).toMatchObject({ ok: false, type })
    expect(book.pending()).toHaveLength(1)
    expect(book.rejected).toHaveLength(1)
  })

  it('applies what its Update validator accepted as a second check would, and checks again when the answer, time or book differ', () => {
    const copy = (answer: DecisionInput): DecisionInput => JSON.parse(JSON.stringify(answer))
    const two = request({ approvalsRequired: 2 })
    const answer = signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' })
    // The same input, decoded again for the handler: applied as a fresh book applies it.
    const book = signedBook(two)
    expect(book.admit(answer, now)).toMatchObject({ ok: true })
    const fresh = signedBook(two)
    expect(book.answer(copy(answer), 'update', now)).toEqual(fresh.answer(copy(answer), 'update', now))
    expect(book.pending()).toEqual(fresh.pending())
    // Another of alice's answers applied in between: the validated one is now a duplicate.
    const raced = signedBook(two)
    expect(raced.admit(answer, now)).toMatchObject({ ok: true })
    const other = signed(aliceNew, { approvalId: 'a-1', decision: 'approve', approver: 'alice' })
    expect(raced.answer(other, 'signal', now)).toMatchObject({ ok: true, approvals: 1 })
    expect(raced.answer(copy(answer), 'update', now)).toMatchObject({ ok: false, type: 'DuplicateApprover' })
    // The approval expired in between (its deadline's timer): nothing is applied to it any more.
    const expired = signedBook(two)
    expect(expired.admit(answer, now)).toMatchObject({ ok: true })
    expired.expire('a-1', 'timeout', now)
    expect(expired.answer(copy(answer), 'update', now)).toMatchObject({ ok: false, type: 'AlreadyDecided' })
    // A different input (its signature altered): checked on its own.
    const tampered = signedBook(two)
    expect(tampered.admit(answer, now)).toMatchObject({ ok: true })
    const altered = copy(answer)
    altered.signature = {
      ...(altered.signature as NonNullable<DecisionInput['signature']>),
      value: other.signature?.value as string,
    }
    expect(tampered.answer(altered, 'update', now)).toMatchObject({ ok: false, type: 'BadSignature' })
    // Another time: signed after the moment it is applied at (beyond the skew), so refused then.
    const late = signed(
      alice,
      { approvalId: 'a-1', decision: 'approve', approver: 'alice' },
      { issuedAt: now + 2 * SIGNATURE_SKEW_MS },
    )
    const timed = signedBook(two)
    expect(timed.admit(late, now + 2 * SIGNATURE_SKEW_MS)).toMatchObject({ ok: true })
    expect(timed.answer(copy(late), 'update', now)).toMatchObject({ ok: false, type: 'OutsideValidity' })
  })

  it('needs N distinct approvers for a two-person rule; the same one twice is refused; one denial ends it', () => {
    const two = request({ approvalsRequired: 2 })
    const book = signedBook(two)
    const first = book.answer(
      signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }),
      'update',
      now,
    )
    expect(first).toEqual({ ok: true, approvals: 1, required: 2 })
    expect(book.pending()).toHaveLength(1)
    // Another of alice's keys is still alice.
    const again = book.answer(
      signed(aliceNew, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }),
      'update',
      now,
    )
    expect(again).toMatchObject({ ok: false, type: 'DuplicateApprover' })
    const second = book.answer(
      signed(bob, { approvalId: 'a-1', decision: 'approve', approver: 'bob' }),
      'update',
      now,
    )
    expect(second).toMatchObject({
      ok: true,
      approvals: 2,
      resolution: { decision: 'approved', decidedBy: 'alice, bob' },
    })

    const denied = signedBook(two)
    denied.answer(signed(alice, { approvalId: 'a-1', decision: 'approve', approver: 'alice' }), 'update', now)
    const no = denied.answer(
      signed(bob, { approvalId: 'a-1', decision: 'deny', approver: 'bob', reason: 'no' }),
      'update',
      now,
    )
    expect(no).toMatchObject({ ok: true, resolution: { decision: 'denied', decidedBy: 'bob' } })
  })
})
