/** `read_file`: a window of a UTF-8 text file, with line numbers, streamed so a huge file costs only its window. */

import type { FileHandle } from 'node:fs/promises'
import { exactBytes } from '../present/index.js'
import { openResolved } from './io.js'
import {
  limitsOf,
  refusal,
  success,
  type ToolOptions,
  type ToolOutcome,
  type WorkspaceLimits,
} from './outcome.js'
import { resolveForTool } from './target.js'
import { NOT_UTF8_KIND, numberedLine, SNIFF_BYTES, sniffNonText, strictUtf8Decoder } from './text.js'

export interface ReadFileArgs {
  path: string
  /** First line to return, 0-based. */
  offset?: number
  /** Most lines to return. */
  limit?: number
}

const CHUNK_BYTES = 64 * 1024
/** Characters kept free for the notes under the lines, so the whole output stays within the bound. */
const NOTES_ROOM = 400

interface Window {
  lines: string[]
  /** 0-based index of the first line shown. */
  first: number
  /** Lines seen in total (all of them when `complete`). */
  seen: number
  /** The whole file was read. */
  complete: boolean
  /** Why the window stopped before the end of the file. */
  stoppedBy?: 'limit' | 'chars'
  cutLines: number
}

type Scan = { ok: true; window: Window } | { ok: false; kind: string }

async function scanWindow(
  handle: FileHandle,
  offset: number,
  limit: number,
  limits: WorkspaceLimits,
): Promise<Scan> {
  const decoder = strictUtf8Decoder()
  const buffer = Buffer.alloc(CHUNK_BYTES)
  const window: Window = { lines: [], first: offset, seen: 0, complete: false, cutLines: 0 }
  let chars = 0
  let carry = ''
  let position = 0
  // Returns false once the window is full.
  const take = (raw: string): boolean => {
    const index = window.seen
    if (index >= offset + limit) {
      window.stoppedBy = 'limit'
      return false
    }
    window.seen += 1
    if (index < offset) return true
    let line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line.length > limits.maxLineChars) {
      window.cutLines += 1
      const rest = line.length - limits.maxLineChars
      line = `${line.slice(0, limits.maxLineChars)} [… line cut, ${rest.toLocaleString('en-US')} more characters]`
    }
    const shown = numberedLine(index + 1, line)
    if (window.lines.length > 0 && chars + shown.length + 1 > limits.maxOutputChars - NOTES_ROOM) {
      window.seen -= 1
      window.stoppedBy = 'chars'
      return false
    }
    chars += shown.length + 1
    window.lines.push(shown)
    return true
  }
  while (true) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, position)
    if (position === 0) {
      const kind = sniffNonText(buffer.subarray(0, Math.min(bytesRead, SNIFF_BYTES)))
      if (kind) return { ok: false, kind }
    }
    position += bytesRead
    const text = bytesRead === 0 ? decoder.end() : decoder.push(buffer.subarray(0, bytesRead))
    if (text === undefined) return { ok: false, kind: NOT_UTF8_KIND }
    const parts = (carry + text).split('\n')
    carry = parts.pop() ?? ''
    for (const part of parts) if (!take(part)) return { ok: true, window }
    if (bytesRead === 0) break
  }
  if (carry !== '' && !take(carry)) return { ok: true, window }
  window.complete = true
  return { ok: true, window }
}

function lineRange(window: Window): string {
  const last = window.first + window.lines.length
  return window.lines.length === 1 ? `line ${last}` : `lines ${window.first + 1}–${last}`
}

/** Reads a window of a text file with line numbers; refuses binary, non-UTF-8, directories and missing files. */
export async function readFile(
  root: string,
  args: ReadFileArgs,
  options?: ToolOptions,
): Promise<ToolOutcome> {
  const limits = limitsOf(options)
  const target = await resolveForTool(root, args.path, options, 'read')
  if (!target.ok) return target.outcome
  const shown = target.path.normalised
  const opened = await openResolved(root, target.path, 'file')
  if (!opened.ok) {
    const hint = opened.code === 'missing' ? '; list_dir its directory to see what exists' : ''
    return refusal(`${opened.reason}${hint}`, `read ${shown}: ${opened.reason}`, shown)
  }
  try {
    const { stats, handle } = opened
    if (stats.isDirectory()) {
      return refusal(
        `${shown} is a directory; use list_dir to see its entries`,
        `read ${shown}: a directory`,
        shown,
      )
    }
    if (!stats.isFile()) {
      return refusal(
        `${shown} is not a regular file (a device, socket or pipe)`,
        `read ${shown}: not a file`,
        shown,
      )
    }
    const offset = args.offset ?? 0
    const limit = args.limit ?? limits.maxLines
    const scan = await scanWindow(handle, offset, Math.min(limit, limits.maxLines), limits)
    if (!scan.ok) {
      const message = `${shown} is ${scan.kind}, ${exactBytes(stats.size)}; read_file shows only UTF-8 text`
      return refusal(message, `read ${shown}: refused, ${scan.kind}`, shown)
    }
    const { window } = scan
    if (stats.size === 0) return success('(empty file)', `read ${shown}: empty`, shown)
    if (window.lines.length === 0) {
      const message = `offset ${offset} is past the end of ${shown}, which has ${window.seen} line${window.seen === 1 ? '' : 's'}`
      return refusal(message, `read ${shown}: offset past the end`, shown)
    }
    const notes: string[] = []
    const next = window.first + window.lines.length
    if (!window.complete) {
      const why =
        window.stoppedBy === 'chars'
          ? `the output reached ${limits.maxOutputChars.toLocaleString('en-US')} characters`
          : `showing at most ${Math.min(limit, limits.maxLines).toLocaleString('en-US')} lines`
      notes.push(
        `[${lineRange(window)} shown, ${why}; the file continues — read_file with offset=${next} for more]`,
      )
    } else if (window.first > 0) {
      notes.push(`[${lineRange(window)} shown; end of file (${window.seen} lines)]`)
    }
    if (window.cutLines > 0) {
      notes.push(
        `[${window.cutLines} long line${window.cutLines === 1 ? ' was' : 's were'} cut at ${limits.maxLineChars.toLocaleString('en-US')} characters]`,
      )
    }
    const output = [...window.lines, ...notes].join('\n')
    return success(output, `read ${shown}: ${lineRange(window)} of ${exactBytes(stats.size)}`, shown)
  } finally {
    await opened.handle.close()
  }
}
