/**
 * Text as a person must see it: the invisible characters (present/invisible.ts) written
 * as escapes, so what a page or a terminal shows is what will really run. Pure: the CLI, the inbox pages
 * and the inbox's browser script (which checks that the page shows what it signs) use this one function.
 */
import { invisibleCharacters } from './invisible.js'

const INVISIBLE = invisibleCharacters()

/**
 * Escapes invisible characters; `\n` too, unless `lines` keeps text on several lines (a `<pre>`), and `\t`
 * unless `tabs` keeps it (file contents and output, where a tab is layout; never in a command, where it is
 * part of a word).
 */
export function visible(text: string, options: { lines?: boolean; tabs?: boolean } = {}): string {
  return text.replace(INVISIBLE, (ch) =>
    ch === '\n'
      ? options.lines
        ? ch
        : '\\n'
      : ch === '\t'
        ? options.tabs
          ? ch
          : '\\t'
        : `\\u{${ch.codePointAt(0)?.toString(16)}}`,
  )
}
