import { readdirSync, realpathSync } from 'node:fs'
import { join, relative, sep } from 'node:path'

/** Whether `path` is `folder` or inside it (by name). */
export function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep)
}

/** The folders directly in `dir`, as paths (none when it cannot be read, or is gone). */
export function subfolders(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => join(dir, entry.name))
  } catch {
    return []
  }
}

/**
 * The names under which the sandbox shows what the absolute `path` names on the host, when it is there: all
 * of them are hidden. bwrap cannot make a mount point through an absolute symlink (no command would start),
 * and a file hidden under one name would stay open under the others: its real path, which the sandbox shows
 * read-only unless it lies in a folder the sandbox replaces, and its place in each folder the sandbox binds
 * from elsewhere (`bound`: each name is bound at itself, showing where its symlinks lead). Hiding a name where
 * nothing is shown only puts an empty file or folder there. A missing path is kept as it is (nothing to hide).
 */
export function hiddenNames(path: string, bound: readonly string[]): string[] {
  let real: string
  try {
    real = realpathSync.native(path)
  } catch {
    return [path]
  }
  const names = [real]
  for (const folder of bound) {
    let source: string
    try {
      source = realpathSync.native(folder)
    } catch {
      continue
    }
    if (source !== folder && within(real, source)) names.push(join(folder, relative(source, real)))
  }
  return names
}
