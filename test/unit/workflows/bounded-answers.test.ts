/**
 * Whatever an answer holds, the run keeps, echoes and records it bounded: anyone who may signal a run can
 * send up to Temporal's payload limit, and none of it may reach an activity input whole.
 */
import { describe, expect, it } from 'vitest'
import { actionDigest } from '../../../src/identity/index.js'
import { DECISION_LIMITS, type PendingApproval } from '../../../src/run/index.js'
import { ApprovalBook } from '../../../src/workflows/approvals.js'

const base = { act: 'exec' as const, target: 'git push origin feature', tree: 'ask command git push' }
const request: PendingApproval = {
  approvalId: 'a-1',
  step: 1,
  call: 0,
  ...base,
  actionDigest: actionDigest(base),
  requestedAt: 1_000,
  deadline: 1_000 + 3_600_000,
  approvers: [],
}

function book(bounded = true): ApprovalBook {
  const made = new ApprovalBook('run-1', bounded)
  made.request(request)
  return made
}

const huge = 'm'.repeat(1_500_000)

describe('a bounded answer', () => {
  it('refuses a 1.5 MB approver name in a line of its own size, and records only a bounded claim', () => {
    const answers = book()
    const answered = answers.answer(
      { approvalId: 'a-1', decision: 'approve', approver: huge },
      'signal',
      2_000,
    )
    expect(answered).toMatchObject({ ok: false, type: 'InvalidDecision' })
    const { error } = answered as { error: string }
    expect(error.length).toBeLessThanOrEqual(DECISION_LIMITS.refusalChars + 100)
    expect(error).toContain('approver')
    const [rejected] = answers.rejected
    expect(JSON.stringify(rejected).length).toBeLessThan(2_000)
    expect(rejected?.input).toEqual({
      approvalId: 'a-1',
      approver: expect.stringMatching(/^m{64}… \[1,499,936 more characters not kept\]$/),
      decision: 'approve',
    })
    expect(answers.pending()).toHaveLength(1)
  })

  it('bounds what a refusal quotes: an unknown field of a megabyte, an approval id of a megabyte', () => {
    const answers = book()
    for (const sent of [
      { approvalId: 'a-1', decision: 'deny', approver: 'alice', [huge]: 1 },
      { approvalId: huge, decision: 'deny', approver: 'alice' },
      { approvalId: 'a-1', decision: 'deny', approver: 'alice', reason: huge },
      {
        approvalId: 'a-1',
        decision: 'deny',
        approver: 'alice',
        signature: { key: huge, value: 'x', issuedAt: 1 },
      },
    ]) {
      const checked = answers.validate(sent, 2_000)
      expect(checked.ok).toBe(false)
      expect((checked as { error: string }).error.length).toBeLessThan(700)
    }
  })

  it('refuses an edited command over the limits a command has', () => {
    const answers = book()
    const checked = answers.validate(
      {
        approvalId: 'a-1',
        decision: 'approve',
        approver: 'alice',
        replacement: ['echo', 'x'.repeat(40_000)],
      },
      2_000,
    )
    expect(checked).toMatchObject({
      ok: false,
      type: 'InvalidDecision',
      error: expect.stringContaining('argv[1] is 40,000 bytes; the limit is 32,768 bytes per argument'),
    })
  })

  it.each([
    ['a line feed', 'alice\nbob'],
    ['a right-to-left override', 'ali\u202ece'],
    ['a zero-width joiner', 'al\u200dice'],
  ])('refuses an approver name holding %s', (_, approver) => {
    expect(book().validate({ approvalId: 'a-1', decision: 'deny', approver }, 2_000)).toMatchObject({
      ok: false,
      type: 'InvalidDecision',
      error: expect.stringMatching(/approver: the approver's name holds U\+[0-9A-F]{4} at character \d+/),
    })
  })

  it('is read as before in runs recorded before answers were bounded', () => {
    const answers = book(false)
    const long = 'x'.repeat(100)
    expect(
      answers.answer({ approvalId: 'a-1', decision: 'deny', approver: long }, 'signal', 2_000),
    ).toMatchObject({
      ok: true,
      resolution: { decision: 'denied', decidedBy: long },
    })
  })
})
