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
