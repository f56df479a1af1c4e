/**
 * Taking a workspace's tree, incrementally. Every entry is `lstat`ed (symlinks are never followed); a file
 * whose device, inode, size, mode, change time and modification time all match what the index remembers
 * keeps its remembered hash, and any other is read and hashed. The change time cannot be set by a program
 * (unlike the modification time, which `touch -d` or `tar` can put back), so a rewrite is seen even when size
 * and mtime are restored. A file modified within `RACY_MS` of the scan that hashed it is "racy": a second
 * write in the same timestamp tick could leave every stat field equal, so its hash is not trusted next time
 * and it is read again (git's racy-clean rule). A folder whose entries all came out as the index remembers
 * them keeps its remembered object, so only the folders on the paths to what changed are encoded again;
 * and a folder whose own stat is unchanged (and not racy) is not listed again: adding, removing or renaming
 * an entry changes its modification and change times. In a large tree the `lstat`s, which are then nearly
 * all of a scan's time, are shared out to worker threads (fs-workers.ts), and so are the reads and hashes
 * when many files are new to the index (a worker's first scan of a workspace).
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
} from 'node:fs'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { ABSENT, FAILED, lstatMany, readMany, STAT_FIELDS, type StatFields, statAt } from './fs-workers.js'
import {
  CHUNK_BYTES,
  displayName,
  type EntryKind,
  encodeChunks,
  encodeFolder,
  sha256,
  type TreeEntry,
} from './tree.js'

/** Coarsest timestamp granularity we allow for (FAT has 2 s; ext4 and xfs have nanoseconds). */
const RACY_MS = 2_000
/** Files kept in memory between hashing and upload; larger ones are read again, and checked, at upload. */
const KEEP_BYTES = 1024 * 1024
/** Entries between two yields to the event loop, so heartbeats and other activities keep going. */
const YIELD_EVERY = 2_000

interface FileState {
  kind: Exclude<EntryKind, 'd' | 'p'>
  dev: number
  ino: number
  size: number
  mode: number
  mtimeMs: number
  ctimeMs: number
  hash: string
  racy: boolean
  /** The scan that last saw it: what no scan saw is gone. */
  seen: number
  /** The tree entry it made, handed out again while its stat holds (no new object per unchanged file). */
  entry: TreeEntry
}

interface FolderState {
  /** Its own stat when it was last listed: while it holds (and is not racy), `children` are its entries. */
  dev: number
  ino: number
  mtimeMs: number
  ctimeMs: number
  racy: boolean
  /** Its children as the last scan walked them, walked again while its stat holds (their paths made once). */
  children: Child[]
  /** Its entries in the order the last scan listed them, and the hash they encoded to. */
  entries: TreeEntry[]
  hash: string
  seen: number
}

/** Where the bytes of a new object are: in memory, or a file range to read (and check) again. */
export type ObjectSource = Buffer | { path: string; offset: number; length: number }

type Objects = Array<[hash: string, source: ObjectSource]>

/** What this worker remembers of one workspace folder between scans. */
export class WorkspaceIndex {
  readonly files = new Map<string, FileState>()
  readonly folders = new Map<string, FolderState>()
  /**
   * The objects of files and folders that scans made and no store has confirmed holding yet, by the hash of
   * the entry they make up: a scan whose tree still holds such an entry hands them on again, so a tree is
   * never recorded without its objects (a scan that was compared but not stored, a store that failed).
   */
  readonly unstored = new Map<string, Objects>()
  /** Scans so far: each marks the files it saw. */
  scans = 0
  /** The root hash of the last scan or restore. */
  root: string | undefined
  /** The collection generation under which the store last confirmed holding this index's objects. */
  generation: number | undefined
  /**
   * The folder was moved (a restore moves what it laid out into place): the paths its listings keep are
   * stale, so the next scan lists every folder again. Files keep their hashes, which their stats (unchanged
   * by a move of a folder above them) still vouch for.
   */
  moved(): void {
    this.folders.clear()
  }

  /** Remembers a file this worker wrote itself (a restore), so the next scan need not read it. */
  remember(rel: string, stats: StatFields, kind: FileState['kind'], hash: string): void {
    const fields = statFields(stats)
    const entry = treeEntry(rel.slice(rel.lastIndexOf('/') + 1), kind, fields.size, fields.mode, hash)
    this.files.set(rel, { kind, hash, racy: false, seen: this.scans, entry, ...fields })
  }

  /** The store now holds every object of the last scan (stored under collection generation `generation`). */
  stored(generation: number): void {
    this.unstored.clear()
    this.generation = generation
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
  /** Folders encoded (the rest kept the object the index remembered). */
  encoded: number
}

/** A folder listed by a scan, its sub-folders listed too, its other entries' stats still to come. */
interface Listing {
  rel: string
  abs: string
  own: StatFields
  children: Child[]
}

/** An entry of a listed folder: its paths, kept between scans, and what this scan found for it. */
interface Child {
  readonly name: string
  readonly rel: string
  readonly abs: string
  readonly ascii: boolean
  /** The exclusions (by key) and the kind its last exclusion answer was for, and the answer. */
  decidedFor?: string
  decidedDir?: boolean
  excluded?: boolean
  /** A sub-folder, listed. */
  listing?: Listing
  /** Known already (a folder that turned out not to be one), or filled in from the stat table. */
  stat?: StatFields | undefined
  /** Its row in the stat table. */
  slot: number
  /** Its hash and where its bytes are, when the file workers read it in this scan. */
  read?: { hash: string; source: ObjectSource } | undefined
}

/**
 * The tree of the folder `root` (an absolute path) as it is now, with `index` updated. `exclusion` names
 * what is left out (and `exclusionKey` says when its answers may have changed). When more than
 * `parallelOver` entries are to be stat'ed (or files read), the work is shared out to worker threads.
 *
 * Four passes: the folders are listed (each folder's own stat first: one unchanged since it was last
 * listed keeps its names), then every other entry is stat'ed at once, then the files whose stat changed are
 * read (many at once on the workers), then the folders' objects are made bottom-up.
 */
export async function scanTree(
  root: string,
  index: WorkspaceIndex,
  exclusion: { key: string; excluded: Exclusion },
  options: { parallelOver?: number } = {},
): Promise<Scan> {
  const started = Date.now()
  const scan: Scan = { root: '', objects: new Map(), files: 0, bytes: 0, hashed: 0, encoded: 0 }
  const generation = ++index.scans
  const statOver = options.parallelOver ?? PARALLEL_STATS_OVER
  const readOver = options.parallelOver ?? PARALLEL_READS_OVER
  let visited = 0
  const base = Buffer.from(root, 'utf8').toString('latin1')
  // Where each file read must turn out to be: below the folder's real path, by its own name.
  const real = realpathSync(Buffer.from(base, 'latin1'), { encoding: 'buffer' }).toString('latin1')
  const realOf = (rel: string) => (real === '/' ? `/${rel}` : `${real}/${rel}`)

  // `ascii`: whether `abs` is ASCII, so the file system can take it as text (the usual case, and cheaper).
  const list = async (rel: string, abs: string, ascii: boolean, own: StatFields, queue: Child[]) => {
    const known = index.folders.get(rel)
    const unchanged =
      known &&
      !known.racy &&
      known.ino === own.ino &&
      known.mtimeMs === own.mtimeMs &&
      known.ctimeMs === own.ctimeMs &&
      known.dev === own.dev
    let children: Child[]
    // Which names are folders: as the index knows them when the folder is unchanged, else as listed. Either
    // may be wrong by now; the stat of each entry decides.
    let folder: (child: Child) => boolean
    if (unchanged) {
      children = known.children
      folder = (child) => index.folders.has(child.rel)
    } else {
      const dirents = readdirSync(ascii ? abs : Buffer.from(abs, 'latin1'), {
        encoding: 'latin1',
        withFileTypes: true,
      })
      const folders = new Set(dirents.filter((d) => d.isDirectory()).map((d) => d.name))
      folder = (child) => folders.has(child.name)
      children = dirents.map(({ name }) => ({
        name,
        rel: rel === '' ? name : `${rel}/${name}`,
        abs: `${abs}/${name}`,
        ascii: ascii && !NOT_ASCII.test(name),
        slot: -1,
      }))
    }
    const listing: Listing = { rel, abs, own, children }
    for (const child of children) {
      if (++visited % YIELD_EVERY === 0) await yieldToLoop()
      // What an earlier scan found for it is not this scan's.
      child.listing = undefined
      child.stat = undefined
      child.read = undefined
      child.slot = -1
      if (!folder(child)) {
        child.slot = queue.length
        queue.push(child)
        continue
      }
      // A folder's own stat decides whether it is listed again, so it is taken now, here.
      const stats = statHere(child)
      if (stats && isFolder(stats)) {
        if (!excluded(child, true, exclusion))
          child.listing = await list(child.rel, child.abs, child.ascii, stats, queue)
      } else child.stat = stats
    }
    return listing
  }

  // Every entry not listed as a folder, stat'ed at once (on worker threads when there are many).
  const statAll = async (queue: Child[]) => {
    if (queue.length <= statOver) {
      for (const child of queue) child.stat = statHere(child)
      return
    }
    const table = await lstatMany(
      queue.map((child) => child.abs),
      index,
    )
    for (const child of queue) {
      const mode = table[child.slot * STAT_FIELDS] as number
      child.stat = mode === ABSENT ? undefined : mode === FAILED ? statHere(child) : statAt(table, child.slot)
    }
  }

  // The files of `queue` whose stat changed, read and hashed by the workers when there are many. Never one
  // left out of the tree: what the policy hides is not read.
  const readAll = async (queue: Child[]) => {
    const changed = queue.filter(
      ({ stat, rel }) =>
        stat !== undefined &&
        (stat.mode & constants.S_IFMT) === constants.S_IFREG &&
        stat.size <= CHUNK_BYTES &&
        !unchanged(index.files.get(rel), stat),
    )
    if (changed.length <= readOver) return
    const wanted = changed.filter((child) => !excluded(child, false, exclusion))
    const reads = await readMany(
      wanted.map(({ abs, rel, stat }) => ({
        path: abs,
        real: realOf(rel),
        size: (stat as StatFields).size,
        keep: (stat as StatFields).size <= KEEP_BYTES,
      })),
    )
    wanted.forEach((child, i) => {
      const read = reads[i]
      if (read)
        child.read = {
          hash: read.hash,
          source: read.data ?? { path: child.abs, offset: 0, length: read.length },
        }
    })
  }

  const make = async (listing: Listing): Promise<string> => {
    const { rel, own } = listing
    const known = index.folders.get(rel)
    const entries: TreeEntry[] = []
    for (const child of listing.children) {
      if (++visited % YIELD_EVERY === 0) await yieldToLoop()
      // What this scan found for it is let go as it is used: the index keeps the child, not its stat.
      const { listing: listed, stat: stats, read } = child
      child.listing = undefined
      child.stat = undefined
      child.read = undefined
      if (listed) {
        const hash = await make(listed)
        entries.push({ kind: 'd', mode: listed.own.mode & 0o777, size: 0, hash, name: child.name })
        continue
      }
      // Gone between the listing and the look: it is not part of this tree.
      if (!stats) continue
      const isDir = isFolder(stats)
      if (excluded(child, isDir, exclusion)) continue
      if (isDir) {
        // Listed as a file, a folder by now: it is scanned on its own, here.
        const queue: Child[] = []
        const sub = await list(child.rel, child.abs, child.ascii, stats, queue)
        for (const c of queue) c.stat = statHere(c)
        const hash = await make(sub)
        entries.push({ kind: 'd', mode: stats.mode & 0o777, size: 0, hash, name: child.name })
        continue
      }
      // Sockets, pipes and devices are not files a project keeps: they are not state.
      const type = stats.mode & constants.S_IFMT
      if (type !== constants.S_IFREG && type !== constants.S_IFLNK) continue
      entries.push(fileEntry(child, realOf, stats, read, index, scan, started, generation))
      scan.files += 1
      scan.bytes += stats.size
    }
    const state = {
      dev: own.dev,
      ino: own.ino,
      mtimeMs: own.mtimeMs,
      ctimeMs: own.ctimeMs,
      racy: Math.max(own.mtimeMs, own.ctimeMs) >= started - RACY_MS,
      seen: generation,
    }
    if (known && sameEntries(known.entries, entries)) {
      handOn(index, scan, known.hash)
      index.folders.set(rel, {
        ...state,
        children: listing.children,
        entries: known.entries,
        hash: known.hash,
      })
      return known.hash
    }
    // The folder's own object comes first, its pages (if any) after it.
    const objects = encodeFolder(entries)
    const hash = (objects[0] as { hash: string }).hash
    scan.encoded += 1
    const made: Objects = objects.map((object) => [object.hash, object.data])
    for (const [name, data] of made) scan.objects.set(name, data)
    index.unstored.set(hash, made)
    index.folders.set(rel, { ...state, children: listing.children, entries, hash })
    return hash
  }

  const ascii = !NOT_ASCII.test(base)
  const queue: Child[] = []
  const top = await list('', base, ascii, lstatSync(ascii ? base : Buffer.from(base, 'latin1')), queue)
  await statAll(queue)
  await readAll(queue)
  scan.root = await make(top)
  for (const [rel, file] of index.files) if (file.seen !== generation) index.files.delete(rel)
  for (const [rel, folder] of index.folders) if (folder.seen !== generation) index.folders.delete(rel)
  index.root = scan.root
  return scan
}

/** Entries to stat in one scan past which the stats are shared out to worker threads. */
const PARALLEL_STATS_OVER = 2_000
/** Files to read in one scan past which the reads are shared out to worker threads. */
const PARALLEL_READS_OVER = 32

function statHere(child: Child): StatFields | undefined {
  return lstatSync(child.ascii ? child.abs : Buffer.from(child.abs, 'latin1'), { throwIfNoEntry: false })
}

function isFolder(stats: StatFields): boolean {
  return (stats.mode & constants.S_IFMT) === constants.S_IFDIR
}

const NOT_ASCII = /[^\x00-\x7f]/

/** Whether `exclusion` leaves `child` out, asked once per child, exclusions and kind. */
function excluded(child: Child, isDir: boolean, exclusion: { key: string; excluded: Exclusion }): boolean {
  if (child.decidedFor !== exclusion.key || child.decidedDir !== isDir) {
    child.decidedFor = exclusion.key
    child.decidedDir = isDir
    child.excluded = exclusion.excluded(child.rel, isDir)
  }
  return child.excluded === true
}

function sameEntries(before: readonly TreeEntry[], now: readonly TreeEntry[]): boolean {
  if (before.length !== now.length) return false
  for (let i = 0; i < now.length; i++) {
    const a = before[i] as TreeEntry
    const b = now[i] as TreeEntry
    if (a === b) continue
    if (a.name !== b.name || a.hash !== b.hash || a.kind !== b.kind || a.mode !== b.mode || a.size !== b.size)
      return false
  }
  return true
}

/** A kept entry's objects that no store has confirmed holding go with this scan. */
function handOn(index: WorkspaceIndex, scan: Scan, hash: string): void {
  const pending = index.unstored.get(hash)
  if (pending)
    for (const [name, source] of pending) if (!scan.objects.has(name)) scan.objects.set(name, source)
}

function statFields(stats: StatFields) {
  return {
    dev: stats.dev,
    ino: stats.ino,
    size: stats.size,
    mode: stats.mode & 0o777,
    mtimeMs: stats.mtimeMs,
    ctimeMs: stats.ctimeMs,
  }
}

/** Whether a file's stat vouches for the hash the index remembers of it. */
function unchanged(known: FileState | undefined, stats: StatFields): known is FileState {
  const link = (stats.mode & constants.S_IFMT) === constants.S_IFLNK
  return (
    known !== undefined &&
    !known.racy &&
    (link ? known.kind === 'l' : known.kind !== 'l') &&
    known.ino === stats.ino &&
    known.size === stats.size &&
    known.mtimeMs === stats.mtimeMs &&
    known.ctimeMs === stats.ctimeMs &&
    known.mode === (stats.mode & 0o777) &&
    known.dev === stats.dev
  )
}

/**
 * `child`'s entry: as the index knows it while its stat holds, else from `read` or read here (checked to be
 * at `realOf` its path).
 */
function fileEntry(
  { rel, abs, name }: Child,
  realOf: (rel: string) => string,
  stats: StatFields,
  read: Child['read'],
  index: WorkspaceIndex,
  scan: Scan,
  started: number,
  generation: number,
): TreeEntry {
  const known = index.files.get(rel)
  if (unchanged(known, stats)) {
    known.seen = generation
    handOn(index, scan, known.hash)
    return known.entry
  }
  scan.hashed += 1
  const fields = statFields(stats)
  const racy = Math.max(fields.mtimeMs, fields.ctimeMs) >= started - RACY_MS
  const path = Buffer.from(abs, 'latin1')
  let kind: FileState['kind']
  let hash: string
  let made: Objects
  if (read) {
    kind = 'f'
    hash = read.hash
    made = [[hash, read.source]]
  } else if ((stats.mode & constants.S_IFMT) === constants.S_IFLNK) {
    const target = readlinkSync(path, { encoding: 'buffer' })
    kind = 'l'
    hash = sha256(target)
    made = [[hash, target]]
  } else {
    ;({ kind, hash, made } = hashFile(path, abs, realOf(rel), fields.size))
  }
  for (const [object, source] of made) if (!scan.objects.has(object)) scan.objects.set(object, source)
  index.unstored.set(hash, made)
  const entry = treeEntry(name, kind, fields.size, fields.mode, hash)
  index.files.set(rel, { kind, hash, racy, seen: generation, entry, ...fields })
  return entry
}

function treeEntry(
  name: string,
  kind: FileState['kind'],
  size: number,
  mode: number,
  hash: string,
): TreeEntry {
  return { kind, mode: kind === 'l' ? 0o777 : mode, size, hash, name }
}

/**
 * Opens a file the scan stat'ed as a regular file, for reading, only if it still is one and, given `real`,
 * still there: a link put in its place since, or in place of a folder on its way, is not read through (a
 * root worker would read whatever it points at into the tree), and a pipe does not block the scan.
 * Anything else: the workspace changed while it was scanned.
 */
export function openScanned(path: Buffer, abs: string, real?: string): number {
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw new WorkspaceChangedError(abs)
    throw error
  }
  if (
    !fstatSync(fd).isFile() ||
    (real !== undefined && readlinkSync(`/proc/self/fd/${fd}`, 'latin1') !== real)
  ) {
    closeSync(fd)
    throw new WorkspaceChangedError(abs)
  }
  return fd
}

/** A file's hash (of its content, or of its chunk list past CHUNK_BYTES) and the objects it is made of. */
function hashFile(
  path: Buffer,
  abs: string,
  real: string,
  size: number,
): { kind: 'f' | 'F'; hash: string; made: Objects } {
  const fd = openScanned(path, abs, real)
  try {
    const made: Objects = []
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
      // A file that grew while it was read is taken as far as it was read; the next scan sees the rest.
      const last = filled < buffer.length || offset + filled >= size
      // Kept in memory when small: the last read of a small buffer as it is, a buffer read into again copied.
      const source: ObjectSource =
        filled > KEEP_BYTES
          ? { path: abs, offset, length: filled }
          : last && buffer.length <= KEEP_BYTES
            ? part
            : Buffer.from(part)
      made.push([sha256(part), source])
      offset += filled
      if (last) break
    }
    if (made.length === 1 && offset <= CHUNK_BYTES && size <= CHUNK_BYTES) {
      return { kind: 'f', hash: (made[0] as [string, ObjectSource])[0], made }
    }
    const list = encodeChunks(made.map(([hash]) => hash))
    const hash = sha256(list)
    made.push([hash, list])
    return { kind: 'F', hash, made }
  } finally {
    closeSync(fd)
  }
}

/** The bytes of a noted object, read again when they were not kept, and checked against their name. */
export function objectBytes(hash: string, source: ObjectSource): Buffer {
  if (Buffer.isBuffer(source)) return source
  const fd = openScanned(Buffer.from(source.path, 'latin1'), source.path)
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
    super(`${displayName(path)} changed while the snapshot was taken`)
  }
}
