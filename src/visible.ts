/**
 * Text and sizes as a person must see them: the invisible characters (present/invisible.ts) written
 * as escapes, so what a page or a terminal shows is what will really run. Pure: the CLI, the inbox pages
 * and the inbox's browser script (which checks that the page shows what it signs) use this one function.
 */
import { invisibleCharacters } from './present/invisible.js'

const INVISIBLE = invisibleCharacters()

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

/** A size as a person reads it: `512 B`, `3.4 KiB`, `12.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}
