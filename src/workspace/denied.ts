/**
 * Whether a part of the workspace holds a file the policy denies reading. The policy asks this (through
 * `ExecContext.holdsDenied`) before it lets a recursive reader (`grep -r`, `rg`) count as read-only: such a
 * command would print every file it passes. A bounded, synchronous walk that does not follow symlinks; a
 * link that leaves the workspace or points at a denied file counts as one, and so does a part too large to
 * walk.
 */
import { type Dirent, readdirSync } from 'node:fs'
import path from 'node:path'
import { ROOT_PATH, resolveWorkspacePath } from './paths.js'

/** Entries looked at before a part of the workspace is taken to hold a denied file. */
const MAX_ENTRIES = 20_000

export function holdsDeniedFile(
  root: string,
  relPath: string,
  denied: (path: string) => boolean,
  maxEntries = MAX_ENTRIES,
): boolean {
  const start = resolveWorkspacePath(root, relPath)
  if (!start.ok) return true
  if (denied(start.normalised) || denied(start.resolved)) return true
  const pending = [{ rel: start.resolved, absolute: start.absolute }]
  let seen = 0
  while (pending.length > 0) {
    const dir = pending.pop()!
    let entries: Dirent[]
    try {
      entries = readdirSync(dir.absolute, { withFileTypes: true })
    } catch {
      // Not a directory (a file operand) or gone: nothing more under it.
      continue
    }
    for (const entry of entries) {
      if (++seen > maxEntries) return true
      const child = dir.rel === ROOT_PATH ? entry.name : `${dir.rel}/${entry.name}`
      if (denied(child)) return true
      if (entry.isSymbolicLink()) {
        const link = resolveWorkspacePath(root, child)
        if (!link.ok || denied(link.resolved)) return true
      } else if (entry.isDirectory())
        pending.push({ rel: child, absolute: path.join(dir.absolute, entry.name) })
    }
  }
  return false
}
