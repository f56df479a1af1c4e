/**
 * tether's glob language: `*` is any run of characters (including `/`, spaces and newlines), `?` is one
 * character, everything else is literal, and a pattern must match the whole target. Patterns compile once
 * into the cheapest test that decides them (exact string, prefix, suffix, or a RegExp).
 */

export type GlobShape =
  | { kind: 'exact'; literal: string }
  | { kind: 'prefix'; literal: string }
  | { kind: 'suffix'; literal: string }
  | { kind: 'contains'; literal: string }
  | { kind: 'regexp'; regexp: RegExp }

/** Characters with a meaning in a RegExp (with the `u` flag, escaping anything else is an error). */
const REGEXP_SPECIAL = /[\\^$.*+?()[\]{}|/]/

export function globShape(pattern: string): GlobShape {
  // `**` means the same as `*`; collapsing keeps the shapes below simple.
  const glob = pattern.replace(/\*{2,}/g, '*')
  if (!glob.includes('?')) {
    const stars = glob.split('*').length - 1
    if (stars === 0) return { kind: 'exact', literal: glob }
    if (stars === 1 && glob.endsWith('*')) return { kind: 'prefix', literal: glob.slice(0, -1) }
    if (stars === 1 && glob.startsWith('*')) return { kind: 'suffix', literal: glob.slice(1) }
    if (stars === 2 && glob.startsWith('*') && glob.endsWith('*')) {
      return { kind: 'contains', literal: glob.slice(1, -1) }
    }
  }
  return { kind: 'regexp', regexp: new RegExp(`^${globToRegExpSource(glob)}$`, 'su') }
}

export function globToRegExpSource(glob: string): string {
  let source = ''
  for (const char of glob) {
    if (char === '*') source += '.*'
    else if (char === '?') source += '.'
    else source += REGEXP_SPECIAL.test(char) ? `\\${char}` : char
  }
  return source
}

export function globMatches(pattern: string, target: string): boolean {
  return shapeMatches(globShape(pattern), target)
}

/** A pattern compiled once, for matching it many times. */
export function globMatcher(pattern: string): (target: string) => boolean {
  const shape = globShape(pattern)
  return (target) => shapeMatches(shape, target)
}

function shapeMatches(shape: GlobShape, target: string): boolean {
  switch (shape.kind) {
    case 'exact':
      return target === shape.literal
    case 'prefix':
      return target.startsWith(shape.literal)
    case 'suffix':
      return target.endsWith(shape.literal)
    case 'contains':
      return target.includes(shape.literal)
    case 'regexp':
      return shape.regexp.test(target)
  }
}

/**
 * Whether some string matches both `pattern` and `target`, where `target` is itself a glob standing for a
 * command line with unknown parts (a `$var` inside a script). Used to ask "could a deny rule match what this
 * will become?". Classic two-pattern dynamic programming over code points.
 */
export function globsIntersect(pattern: string, target: string): boolean {
  const a = [...pattern]
  const b = [...target]
  // reach[i][j]: a[0..i) and b[0..j) can match the same string.
  let row: boolean[] = new Array(b.length + 1).fill(false)
  row[0] = true
  for (let j = 1; j <= b.length; j++) row[j] = row[j - 1]! && b[j - 1] === '*'
  for (let i = 1; i <= a.length; i++) {
    const next: boolean[] = new Array(b.length + 1).fill(false)
    const ca = a[i - 1]!
    next[0] = row[0]! && ca === '*'
    for (let j = 1; j <= b.length; j++) {
      const cb = b[j - 1]!
      if (ca === '*' || cb === '*') {
        // A star may absorb nothing (skip it) or one more character of the other side.
        next[j] = (ca === '*' && (row[j]! || next[j - 1]!)) || (cb === '*' && (next[j - 1]! || row[j]!))
      } else {
        next[j] = row[j - 1]! && (ca === '?' || cb === '?' || ca === cb)
      }
    }
    row = next
  }
  return row[b.length]!
}
