/** `list_dir`: the entries of one workspace directory, with type and size, sorted and bounded. */
import type { Dirent } from 'node:fs'
import { lstat, readlink } from 'node:fs/promises'
import path from 'node:path'
import { listOpened, openResolved } from './io.js'
import { boundText, limitsOf, refusal, success, type ToolOptions, type ToolOutcome } from './outcome.js'
import { ROOT_PATH, resolveWorkspacePath } from './paths.js'
import { resolveForTool } from './target.js'
import { printable } from './text.js'

export interface ListDirArgs {
  /** Workspace-relative directory; the root when omitted. */
  path?: string
}

function byName(a: Dirent, b: Dirent): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

function row(type: string, name: string, size?: number): string {
  return `${type.padEnd(5)}${(size === undefined ? '' : size.toLocaleString('en-US')).padStart(14)}  ${name}`
}

async function describeEntry(
  root: string,
  reach: string,
  parent: string,
  entry: Dirent,
  hidden: ToolOptions['hidden'],
): Promise<string> {
  const name = printable(entry.name)
  const rel = parent === ROOT_PATH ? entry.name : `${parent}/${entry.name}`
  // Its kind and size are not the run's to see, as a command sees an empty stand-in there.
  if (hidden?.(rel)) return row('?', `${name} (hidden from the run)`)
  const stats = await lstat(path.join(reach, entry.name)).catch(() => undefined)
  if (!stats) return row('gone', name)
  if (stats.isDirectory()) return row('dir', `${name}/`)
  if (stats.isFile()) return row('file', name, stats.size)
  if (!stats.isSymbolicLink()) return row('other', name)
  const target = await readlink(path.join(reach, entry.name)).catch(() => '?')
  const resolved = resolveWorkspacePath(root, rel)
  const where = resolved.ok ? '' : ` (the file tools refuse it: ${resolved.reason})`
  return row('link', `${name} -> ${printable(target)}${where}`)
}

/** Lists a directory: `dir`/`file`/`link`/`other`, size in bytes for files, `/` after directory names. */
export async function listDir(root: string, args: ListDirArgs, options?: ToolOptions): Promise<ToolOutcome> {
  const limits = limitsOf(options)
  const target = await resolveForTool(root, args.path ?? ROOT_PATH, options, 'list')
  if (!target.ok) return target.outcome
  const shown = target.path.normalised
  const opened = await openResolved(root, target.path, 'directory')
  if (!opened.ok) {
    const hint = opened.reason.endsWith('is not a directory') ? '; use read_file for a file' : ''
    return refusal(`${opened.reason}${hint}`, `list ${shown}: ${opened.reason}`, shown)
  }
  try {
    const entries = (await listOpened(opened)).sort(byName)
    const kept = entries.slice(0, limits.maxEntries)
    const rows = await Promise.all(
      kept.map((entry) => describeEntry(root, opened.reach, shown, entry, options?.hidden)),
    )
    const count = `${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}`
    const lines = [`${shown === ROOT_PATH ? '(workspace root)' : `${shown}/`}: ${count}`, ...rows]
    if (entries.length === 0) lines.push('(empty directory)')
    if (entries.length > kept.length) {
      lines.push(
        `[… ${entries.length - kept.length} more entries not shown; list a subdirectory or use search]`,
      )
    }
    const output = boundText(lines.join('\n'), limits.maxOutputChars, 'list a subdirectory or use search')
    return success(output, `list ${shown}: ${count}`, shown)
  } finally {
    await opened.handle.close()
  }
}
