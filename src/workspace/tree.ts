/**
 * A content digest of a workspace as a tree (`tether-tree-v1`): what a run's provenance names as its
 * subject. Each folder's digest is the SHA-256 of its entries sorted by name (as UTF-8 bytes), one per line:
 * `<kind> <name>\0<sha256 hex>\n`, where kind is `blob` (a file), `exec` (an executable file), `link` (a
 * symbolic link: the digest of its target text) or `tree` (a folder: its own digest). `.git` folders are
 * the repository's bookkeeping, not the tree, and are left out, as are sockets, pipes and devices. Symbolic
 * links are not followed.
 *
 * A run with workspace snapshots also has their root hash for the same tree (the statement carries it beside
 * this digest); this one stays the subject because anyone can recompute it from a folder, without the store.
 */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { lstat, readdir, readlink } from 'node:fs/promises'
import { join } from 'node:path'

export const TREE_FORMAT = 'tether-tree-v1'

export interface TreeDigest {
  /** The root folder's digest, hex. */
  sha256: string
  files: number
  bytes: number
}

/** Digests the tree under `root`; `progress` is called as files are read (for heartbeats). */
export async function treeDigest(
  root: string,
  progress?: (done: { files: number; bytes: number }) => void,
): Promise<TreeDigest> {
  const count = { files: 0, bytes: 0 }
  const sha256 = await folderDigest(root, count, progress)
  return { sha256, ...count }
}

async function folderDigest(
  dir: string,
  count: { files: number; bytes: number },
  progress: ((done: { files: number; bytes: number }) => void) | undefined,
): Promise<string> {
  const names = (await readdir(dir))
    .filter((name) => name !== '.git')
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
  const hash = createHash('sha256')
  for (const name of names) {
    const path = join(dir, name)
    const info = await lstat(path)
    let entry: [string, string] | undefined
    if (info.isDirectory()) entry = ['tree', await folderDigest(path, count, progress)]
    else if (info.isSymbolicLink()) entry = ['link', sha256Of(await readlink(path))]
    else if (info.isFile()) {
      entry = [info.mode & 0o111 ? 'exec' : 'blob', await fileDigest(path)]
      count.files += 1
      count.bytes += info.size
      progress?.(count)
    }
    if (entry) hash.update(`${entry[0]} ${name}\0${entry[1]}\n`)
  }
  return hash.digest('hex')
}

function sha256Of(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}

function fileDigest(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')))
  })
}
