import { readdirSync } from 'node:fs'
import { join } from 'node:path'

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
