/** Real temporary directories for the workspace tests: a workspace root and a sibling outside it. */
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterEach } from 'vitest'

export interface Sandbox {
  /** The workspace root. */
  root: string
  /** A directory next to the workspace, standing for everything outside it. */
  outside: string
  /** Writes files (creating parents) under the workspace root. */
  files(entries: Record<string, string | Uint8Array>): Promise<void>
  /** Creates a symlink at a workspace-relative path pointing at `target` (as given). */
  link(relPath: string, target: string): Promise<void>
}

const created: string[] = []

afterEach(async () => {
  for (const dir of created.splice(0)) await rm(dir, { recursive: true, force: true })
})

export async function sandbox(): Promise<Sandbox> {
  const base = await realpath(await mkdtemp(path.join(tmpdir(), 'tether-workspace-')))
  created.push(base)
  const root = path.join(base, 'workspace')
  const outside = path.join(base, 'outside')
  await mkdir(root)
  await mkdir(outside)
  await writeFile(path.join(outside, 'secret.txt'), 'outside secret\n')
  return {
    root,
    outside,
    async files(entries) {
      for (const [relPath, content] of Object.entries(entries)) {
        const file = path.join(root, relPath)
        await mkdir(path.dirname(file), { recursive: true })
        await writeFile(file, content)
      }
    },
    async link(relPath, target) {
      const at = path.join(root, relPath)
      await mkdir(path.dirname(at), { recursive: true })
      await symlink(target, at)
    },
  }
}
