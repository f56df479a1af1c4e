/** The eliding rule of fitTranscript, checked on examples and on generated transcripts. */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  elisionStub,
  estimateTokens,
  fitTranscript,
  KEEP_RECENT_RESULTS,
  type TranscriptMessage,
} from '../../../src/model/index.js'

const output = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.nat(4000).map((n) => 'o'.repeat(n)),
  fc.nat(4000).map((n) => elisionStub('exec', n)),
)
const message: fc.Arbitrary<TranscriptMessage> = fc.oneof(
  fc.record({ role: fc.constant('user' as const), content: fc.string({ maxLength: 300 }) }),
  fc.record({
    role: fc.constant('assistant' as const),
    text: fc.string({ maxLength: 300 }),
    toolCalls: fc.array(
      fc.record({ id: fc.string(), name: fc.constantFrom('exec', 'read_file'), args: fc.jsonValue() }),
      {
        maxLength: 2,
      },
    ),
  }),
  fc.record({
    role: fc.constant('tool' as const),
    results: fc.array(
      fc.record({ callId: fc.string({ maxLength: 8 }), name: fc.constantFrom('exec', 'read_file'), output }),
      { minLength: 1, maxLength: 3 },
    ),
  }),
)
const transcript = fc.array(message, { maxLength: 14 })

/** Every tool result in transcript order, with where it sits. */
function results(messages: readonly TranscriptMessage[]) {
  return messages.flatMap((m, i) =>
    m.role === 'tool' ? m.results.map((r, j) => ({ ...r, at: [i, j] as const })) : [],
  )
}

const isStub = (text: string) => /^\[output of .* elided to fit the context: \d+ characters\]$/.test(text)

/** The results the rule may elide, oldest first: not among the latest K, not stubs, longer than a stub. */
function elidable(messages: readonly TranscriptMessage[], keep = KEEP_RECENT_RESULTS) {
  const all = results(messages)
  return all
    .slice(0, Math.max(0, all.length - keep))
    .filter((r) => !isStub(r.output) && elisionStub(r.name, r.output.length).length < r.output.length)
}

/** The transcript with the first `count` elidable results replaced by their stubs. */
function elideFirst(messages: readonly TranscriptMessage[], count: number): TranscriptMessage[] {
  const chosen = new Set(
    elidable(messages)
      .slice(0, count)
      .map((r) => r.at.join(':')),
  )
  return messages.map((m, i) =>
    m.role !== 'tool'
      ? m
      : {
          role: 'tool',
          results: m.results.map((r, j) =>
            chosen.has(`${i}:${j}`) ? { ...r, output: elisionStub(r.name, r.output.length) } : r,
          ),
        },
  )
}

const budgetFor = (messages: readonly TranscriptMessage[]) =>
  fc.integer({ min: 0, max: estimateTokens(messages) + 50 })
const cases = transcript.chain((messages) => fc.tuple(fc.constant(messages), budgetFor(messages)))

describe('fitTranscript', () => {
  it('returns the transcript unchanged when it is within the budget', () => {
    fc.assert(
      fc.property(transcript, (messages) => {
        expect(fitTranscript(messages, estimateTokens(messages))).toEqual(messages)
      }),
    )
  })

  it('elides the oldest elidable outputs, and only as many as it takes', () => {
    fc.assert(
      fc.property(cases, ([messages, budget]) => {
        const fitted = fitTranscript(messages, budget)
        const elided = results(fitted).filter((r, k) => r.output !== results(messages)[k]!.output).length
        // Exactly the first `elided` elidable results, oldest first, were stubbed…
        expect(fitted).toEqual(elideFirst(messages, elided))
        // …it stopped as soon as the transcript fitted, or when nothing was left to elide.
        if (elided > 0) expect(estimateTokens(elideFirst(messages, elided - 1))).toBeGreaterThan(budget)
        const fits = estimateTokens(fitted) <= budget
        expect(fits || elided === elidable(messages).length).toBe(true)
      }),
    )
  })

  it('stays under the budget whenever eliding everything allowed would', () => {
    fc.assert(
      fc.property(cases, ([messages, budget]) => {
        const possible = estimateTokens(elideFirst(messages, Number.POSITIVE_INFINITY)) <= budget
        if (possible) expect(estimateTokens(fitTranscript(messages, budget))).toBeLessThanOrEqual(budget)
      }),
    )
  })

  it('keeps order, user and assistant messages, and the latest results untouched', () => {
    fc.assert(
      fc.property(cases, ([messages, budget]) => {
        const fitted = fitTranscript(messages, budget)
        expect(fitted.map((m) => m.role)).toEqual(messages.map((m) => m.role))
        fitted.forEach((m, i) => {
          if (m.role !== 'tool') expect(m).toBe(messages[i])
        })
        const before = results(messages)
        const after = results(fitted)
        expect(after.map((r) => [r.callId, r.name])).toEqual(before.map((r) => [r.callId, r.name]))
        expect(after.slice(-KEEP_RECENT_RESULTS)).toEqual(before.slice(-KEEP_RECENT_RESULTS))
      }),
    )
  })

  it('is idempotent', () => {
    fc.assert(
      fc.property(cases, ([messages, budget]) => {
        const once = fitTranscript(messages, budget)
        expect(fitTranscript(once, budget)).toEqual(once)
      }),
    )
  })

  it('writes a stub that names the tool and the size of what it replaced', () => {
    const big = 'x'.repeat(9000)
    const messages: TranscriptMessage[] = [
      { role: 'user', content: 'fix the test' },
      {
        role: 'assistant',
        text: '',
        toolCalls: [{ id: 'a', name: 'exec', args: { argv: ['npm', 'test'] } }],
      },
      { role: 'tool', results: [{ callId: 'a', name: 'exec', output: big }] },
      ...[1, 2, 3].flatMap((n): TranscriptMessage[] => [
        {
          role: 'assistant',
          text: '',
          toolCalls: [{ id: `r${n}`, name: 'read_file', args: { path: 'a.ts' } }],
        },
        { role: 'tool', results: [{ callId: `r${n}`, name: 'read_file', output: big }] },
      ]),
    ]
    const fitted = fitTranscript(messages, estimateTokens(messages) - 100)
    expect(fitted[2]).toEqual({
      role: 'tool',
      results: [
        { callId: 'a', name: 'exec', output: '[output of exec elided to fit the context: 9000 characters]' },
      ],
    })
    expect(fitted.slice(3)).toEqual(messages.slice(3))
    // With a smaller `keepRecent`, newer results become elidable too.
    const tight = fitTranscript(messages, 500, { keepRecent: 1 })
    expect(results(tight).map((r) => r.output.length < 100)).toEqual([true, true, true, false])
  })
})
