/**
 * The live line of `--follow` and the inbox's run page: what is in flight is read from Temporal's
 * description of the run (its pending activity and last heartbeat), and said with an elapsed time that moves
 * every second from the activity's start, not only when a heartbeat arrives.
 */
import { describe, expect, it } from 'vitest'
import { elapsedText, inFlightWords } from '../../../src/present/index.js'
import { inFlight } from '../../../src/run/index.js'

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
const at = (ms: number) => ({ seconds: Math.floor(ms / 1_000), nanos: (ms % 1_000) * 1e6 })

describe('work in flight', () => {
  const started = Date.UTC(2026, 11, 2, 4, 51, 0)
  const pending = [
    // Not something a person follows: skipped for the command behind it.
    { activityId: '1', activityType: { name: 'tetherAudit' } },
    {
      activityId: '7',
      activityType: { name: 'tetherExec' },
      attempt: 2,
      lastStartedTime: at(started),
      lastHeartbeatTime: at(started + 8_000),
      heartbeatDetails: {
        payloads: [{ data: json({ command: 'npm test', bytes: 3_500, elapsedMs: 8_000 }) }],
      },
    },
  ]

  it('names the command and its output from the heartbeat, and its elapsed time from its start', () => {
    // Twelve seconds in, four after the last heartbeat: the time is the reader's, the bytes the heartbeat's.
    const flight = inFlight(pending, started + 12_000)
    expect(flight).toEqual({
      kind: 'command',
      command: 'npm test',
      bytes: 3_500,
      elapsedMs: 12_000,
      startedAt: started,
      id: '7#2',
      beatAt: started + 8_000,
    })
    expect(inFlightWords(flight as NonNullable<typeof flight>)).toBe(
      'running `npm test` for 12s, 3.4 KiB of output so far',
    )
    // A second later the line is another line, with no heartbeat in between.
    expect(inFlightWords({ ...(flight as NonNullable<typeof flight>), elapsedMs: 13_000 })).toBe(
      'running `npm test` for 13s, 3.4 KiB of output so far',
    )
  })

  it('reads what it can: no heartbeat yet, a heartbeat that is not JSON, nothing in flight', () => {
    const noBeat = inFlight(
      [{ activityType: { name: 'tetherVerify' }, lastStartedTime: at(started) }],
      started + 3_000,
    )
    expect(noBeat && inFlightWords(noBeat)).toBe('the gate command for 3s')
    const garbled = inFlight(
      [
        {
          activityType: { name: 'tetherFileTool' },
          heartbeatDetails: { payloads: [{ data: json('x').slice(1) }] },
        },
      ],
      started,
    )
    expect(garbled && inFlightWords(garbled)).toBe('a file tool for 0s')
    expect(inFlight([{ activityType: { name: 'tetherAudit' } }])).toBeUndefined()
    expect(inFlight(undefined)).toBeUndefined()
  })

  it('says an elapsed time that changes every second however long it runs', () => {
    expect(elapsedText(999)).toBe('0s')
    expect(elapsedText(65_000)).toBe('1m 05s')
    expect(elapsedText(7_390_000)).toBe('2h 03m 10s')
    expect(elapsedText(-5)).toBe('0s')
  })
})
