/**
 * The one definition of the characters a person cannot see, or that change how the text around them is
 * shown: control characters, format characters (zero-width space and joiners, bidirectional marks,
 * embeddings, overrides and isolates, the soft hyphen, tag characters, the byte-order mark), line and
 * paragraph separators, and the blank Hangul fillers. The policy strips them before deny rules match, and
 * every surface a person reads (the CLI, the inbox, its browser script, the webhook) shows them as escapes —
 * so what an approver is shown is exactly what the policy judged. Pure: the workflow bundle and the browser
 * script import it.
 */
const CLASS = '\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\u115f\\u1160\\u3164\\uffa0'

/** Matches one invisible character (whole code points: tag characters lie outside the 16-bit range). */
export const INVISIBLE_CHARACTER = new RegExp(`[${CLASS}]`, 'u')

/** Every invisible character, for `replace`. */
export function invisibleCharacters(): RegExp {
  return new RegExp(`[${CLASS}]`, 'gu')
}

/** The character class itself, for patterns that combine it with more (`[<>&…]`). */
export const INVISIBLE_CLASS = CLASS

/**
 * What a name may not hold — a run id, a layer name, a rule's pattern, an approver: the invisible
 * characters above, and every space but the plain one (a no-break or thin space passes for it). A name is
 * shown on one line and compared by eye; any of these can break the line or make one name look like another.
 */
const REFUSED_IN_NAMES = new RegExp(`[${CLASS}\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000]`, 'u')

/**
 * Why `name` cannot be a name (`what`: "the run id", "a layer name"), naming the first refused character and
 * where it is; undefined when it can.
 */
export function nameProblem(what: string, name: string): string | undefined {
  const found = REFUSED_IN_NAMES.exec(name)
  if (!found) return undefined
  const code = (found[0].codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')
  return `${what} holds U+${code} at character ${found.index + 1}; write it without control, invisible, bidirectional or unusual space characters`
}

/**
 * An unpaired UTF-16 surrogate: half a character, with no UTF-8 form (JSON and YAML escapes can spell one;
 * PostgreSQL's jsonb and every OS interface refuse it). With the u flag a whole pair is one code point and
 * does not match.
 */
export const UNPAIRED_SURROGATE = /[\uD800-\uDFFF]/u

/** Every unpaired surrogate, for `replace`. */
export function unpairedSurrogates(): RegExp {
  return new RegExp(UNPAIRED_SURROGATE.source, 'gu')
}
