/**
 * `--follow` prints a run's timeline as it grows. A step's row is recorded with the model turn after it, so
 * its command's line comes in first: it must not read as part of the step printed before it.
 */
import { stripVTControlCharacters } from 'node:util'
import { describe, expect, it } from 'vitest'
import type { TimelineEntry } from '../../../src/audit/reader.js'
import { followedLines, logsProgress } from '../../../src/cli/follow.js'
import type { Flight } from '../../../src/run/index.js'

const at = new Date('2026-12-05T09:00:00Z')

const row = (step: number, decision: string): TimelineEntry => ({
  type: 'step',
  runId: 'r',
  step,
  toolCalls: [],
  decision,
  observation: '',
  inputTokens: 1,
  outputTokens: 1,
  startedAt: at,
  finishedAt: at,
})

const ran = (step: number, argv: string[]): TimelineEntry => ({
  type: 'exec',
  runId: 'r',
  step,
  call: 0,
  attempt: 1,
  argv,
  cwd: '/w',
  status: 'exited',
  exitCode: 0,
  durationMs: 200,
  stdout: { bytes: 38, text: '', elided: 0, lines: 1, sha256: '0'.repeat(64) },
  stderr: { bytes: 0, text: '', elided: 0, lines: 0, sha256: '0'.repeat(64) },
  startedAt: at,
  finishedAt: at,
  kind: 'tool',
})

const plain = (lines: string[]) => lines.map((line) => stripVTControlCharacters(line))

describe('following a run', () => {
  it("heads a step's command with its step when the command comes in before the step's row", () => {
    const headed = new Set<number>()
    // One poll: the layout's clone (step 0, no row), step 3 whole, and step 4's command, its row not yet in.
    expect(
      plain(
        followedLines([ran(0, ['git', 'clone']), row(3, 'write calc.js'), ran(4, ['npm', 'test'])], headed),
      ),
    ).toEqual([
      '  ran       git clone  → exit 0  0.2 s, 38 B',
      'step 3  write calc.js',
      'step 4  …',
      '  ran       npm test  → exit 0  0.2 s, 38 B',
    ])
    // The next poll brings step 4's row, then step 5's command: no second header for step 4.
    expect(plain(followedLines([row(4, 'exec npm test → exit 0'), ran(4, ['true'])], headed))).toEqual([
      'step 4  exec npm test → exit 0',
      '  ran       true  → exit 0  0.2 s, 38 B',
    ])
  })

  it('prints a step whose row comes first as tether show does', () => {
    expect(
      plain(followedLines([row(1, 'exec npm test → exit 1'), ran(1, ['npm', 'test'])], new Set())),
    ).toEqual(['step 1  exec npm test → exit 1', '  ran       npm test  → exit 0  0.2 s, 38 B'])
  })
})

describe('--follow on a pipe', () => {
  const now = 1_000_000
  const flight = (over: Partial<Flight>): Flight => ({
    kind: 'command',
    command: 'npm test',
    elapsedMs: 0,
    startedAt: now,
    id: 'a#1',
    ...over,
  })

  it('says nothing of work done within 10 s (its entry tells it), then a line every 10 s', () => {
    expect(logsProgress(flight({ kind: 'tool', startedAt: now - 300 }), now, 0)).toBe(false)
    expect(logsProgress(flight({ startedAt: now - 9_999 }), now, 0)).toBe(false)
    expect(logsProgress(flight({ startedAt: now - 10_000 }), now, 0)).toBe(true)
    expect(logsProgress(flight({ startedAt: now - 15_000 }), now, now - 5_000)).toBe(false)
    expect(logsProgress(flight({ startedAt: now - 25_000 }), now, now - 10_000)).toBe(true)
  })

  it('waits for a command to name itself, and for work at all', () => {
    expect(logsProgress(flight({ command: undefined, startedAt: now - 60_000 }), now, 0)).toBe(false)
    expect(logsProgress(undefined, now, 0)).toBe(false)
  })
})
