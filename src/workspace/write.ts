/** `write_file` and `edit_file`: atomic writes inside the workspace, reported as created / changed / unchanged. */

import type { Stats } from 'node:fs'
import { diskShortfall } from '../exec/index.js'
import { exactBytes } from '../present/index.js'
import { type FileIdentity, openResolved, writeResolved } from './io.js'
import { limitsOf, refusal, success, type ToolOptions, type ToolOutcome } from './outcome.js'
import type { ResolvedPath } from './paths.js'
import { resolveForTool } from './target.js'
import { decodeText, numberedLine } from './text.js'

export interface WriteFileArgs {
  path: string
  content: string
}

export interface EditFileArgs {
  path: string
  search: string
  replace: string
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf])

type Existing =
  | { state: 'missing' }
  | { state: 'file'; bytes: Buffer; stats: Stats }
  | { state: 'refused'; outcome: ToolOutcome }

/** Reads the current content of a file about to be replaced; `maxBytes` bounds what is read. */
async function readExisting(
  root: string,
  target: ResolvedPath,
  verb: string,
  maxBytes: number,
): Promise<Existing> {
  const shown = target.normalised
  const refuse = (message: string, why: string): Existing => ({
    state: 'refused',
    outcome: refusal(message, `${verb} ${shown}: ${why}`, shown),
  })
  const opened = await openResolved(root, target, 'file')
  if (!opened.ok)
    return opened.code === 'missing' ? { state: 'missing' } : refuse(opened.reason, opened.reason)
  try {
    const { stats } = opened
    if (stats.isDirectory()) return refuse(`${shown} is a directory, not a file`, 'a directory')
    if (!stats.isFile())
      return refuse(`${shown} is not a regular file (a device, socket or pipe)`, 'not a file')
    if (stats.size > maxBytes) {
      return refuse(
        `${shown} is ${exactBytes(stats.size)}, more than the ${exactBytes(maxBytes)} the file tools rewrite; change it with a command instead`,
        'too large',
      )
    }
    return { state: 'file', bytes: await opened.handle.readFile(), stats }
  } finally {
    await opened.handle.close()
  }
}

function identityOf(stats: Stats): FileIdentity {
  return { ino: stats.ino, size: stats.size, mtimeMs: stats.mtimeMs }
}

/** ` (→ real/path)` when the path reached its file through a symlink, so the model knows what changed. */
function via(target: ResolvedPath): string {
  return target.resolved === target.normalised ? '' : ` (through a symlink, at ${target.resolved})`
}

function tooLarge(shown: string, bytes: number, maxBytes: number, verb: string): ToolOutcome {
  return refusal(
    `refused: the new content of ${shown} would be ${exactBytes(bytes)}; the limit is ${exactBytes(maxBytes)} — split it into smaller files or generate it with a command`,
    `${verb} ${shown}: refused, ${exactBytes(bytes)} is over the limit`,
    shown,
  )
}

/** The sandbox's disk bound: a write that would eat into the reserve its file system keeps free is refused. */
function overDiskBound(root: string, shown: string, bytes: number, verb: string): ToolOutcome | undefined {
  const full = diskShortfall([root], bytes)
  if (!full) return undefined
  return refusal(
    `refused: ${shown} was not written: ${full}`,
    `${verb} ${shown}: refused, the disk is full`,
    shown,
  )
}

/** Creates or replaces a file, creating missing parent directories; never writes through a symlink out of the root. */
export async function writeFile(
  root: string,
  args: WriteFileArgs,
  options?: ToolOptions,
): Promise<ToolOutcome> {
  const limits = limitsOf(options)
  const target = await resolveForTool(root, args.path, options, 'write')
  if (!target.ok) return target.outcome
  const shown = target.path.normalised
  const bytes = Buffer.from(args.content, 'utf8')
  if (bytes.length > limits.maxWriteBytes) return tooLarge(shown, bytes.length, limits.maxWriteBytes, 'write')
  const existing = await readExisting(root, target.path, 'write', limits.maxWriteBytes)
  if (existing.state === 'refused') return existing.outcome
  if (existing.state === 'file' && existing.bytes.equals(bytes)) {
    return success(
      `${shown} unchanged: it already has this content (${exactBytes(bytes.length)})`,
      `write ${shown}: unchanged`,
      shown,
    )
  }
  const full = overDiskBound(root, shown, bytes.length, 'write')
  if (full) return full
  const written = await writeResolved(root, target.path, bytes)
  if (!written.ok) return refusal(written.reason, `write ${shown}: ${written.reason}`, shown)
  const size = exactBytes(bytes.length)
  if (existing.state === 'missing') {
    return success(`created ${shown}${via(target.path)}: ${size}`, `write ${shown}: created, ${size}`, shown)
  }
  const was = exactBytes(existing.bytes.length)
  return success(
    `changed ${shown}${via(target.path)}: ${size} (was ${was})`,
    `write ${shown}: changed, ${size} (was ${was})`,
    shown,
  )
}

/** Every start index of `needle` in `haystack`, overlapping ones included (`aa` occurs twice in `aaa`). */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = []
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) found.push(at)
  return found
}

function lineOf(text: string, index: number): number {
  let line = 1
  for (let at = text.indexOf('\n'); at !== -1 && at < index; at = text.indexOf('\n', at + 1)) line += 1
  return line
}

function listLines(lines: number[], most = 10): string {
  const shown = lines.slice(0, most).join(', ')
  return lines.length > most ? `${shown} and ${lines.length - most} more` : shown
}

/** Why a search text was not found, with the closest thing the file does have. */
function notFoundHint(text: string, search: string): string {
  const firstLine = search
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '')
  if (!firstLine) return 'read_file it to see the current content'
  const lines = text.split('\n')
  const near = lines.flatMap((line, i) => (line.includes(firstLine) ? [i + 1] : []))
  if (near.length === 0) return 'read_file it to see the current content'
  return `its first line appears at line ${listLines(near, 5)} (ignoring indentation) — check whitespace, indentation and the lines after it against read_file`
}

/** Lines around the edit, numbered, so the model sees the result without another read. */
function excerpt(text: string, startLine: number, lineCount: number, context = 2, most = 40): string {
  const lines = text.split('\n')
  const from = Math.max(1, startLine - context)
  const to = Math.min(lines.length, startLine + lineCount - 1 + context, from + most - 1)
  const shown = lines.slice(from - 1, to).map((line, i) => numberedLine(from + i, line.replace(/\r$/, '')))
  return shown.join('\n')
}

/** Replaces the one occurrence of `search`; 0 or 2+ occurrences are refused with where they are. */
export async function editFile(
  root: string,
  args: EditFileArgs,
  options?: ToolOptions,
): Promise<ToolOutcome> {
  const limits = limitsOf(options)
  const target = await resolveForTool(root, args.path, options, 'edit')
  if (!target.ok) return target.outcome
  const shown = target.path.normalised
  const existing = await readExisting(root, target.path, 'edit', limits.maxWriteBytes)
  if (existing.state === 'refused') return existing.outcome
  if (existing.state === 'missing') {
    return refusal(
      `${shown} does not exist; create it with write_file`,
      `edit ${shown}: does not exist`,
      shown,
    )
  }
  const decoded = decodeText(existing.bytes)
  if (!decoded.ok) {
    return refusal(
      `${shown} is ${decoded.kind} (${exactBytes(existing.bytes.length)}); edit_file changes only UTF-8 text`,
      `edit ${shown}: refused, ${decoded.kind}`,
      shown,
    )
  }
  const text = decoded.text
  let { search, replace } = args
  let found = occurrences(text, search)
  // The model writes `\n`; a file with Windows line endings keeps them.
  if (found.length === 0 && text.includes('\r\n') && search.includes('\n') && !search.includes('\r')) {
    search = search.replaceAll('\n', '\r\n')
    replace = replace.replaceAll('\n', '\r\n')
    found = occurrences(text, search)
  }
  if (found.length === 0) {
    return refusal(
      `search text not found in ${shown}; ${notFoundHint(text, args.search)}`,
      `edit ${shown}: search text not found`,
      shown,
    )
  }
  if (found.length > 1) {
    const lines = found.map((at) => lineOf(text, at))
    return refusal(
      `search text occurs ${found.length} times in ${shown} (at line ${listLines(lines)}); it must occur exactly once — include more surrounding lines to make it unique`,
      `edit ${shown}: search text occurs ${found.length} times`,
      shown,
    )
  }
  const at = found[0]!
  const updated = text.slice(0, at) + replace + text.slice(at + search.length)
  const startLine = lineOf(text, at)
  if (updated === text) {
    return success(
      `${shown} unchanged: the replacement equals the search text`,
      `edit ${shown}: unchanged`,
      shown,
    )
  }
  const hadBom = existing.bytes.subarray(0, 3).equals(UTF8_BOM)
  const bytes = Buffer.concat([hadBom ? UTF8_BOM : Buffer.alloc(0), Buffer.from(updated, 'utf8')])
  if (bytes.length > limits.maxWriteBytes) return tooLarge(shown, bytes.length, limits.maxWriteBytes, 'edit')
  const full = overDiskBound(root, shown, bytes.length, 'edit')
  if (full) return full
  const written = await writeResolved(root, target.path, bytes, { expect: identityOf(existing.stats) })
  if (!written.ok) return refusal(written.reason, `edit ${shown}: ${written.reason}`, shown)
  const removed = search.split('\n').length
  const added = replace.split('\n').length
  const span = removed === 1 ? `line ${startLine}` : `lines ${startLine}–${startLine + removed - 1}`
  const output = [
    `edited ${shown}${via(target.path)}: replaced ${span} with ${added} line${added === 1 ? '' : 's'}`,
    excerpt(updated, startLine, added),
  ].join('\n')
  return success(output, `edit ${shown}: replaced ${span} with ${added} line${added === 1 ? '' : 's'}`, shown)
}
