/**
 * Any value cut to a bounded size, every cut saying what was left out: what tether keeps of input it cannot
 * use (a refused tool call, a refused answer) so it can still be stored, recorded in history and shown.
 * Pure: the workflow bounds with it too.
 */
import { formatCount } from '../present/index.js'
import { wellFormed } from './limits.js'

/** How much of a value is kept. */
export interface ValueBounds {
  /** Characters of each string. */
  chars: number
  /** Elements of each array and entries of each object. */
  entries: number
  /** Levels of nesting. */
  depth: number
}

/**
 * `value` with strings, arrays, objects and nesting cut to `bounds`, every cut saying what was left out,
 * and every string well-formed — storable and sendable whatever the model produced.
 */
export function boundValue(value: unknown, bounds: ValueBounds, depth = 0): unknown {
  if (typeof value === 'string') return boundString(value, bounds.chars)
  if (value === null || typeof value !== 'object') return value
  if (depth >= bounds.depth) return '[… nested too deep; not kept]'
  if (Array.isArray(value)) {
    const kept: unknown[] = value.slice(0, bounds.entries).map((item) => boundValue(item, bounds, depth + 1))
    if (value.length > bounds.entries)
      kept.push(`[… ${formatCount(value.length - bounds.entries)} more elements not kept]`)
    return kept
  }
  const entries = Object.entries(value)
  const kept = entries
    .slice(0, bounds.entries)
    .map(([key, item]) => [boundString(key, 100), boundValue(item, bounds, depth + 1)])
  if (entries.length > bounds.entries) {
    kept.push(['…', `[… ${formatCount(entries.length - bounds.entries)} more entries not kept]`])
  }
  return Object.fromEntries(kept)
}

/** `text` cut to `chars` with a note of what was left out, and made well-formed. */
export function boundString(text: string, chars: number): string {
  if (text.length <= chars) return wellFormed(text)
  return `${wellFormed(text.slice(0, chars))}… [${formatCount(text.length - chars)} more characters not kept]`
}
