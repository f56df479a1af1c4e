/**
 * Text that goes into `text` columns. PostgreSQL's text type cannot hold a NUL character, and audit rows must
 * stay small, so every free-text value passes through `boundedText` (exact JSON payloads go into `json`
 * columns instead, which keep `\u0000` escapes verbatim).
 */

/** Characters kept per free-text value (head + tail). The exec runner already bounds output below this. */
export const TEXT_LIMIT = 65_536

/** NUL is shown as U+2400 (␀) so that a reader still sees where the byte was. */
const NUL = /\u0000/g

/**
 * Replaces NUL and, past `limit` characters, keeps the head and the tail with the middle elided in the same
 * form the exec runner uses. Deterministic, so a replayed write stores the same bytes.
 */
export function boundedText(text: string, limit = TEXT_LIMIT): string {
  const clean = text.replace(NUL, '\u2400')
  if (clean.length <= limit) return clean
  const head = Math.ceil(limit / 2)
  const tail = limit - head
  const elided = clean.length - limit
  return `${clean.slice(0, head)}\n[... ${elided} characters elided ...]\n${clean.slice(clean.length - tail)}`
}
