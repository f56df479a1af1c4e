/**
 * Counts and money are grouped as `toLocaleString('en-US')` groups them, but without it for whole numbers:
 * its first call loads ICU's number formats, tens of ms of every CLI command that prints a count.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { formatCount, formatMoney } from '../../../src/present/index.js'

const original = Number.prototype.toLocaleString

afterEach(() => {
  Number.prototype.toLocaleString = original
})

describe('formatCount', () => {
  it('groups as en-US does, for whole numbers of every length and sign, and for the rest', () => {
    const values = [
      0,
      -0,
      1,
      -1,
      12,
      999,
      1000,
      -1000,
      12345,
      999999,
      1000000,
      -1234567,
      2 ** 31,
      2 ** 53 - 1,
    ]
    for (let digits = 1; digits <= 16; digits++) values.push(Number('7'.repeat(digits)))
    values.push(-(2 ** 53 - 1), 2 ** 53, 1e21, 1234.5678, -0.5, Number.NaN, Number.POSITIVE_INFINITY)
    for (const value of values) expect(formatCount(value), String(value)).toBe(value.toLocaleString('en-US'))
  })

  it('does not call toLocaleString for a whole number, nor formatMoney for an amount', () => {
    Number.prototype.toLocaleString = () => {
      throw new Error('toLocaleString called')
    }
    expect(formatCount(1234567)).toBe('1,234,567')
    expect(formatCount(-42)).toBe('-42')
    expect(formatMoney(12_345_678_900)).toBe('12,345.6789 USD')
    expect(formatMoney(-1_500_000)).toBe('-1.50 USD')
  })
})
