/**
 * Taking a workspace's tree, incrementally. Every entry is `lstat`ed (symlinks are never followed); a file
 * whose inode, size, mode, change time and modification time all match what the index remembers keeps its
 * remembered hash, and any other is read and hashed. The change time cannot be set by a program (unlike the
 * modification time, which `touch -d` or `tar` can put back), so a rewrite is seen even when size and
 * mtime are restored. A file modified within `RACY_MS` of the scan that hashed it is "racy": a second write
 * in the same timestamp tick could leave every stat field equal, so its hash is not trusted next time and it
 * is read again (git's racy-clean rule).
 */
import {
  closeSync,
  type Dirent,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
} from 'node:fs'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { CHUNK_BYTES, type EntryKind, encodeChunks, encodeFolder, sha256, type TreeEntry } from './tree.js'

/** Coarsest timestamp granularity we allow for (FAT has 2 s; ext4 and xfs have nanoseconds). */
const RACY_MS = 2_000
/** Files kept in memory between hashing and upload; larger ones are read again, and checked, at upload. */
const KEEP_BYTES = 1024 * 1024
/** Entries between two yields to the event loop, so heartbeats and other activities keep going. */
const YIELD_EVERY = 2_000

interface FileState {
  kind: Exclude<EntryKind, 'd' | 'p'>
  ino: number
  size: number
  mode: number
  mtimeMs: number
  ctimeMs: number
  hash: string
  racy: boolean
  /** The scan that last saw it: what no scan saw is gone. */
  seen: number
}

/** Where the bytes of a new object are: in memory, or a file range to read (and check) again. */
export type ObjectSource = Buffer | { path: string; offset: number; length: number }

/** What this worker remembers of one workspace folder between scans. */
export class WorkspaceIndex {
  readonly files = new Map<string, FileState>()
  /** Scans so far: each marks the files it saw. */
  scans = 0
  /** The root hash of the last scan or restore. */
  root: string | undefined
  /** Which exclusions `excludedCache` holds answers for. */
  private exclusionKey: string | undefined
  private excludedCache = new Map<string, boolean>()

  excluded(key: string, rel: string, isDir: boolean, decide: Exclusion): boolean {
    if (key !== this.exclusionKey) {
      this.exclusionKey = key
      this.excludedCache = new Map()
    }
    let answer = this.excludedCache.get(rel)
    if (answer === undefined) {
      answer = decide(rel, isDir)
      this.excludedCache.set(rel, answer)
    }
    return answer
  }

  /** Remembers a file this worker wrote itself (a restore), so the next scan need not read it. */
  remember(rel: string, stats: Stats, kind: FileState['kind'], hash: string): void {
    this.files.set(rel, { kind, hash, racy: false, seen: this.scans, ...statFields(stats) })
  }
}

/** Whether a workspace-relative path (latin1 bytes) is left out of the tree. */
export type Exclusion = (rel: string, isDir: boolean) => boolean

export interface Scan {
  root: string
  /** Objects this scan made or read that may be new to the store, by hash. */
  objects: Map<string, ObjectSource>
  files: number
  bytes: number
  /** Files read and hashed (the rest were known by their stat). */
  hashed: number
}

/**
 * The tree of the folder `root` (an absolute path) as it is now, with `index` updated. `exclusion` names
 * what is left out (and `exclusionKey` says when its answers may have changed).
 */
export async function scanTree(
  root: string,
  index: WorkspaceIndex,
  exclusion: { key: string; excluded: Exclusion },
): Promise<Scan> {
  const started = Date.now()
  const scan: Scan = { root: '', objects: new Map(), files: 0, bytes: 0, hashed: 0 }
  const generation = ++index.scans
  let visited = 0
  const base = Buffer.from(root, 'utf8').toString('latin1')

  const walk = async (rel: string): Promise<{ hash: string; mode: number }> => {
    const abs = rel === '' ? base : `${base}/${rel}`
    const dirStats = lstatSync(Buffer.from(abs, 'latin1'))
    const entries: TreeEntry[] = []
    const names = readdirSync(Buffer.from(abs, 'latin1'), {
      encoding: 'latin1',
      withFileTypes: true,
    }) as Dirent[]
    for (const dirent of names) {
      if (++visited % YIELD_EVERY === 0) await yieldToLoop()
      const name = dirent.name
      const childRel = rel === '' ? name : `${rel}/${name}`
      const childAbs = `${abs}/${name}`
      let stats: Stats
      try {
        stats = lstatSync(fsPath(childAbs))
      } catch (error) {
        // Gone between the listing and the look: it is not part of this tree.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue
        throw error
      }
      const isDir = stats.isDirectory()
      if (index.excluded(exclusion.key, childRel, isDir, exclusion.excluded)) continue
      if (isDir) {
        const sub = await walk(childRel)
        entries.push({ kind: 'd', mode: sub.mode, size: 0, hash: sub.hash, name })
        continue
      }
      // Sockets, pipes and devices are not files a project keeps: they are not state.
      if (!stats.isFile() && !stats.isSymbolicLink()) continue
      const entry = fileEntry(childRel, childAbs, stats, index, scan, started, generation)
      entries.push({ ...entry, name })
      scan.files += 1
      scan.bytes += stats.size
    }
    // The folder's own object comes first, its pages (if any) after it.
    const objects = encodeFolder(entries)
    for (const object of objects) scan.objects.set(object.hash, object.data)
    return { hash: (objects[0] as { hash: string }).hash, mode: dirStats.mode & 0o777 }
  }

  const top = await walk('')
  for (const [rel, file] of index.files) if (file.seen !== generation) index.files.delete(rel)
  scan.root = top.hash
  index.root = top.hash
  return scan
}

/** A latin1-carried path as the file system takes it: as text when it is ASCII (the usual case, and cheaper). */
function fsPath(path: string): string | Buffer {
  return NOT_ASCII.test(path) ? Buffer.from(path, 'latin1') : path
}
const NOT_ASCII = /[^\x00-\x7f]/

function statFields(stats: Stats) {
  return {
    ino: stats.ino,
    size: stats.size,
    mode: stats.mode & 0o777,
    mtimeMs: stats.mtimeMs,
    ctimeMs: stats.ctimeMs,
  }
}

function fileEntry(
  rel: string,
  abs: string,
  stats: Stats,
  index: WorkspaceIndex,
  scan: Scan,
  started: number,
  generation: number,
): Omit<TreeEntry, 'name'> {
  const fields = statFields(stats)
  const known = index.files.get(rel)
  const link = stats.isSymbolicLink()
  if (
    known &&
    !known.racy &&
    (link ? known.kind === 'l' : known.kind !== 'l') &&
    known.ino === fields.ino &&
    known.size === fields.size &&
    known.mode === fields.mode &&
    known.mtimeMs === fields.mtimeMs &&
    known.ctimeMs === fields.ctimeMs
  ) {
    known.seen = generation
    return { kind: known.kind, mode: link ? 0o777 : fields.mode, size: fields.size, hash: known.hash }
  }
  scan.hashed += 1
  const racy = Math.max(fields.mtimeMs, fields.ctimeMs) >= started - RACY_MS
  const path = Buffer.from(abs, 'latin1')
  let kind: FileState['kind']
  let hash: string
  if (link) {
    const target = readlinkSync(path, { encoding: 'buffer' })
    kind = 'l'
    hash = sha256(target)
    scan.objects.set(hash, target)
  } else {
    ;({ kind, hash } = hashFile(path, abs, fields.size, scan))
  }
  index.files.set(rel, { kind, hash, racy, seen: generation, ...fields })
  return { kind, mode: link ? 0o777 : fields.mode, size: fields.size, hash }
}

/** A file's hash (of its content, or of its chunk list past CHUNK_BYTES), its objects noted in `scan`. */
function hashFile(path: Buffer, abs: string, size: number, scan: Scan): { kind: 'f' | 'F'; hash: string } {
  const fd = openSync(path, 'r')
  try {
    const chunks: string[] = []
    const buffer = Buffer.allocUnsafe(Math.min(Math.max(size, 1), CHUNK_BYTES))
    let offset = 0
    for (;;) {
      let filled = 0
      while (filled < buffer.length) {
        const read = readSync(fd, buffer, filled, buffer.length - filled, offset + filled)
        if (read === 0) break
        filled += read
      }
      const part = buffer.subarray(0, filled)
      const hash = sha256(part)
      if (!scan.objects.has(hash)) {
        scan.objects.set(
          hash,
          filled <= KEEP_BYTES ? Buffer.from(part) : { path: abs, offset, length: filled },
        )
      }
      chunks.push(hash)
      offset += filled
      // A file that grew while it was read is taken as far as it was read; the next scan sees the rest.
      if (filled < buffer.length || offset >= size) break
    }
    if (chunks.length === 1 && offset <= CHUNK_BYTES && size <= CHUNK_BYTES) {
      return { kind: 'f', hash: chunks[0] as string }
    }
    const list = encodeChunks(chunks)
    const hash = sha256(list)
    scan.objects.set(hash, list)
    return { kind: 'F', hash }
  } finally {
    closeSync(fd)
  }
}

/** The bytes of a noted object, read again when they were not kept, and checked against their name. */
export function objectBytes(hash: string, source: ObjectSource): Buffer {
  if (Buffer.isBuffer(source)) return source
  const fd = openSync(Buffer.from(source.path, 'latin1'), 'r')
  try {
    const data = Buffer.allocUnsafe(source.length)
    let filled = 0
    while (filled < source.length) {
      const read = readSync(fd, data, filled, source.length - filled, source.offset + filled)
      if (read === 0) break
      filled += read
    }
    if (sha256(data.subarray(0, filled)) !== hash) throw new WorkspaceChangedError(source.path)
    return data
  } finally {
    closeSync(fd)
  }
}

/** A file changed between the scan that hashed it and the upload of its bytes: take the snapshot again. */
export class WorkspaceChangedError extends Error {
  override name = 'WorkspaceChangedError'
  constructor(path: string) {
    super(`${Buffer.from(path, 'latin1').toString('utf8')} changed while the snapshot was taken`)
  }
}
