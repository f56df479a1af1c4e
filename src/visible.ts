/**
 * Text as a person must see it: control, zero-width, bidirectional and other invisible characters written
 * as escapes, so what a page or a terminal shows is what will really run. Pure: the CLI, the inbox pages
 * and the inbox's browser script (which checks that the page shows what it signs) use this one function.
 */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g

/** Escapes invisible characters; `\n` too, unless `lines` keeps text on several lines (a `<pre>`). */
export function visible(text: string, options: { lines?: boolean } = {}): string {
  return text.replace(INVISIBLE, (ch) =>
    ch === '\n'
      ? options.lines
        ? ch
        : '\\n'
      : ch === '\t'
        ? '\\t'
        : `\\u{${ch.codePointAt(0)?.toString(16)}}`,
  )
}
