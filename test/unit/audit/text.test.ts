/** Free text bound for the audit: NUL made visible, long values cut to head + tail with a marker. */
import { describe, expect, it } from 'vitest'
import { boundedText, TEXT_LIMIT } from '../../../src/audit/index.js'

describe('boundedText', () => {
  it('keep short text as it is', () => {
    expect(boundedText('npm test exited 0')).toBe('npm test exited 0')
    expect(boundedText('x'.repeat(TEXT_LIMIT))).toHaveLength(TEXT_LIMIT)
  })

  it('show NUL as ␀, which PostgreSQL text can hold', () => {
    expect(boundedText('a\u0000b\u0000')).toBe('a\u2400b\u2400')
  })

  it('keep the head and the tail of long text and say how much was elided', () => {
    const text = `${'a'.repeat(10)}${'b'.repeat(5)}${'c'.repeat(10)}`
    expect(boundedText(text, 20)).toBe(`${'a'.repeat(10)}\n[... 5 characters elided ...]\n${'c'.repeat(10)}`)
    expect(boundedText(`${text}!`, 21)).toBe(
      `${'a'.repeat(10)}b\n[... 5 characters elided ...]\n${'c'.repeat(9)}!`,
    )
  })

  it('give the same result every time, so a replayed write stores the same bytes', () => {
    const text = `${'€'.repeat(TEXT_LIMIT)}\u0000${'z'.repeat(TEXT_LIMIT)}`
    expect(boundedText(text)).toBe(boundedText(text))
    expect(boundedText(text).length).toBeLessThan(TEXT_LIMIT + 64)
  })
})
