/**
 * Laying a tree out on disk, into a folder that is empty (or absent), and reading trees back for a diff.
 * Every object is checked against its name as it arrives, so the files written are the files recorded; a
 * stat-only scan afterwards confirms the folder's root hash.
 */
import { chmodSync, closeSync, lstatSync, mkdirSync, openSync, readdirSync, writeSync } from 'node:fs'
import { lstat, open, symlink } from 'node:fs/promises'
import { FAILED, STAT_FIELDS, statAt, writeMany } from './fs-workers.js'
import type { WorkspaceIndex } from './scan.js'
import { checked, inParallel, type ObjectStore } from './store.js'
import { decodeChunks, decodeTree, type TreeEntry, TreeFormatError } from './tree.js'

/** Bytes of file content fetched per round trip. */
const BATCH_BYTES = 16 * 1024 * 1024
/** Files written at once (libuv's pool runs four at a time; more keep it fed). */
const WRITERS = 16

export class RestoreError extends Error {
  override name = 'RestoreError'
}

interface Placed {
  rel: string
  entry: TreeEntry
}

/**
 * Every entry of the tree `root`, folders before what they hold, fetched a level at a time. `page` is told
 * the hash of every page of a large folder read on the way (objects the tree holds that are not entries).
 */
export async function readTree(
  store: ObjectStore,
  root: string,
  page?: (hash: string) => void,
): Promise<Placed[]> {
  const placed: Placed[] = []
  let level: Array<{ rel: string; hash: string }> = [{ rel: '', hash: root }]
  while (level.length > 0) {
    const folders = await readFolders(
      store,
      level.map((t) => t.hash),
      page,
    )
    const next: typeof level = []
    for (const { rel, hash } of level) {
      for (const entry of folders.get(hash) as TreeEntry[]) {
        const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`
        placed.push({ rel: childRel, entry })
        if (entry.kind === 'd') next.push({ rel: childRel, hash: entry.hash })
      }
    }
    level = next
  }
  return placed
}

/** Folders' entries by hash: a large folder's pages are fetched (in one round trip) and joined in order. */
export async function readFolders(
  store: ObjectStore,
  hashes: readonly string[],
  page?: (hash: string) => void,
): Promise<Map<string, TreeEntry[]>> {
  const objects = await store.get([...new Set(hashes)])
  const decoded = new Map([...objects].map(([hash, data]) => [hash, decodeTree(data)]))
  const pages = [...new Set([...decoded.values()].flat().flatMap((e) => (e.kind === 'p' ? [e.hash] : [])))]
  const fetched = pages.length > 0 ? await store.get(pages) : new Map<string, Buffer>()
  for (const hash of pages) page?.(hash)
  const folders = new Map<string, TreeEntry[]>()
  for (const [hash, entries] of decoded) {
    folders.set(
      hash,
      entries.flatMap((e) => (e.kind === 'p' ? pageEntries(fetched.get(e.hash) as Buffer) : [e])),
    )
  }
  return folders
}

function pageEntries(data: Buffer): TreeEntry[] {
  const entries = decodeTree(data)
  if (entries.some((e) => e.kind === 'p'))
    throw new TreeFormatError('a page of a folder lists pages of its own')
  return entries
}

/**
 * Writes the tree `root` into `folder` (created if absent; it must be empty) and remembers every file in
 * `index`. Returns the files and bytes written.
 */
export async function restoreTree(
  store: ObjectStore,
  root: string,
  folder: string,
  index: WorkspaceIndex,
): Promise<{ files: number; bytes: number }> {
  mkdirSync(folder, { recursive: true, mode: 0o700 })
  if (readdirSync(folder).length > 0) {
    throw new RestoreError(`cannot restore into ${folder}: the folder is not empty`)
  }
  const base = Buffer.from(folder, 'utf8').toString('latin1')
  const abs = (rel: string) => Buffer.from(`${base}/${rel}`, 'latin1')
  const placed = await readTree(store, root)
  const folders: Placed[] = []
  const files: Placed[] = []
  for (const item of placed) {
    if (item.entry.kind === 'd') {
      mkdirSync(abs(item.rel), { mode: 0o700 })
      folders.push(item)
    } else files.push(item)
  }

  // Chunked files: their chunk lists first, so every content object is known before fetching.
  const chunked = files.filter((f) => f.entry.kind === 'F')
  const lists = chunked.length > 0 ? await store.get(chunked.map((f) => f.entry.hash)) : new Map()
  const parts = new Map<string, string[]>()
  for (const f of chunked) parts.set(f.rel, decodeChunks(lists.get(f.entry.hash) as Buffer))

  let bytes = 0
  // Files are written by worker threads (fs-workers.ts), several at once, while this thread fetches the next
  // batch; nothing is fsync'ed (tar does not either): the scan after the restore checks the tree. Where the
  // store can hand objects over unchecked (in shared memory, from PostgreSQL), the workers check each
  // against its name before they write it, so the hashing too is off this thread. Links, and what a worker
  // could not write, are checked and written here, which raises the real error.
  const unchecked = store.getUnchecked?.bind(store)
  const write = async (f: Placed, objects: Map<string, Buffer>) => {
    const path = abs(f.rel)
    const data = objects.get(f.entry.hash) as Buffer
    if (unchecked) checked(store.name, f.entry.hash, data)
    if (f.entry.kind === 'l') {
      await symlink(data, path)
      index.remember(f.rel, await lstat(path), 'l', f.entry.hash)
      return
    }
    const handle = await open(path, 'w', f.entry.mode)
    try {
      if (data.length > 0) await handle.writeFile(data)
      let stats = await handle.stat()
      // The creation mode went through the umask: set the mode when it took bits away.
      if ((stats.mode & 0o777) !== f.entry.mode) {
        await handle.chmod(f.entry.mode)
        stats = await handle.stat()
      }
      index.remember(f.rel, stats, 'f', f.entry.hash)
    } finally {
      await handle.close()
    }
    bytes += f.entry.size
  }
  const batches: Placed[][] = [[]]
  let batchBytes = 0
  for (const f of files) {
    // A chunked file goes alone, chunk by chunk, after the rest.
    if (parts.has(f.rel)) continue
    if (batchBytes + f.entry.size > BATCH_BYTES && (batches.at(-1) as Placed[]).length > 0) {
      batches.push([])
      batchBytes = 0
    }
    ;(batches.at(-1) as Placed[]).push(f)
    batchBytes += f.entry.size
  }
  const fetch = (batch: Placed[]) =>
    batch.length > 0
      ? (unchecked ?? store.get.bind(store))(batch.map((f) => f.entry.hash))
      : Promise.resolve(new Map<string, Buffer>())
  let fetching = fetch(batches[0] as Placed[])
  for (let i = 0; i < batches.length; i++) {
    const objects = await fetching
    if (i + 1 < batches.length) fetching = fetch(batches[i + 1] as Placed[])
    const batch = batches[i] as Placed[]
    const regular = batch.filter((f) => f.entry.kind !== 'l')
    const table = await writeMany(
      regular.map((f) => ({
        path: `${base}/${f.rel}`,
        mode: f.entry.mode,
        data: objects.get(f.entry.hash) as Buffer,
        ...(unchecked ? { hash: f.entry.hash } : {}),
      })),
    )
    const left = batch.filter((f) => f.entry.kind === 'l')
    for (const [n, f] of regular.entries()) {
      if (table[n * STAT_FIELDS] === FAILED) left.push(f)
      else {
        index.remember(f.rel, statAt(table, n), 'f', f.entry.hash)
        bytes += f.entry.size
      }
    }
    await inParallel(left, WRITERS, (f) => write(f, objects))
  }
  for (const f of files) if (parts.has(f.rel)) await restoreChunked(f)
  // Folders last, deepest first: a folder without write permission is filled before it is closed.
  for (const item of folders.reverse()) chmodSync(abs(item.rel), item.entry.mode)

  async function restoreChunked(f: Placed) {
    // Chunk by chunk, so a large file never sits in memory whole.
    const path = abs(f.rel)
    const fd = openSync(path, 'w', 0o600)
    try {
      for (const chunk of parts.get(f.rel) as string[]) {
        const data = (await store.get([chunk])).get(chunk) as Buffer
        let written = 0
        while (written < data.length) written += writeSync(fd, data, written)
      }
    } finally {
      closeSync(fd)
    }
    chmodSync(path, f.entry.mode)
    bytes += f.entry.size
    index.remember(f.rel, lstatSync(path), 'F', f.entry.hash)
  }
  return { files: files.length, bytes }
}

export interface TreeChange {
  /** `A` added, `D` deleted, `M` content changed, `T` kind changed (file ↔ link ↔ folder), `P` mode only. */
  change: 'A' | 'D' | 'M' | 'T' | 'P'
  /** Workspace-relative, as bytes in a latin1 string. */
  path: string
  kind: TreeEntry['kind']
  size: number
  /** The size before, for `M` and `T`. */
  before?: number
}

/** A change with the entries on either side: `was` absent for `A`, `now` absent for `D`. */
export type ComparedChange = TreeChange & { was?: TreeEntry; now?: TreeEntry }

/** What changed from tree `from` to tree `to`, path by path (a folder added or deleted is listed whole). */
export async function diffTrees(store: ObjectStore, from: string, to: string): Promise<TreeChange[]> {
  return (await compareTrees(store, from, to)).map(({ was: _was, now: _now, ...change }) => change)
}

/** `diffTrees`, with each change's entries, for reading the contents on either side. */
export async function compareTrees(store: ObjectStore, from: string, to: string): Promise<ComparedChange[]> {
  if (from === to) return []
  const [a, b] = await Promise.all([readTree(store, from), readTree(store, to)])
  const before = new Map(a.map((p) => [p.rel, p.entry]))
  const after = new Map(b.map((p) => [p.rel, p.entry]))
  const changes: ComparedChange[] = []
  for (const [path, now] of after) {
    const was = before.get(path)
    const common = { path, kind: now.kind, size: now.size, now }
    if (!was) changes.push({ change: 'A', ...common })
    else if ((was.kind === 'd') !== (now.kind === 'd') || (was.kind === 'l') !== (now.kind === 'l'))
      changes.push({ change: 'T', ...common, before: was.size, was })
    else if (now.kind !== 'd' && was.hash !== now.hash)
      changes.push({ change: 'M', ...common, before: was.size, was })
    else if (was.mode !== now.mode) changes.push({ change: 'P', ...common, was })
  }
  for (const [path, was] of before) {
    if (!after.has(path)) changes.push({ change: 'D', path, kind: was.kind, size: was.size, was })
  }
  return changes.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))
}
