/**
 * How an approval's resolution reads after its decision word: a person's answer names them, the channel and
 * their reason; one tether resolved itself says what happened instead of naming tether twice.
 */
import { describe, expect, it } from 'vitest'
import { resolution } from '../../../src/cli/context.js'
import { resolvedHow } from '../../../src/present/index.js'

describe('resolvedHow', () => {
  it('names the person, the channel and the reason of an answer', () => {
    expect(resolvedHow({ decision: 'approved', decidedBy: 'ana', channel: 'inbox', reason: 'fine' })).toEqual(
      {
        how: ' by ana via inbox',
        reason: 'fine',
      },
    )
    expect(resolvedHow({ decision: 'denied', decidedBy: 'bob', channel: 'update', reason: null })).toEqual({
      how: ' by bob via update',
    })
  })

  it('says a run cancelled took its approvals with it, keeping a reason other than the default', () => {
    const cancelled = { decision: 'cancelled', decidedBy: 'tether', channel: 'cancel' }
    expect(resolvedHow({ ...cancelled, reason: 'run cancelled' })).toEqual({ how: ' with the run' })
    expect(resolvedHow({ ...cancelled, reason: 'superseded' })).toEqual({
      how: ' with the run',
      reason: 'superseded',
    })
  })

  it('says why an approval timed out', () => {
    const timeout = { decision: 'timeout', decidedBy: 'tether', channel: 'timeout' }
    expect(resolvedHow({ ...timeout, reason: 'timeout' }).how).toBe(': no answer by its deadline')
    expect(resolvedHow({ ...timeout, reason: "the run's wall-time budget ran out" }).how).toBe(
      ": the run's wall-time budget ran out",
    )
  })
})

describe('resolution (the CLI)', () => {
  it('prints the whole reason, or its first line clipped where a line must stay short', () => {
    const answer = {
      decision: 'denied',
      decidedBy: 'bob',
      channel: 'update',
      reason: `use pnpm${'!'.repeat(50)}\nmore`,
    }
    expect(resolution(answer)).toBe(` by bob via update: use pnpm${'!'.repeat(50)}\\nmore`)
    expect(resolution(answer, 10)).toBe(' by bob via update: use pnpm!…')
    expect(
      resolution({ decision: 'cancelled', decidedBy: 'tether', channel: 'cancel', reason: 'run cancelled' }),
    ).toBe(' with the run')
  })
})
