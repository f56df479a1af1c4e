import { lstatSync, readdirSync, realpathSync } from 'node:fs'
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
 * Each of `folders` (absolute) that is there under another real path, with that path: a folder the sandbox
 * binds at its own name shows, under that name, what its symlinks lead to. Taken once per sandbox plan: a
 * plan hides a dozen paths and binds a score of toolchain folders, most of them missing.
 */
export function linkedFolders(folders: readonly string[]): Array<[name: string, real: string]> {
  const linked: Array<[string, string]> = []
  for (const folder of folders) {
    const real = realPath(folder)
    if (real !== undefined && real !== folder) linked.push([folder, real])
  }
  return linked
}

/** Where `path` leads, or undefined when it is not there (or cannot be followed): nothing is shown there. */
function realPath(path: string): string | undefined {
  try {
    // Most of what a plan asks about is not there: a stat says so without the cost of a thrown error.
    return lstatSync(path, { throwIfNoEntry: false }) ? realpathSync.native(path) : undefined
  } catch {
    return undefined
  }
}

/**
 * The names under which the sandbox shows what the absolute `path` names on the host, when it is there: all
 * of them are hidden. bwrap cannot make a mount point through an absolute symlink (no command would start),
 * and a file hidden under one name would stay open under the others: its real path, which the sandbox shows
 * read-only unless it lies in a folder the sandbox replaces, and its place in each bound folder that is
 * there under another real path (`linked`, from linkedFolders). Hiding a name where nothing is shown only
 * puts an empty file or folder there. A missing path is kept as it is (nothing to hide).
 */
export function hiddenNames(
  path: string,
  linked: ReadonlyArray<readonly [name: string, real: string]>,
): string[] {
  const real = realPath(path)
  if (real === undefined) return [path]
  const names = [real]
  for (const [name, source] of linked)
    if (within(real, source)) names.push(join(name, relative(source, real)))
  return names
}
