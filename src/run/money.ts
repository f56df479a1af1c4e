/**
 * Money as runs count it: whole micro-dollars (millionths of a US dollar), so sums and comparisons are exact
 * in history, in the audit and in the workflow alike. Prices are published in US dollars per million tokens,
 * so one token at one dollar per million is one micro-dollar. Pure: the workflow bundle imports it.
 */

/** Micro-dollars in one US dollar. */
export const MICROS_PER_USD = 1_000_000

/** The only currency prices and caps are written in. */
export const CURRENCY = 'USD'

/** The largest amount a contract or a raise may name: far beyond any run, and exact as a JavaScript number. */
export const MAX_MONEY_MICROS = 1_000_000_000 * MICROS_PER_USD

/**
 * `"25 USD"`, `"0.01 USD"`, `"12.5 usd"` → micro-dollars; or why the text is not an amount (one line with
 * the fix). At most six decimals: nothing costs less than a micro-dollar.
 */
export function parseMoney(text: unknown): { ok: true; micros: number } | { ok: false; error: string } {
  if (typeof text === 'number') {
    return { ok: false, error: `${text} has no currency; write an amount with it, e.g. "${text} USD"` }
  }
  if (typeof text !== 'string') {
    return { ok: false, error: `expected an amount such as "25 USD", got ${JSON.stringify(text)}` }
  }
  const match = /^\s*(\d+)(?:\.(\d+))?\s*([A-Za-z]{3})?\s*$/.exec(text)
  if (!match) return { ok: false, error: `expected an amount such as "25 USD" or "0.50 USD", got "${text}"` }
  const [, whole, fraction = '', currency] = match
  if (!currency) return { ok: false, error: `"${text}" has no currency; write "${text.trim()} USD"` }
  if (currency.toUpperCase() !== CURRENCY) {
    return {
      ok: false,
      error: `"${text}" is in ${currency}; tether's prices are in USD, so write the amount in USD`,
    }
  }
  if (fraction.length > 6) {
    return {
      ok: false,
      error: `"${text}" has more than six decimals; a micro-dollar (0.000001 USD) is the smallest amount`,
    }
  }
  const micros = Number(whole) * MICROS_PER_USD + Number(fraction.padEnd(6, '0'))
  if (!Number.isSafeInteger(micros) || micros > MAX_MONEY_MICROS) {
    return {
      ok: false,
      error: `"${text}" is more than the limit of ${MAX_MONEY_MICROS / MICROS_PER_USD} USD`,
    }
  }
  return { ok: true, micros }
}

/** Micro-dollars as the decimal US dollars SQL's `numeric` takes: `0.012300`. */
export function microsToUsd(micros: number): string {
  return (micros / MICROS_PER_USD).toFixed(6)
}
