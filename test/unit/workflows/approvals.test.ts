import { describe, expect, it } from 'vitest'
import { ApprovalBook, type PendingApproval } from '../../../src/workflows/approvals.js'

function request(overrides: Partial<PendingApproval> = {}): PendingApproval {
  return {
    approvalId: 'a-1',
    step: 3,
    call: 0,
    act: 'exec',
    target: 'npm install left-pad',
    requestedAt: 1_000,
    deadline: 61_000,
    approvers: ['alice', 'bob'],
    ...overrides,
  }
}

describe('ApprovalBook', () => {
  it('applies the first valid answer and keeps who, when, why and the channel', () => {
    const book = new ApprovalBook()
    book.request(request())
    const answered = book.answer(
      { approvalId: 'a-1', decision: 'approve', approver: 'alice', reason: 'fine', remember: true },
      'update',
      5_000,
    )
    expect(answered).toEqual({
      ok: true,
      resolution: {
        decision: 'approved',
        decidedBy: 'alice',
        channel: 'update',
        decidedAt: 5_000,
        reason: 'fine',
        remember: true,
      },
    })
    expect(book.pending()).toEqual([])
  })

  it('rejects a second answer, leaving the first in place', () => {
    const book = new ApprovalBook()
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
    const book = new ApprovalBook()
    book.request(request())
    expect(book.validate({ approvalId: 'nope', decision: 'approve', approver: 'alice' })).toEqual({
      ok: false,
      type: 'UnknownApproval',
      error: 'no approval nope in this run',
    })
    expect(book.validate({ approvalId: 'a-1', decision: 'approve', approver: 'mallory' })).toEqual({
      ok: false,
      type: 'NotAnApprover',
      error: 'mallory may not answer approval a-1; approvers: alice, bob',
    })
    const malformed = book.validate({ approvalId: 'a-1', decision: 'maybe', approver: 'alice' })
    expect(malformed.ok).toBe(false)
    expect(!malformed.ok && malformed.error).toMatch(/^malformed decision: decision: /)
    expect(!malformed.ok && malformed.type).toBe('InvalidDecision')
    for (const bad of [
      { approvalId: 'a-1', decision: 'approve', approver: '  ' },
      { approvalId: 'a-1', decision: 'approve', approver: 'alice', extra: 1 },
      'approve',
    ]) {
      expect(book.validate(bad)).toMatchObject({ ok: false, type: 'InvalidDecision' })
    }
    expect(book.pending()).toHaveLength(1)
  })

  it('lets anyone answer when the approver list is empty', () => {
    const book = new ApprovalBook()
    book.request(request({ approvers: [] }))
    expect(book.validate({ approvalId: 'a-1', decision: 'deny', approver: 'carol' }).ok).toBe(true)
  })

  it('remembers only on approve', () => {
    const book = new ApprovalBook()
    book.request(request())
    const denied = book.answer(
      { approvalId: 'a-1', decision: 'deny', approver: 'alice', remember: true },
      'update',
      1,
    )
    expect(denied.ok && denied.resolution.remember).toBe(false)
  })

  it('expires a pending approval as timeout or cancelled, never an answered one', () => {
    const book = new ApprovalBook()
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
      remember: false,
    })
    book.request(request({ approvalId: 'a-3' }))
    expect(book.expire('a-3', 'cancelled', 30)?.channel).toBe('cancel')
    expect(book.resolution('a-1')?.decision).toBe('approved')
  })
})
