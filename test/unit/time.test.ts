/** Deadlines as approvers read them: UTC, their own zone, and how long is left. */
import { describe, expect, it } from 'vitest'
import { formatDeadline, span } from '../../src/present/time.js'

const deadline = new Date('2026-12-02T04:51:00Z')

describe('formatDeadline', () => {
  it('gives UTC, the reader’s local time with its zone, and the time left', () => {
    expect(formatDeadline(deadline, new Date('2026-12-01T04:52:00Z'), 'America/New_York')).toBe(
      '2026-12-02 04:51 UTC (2026-12-01 23:51 GMT-5 your time), in 23h 59m',
    )
    expect(formatDeadline(deadline, new Date('2026-12-01T04:52:00Z'), 'Asia/Kolkata')).toBe(
      '2026-12-02 04:51 UTC (2026-12-02 10:21 GMT+5:30 your time), in 23h 59m',
    )
  })

  it('says so when the reader is on UTC, and when the deadline has passed', () => {
    expect(formatDeadline(deadline, new Date('2026-12-02T05:00:00Z'), 'Etc/UTC')).toBe(
      '2026-12-02 04:51 UTC (your local time), 9m ago',
    )
  })

  it('writes spans the way a person says them', () => {
    expect([45_000, 12 * 60_000, 185 * 60_000, 52 * 3_600_000].map(span)).toEqual([
      '45s',
      '12m',
      '3h 5m',
      '2d 4h',
    ])
  })
})
