/**
 * `lstat` of many paths, reads and hashes of many files, and writes of many small files, spread over a few
 * worker threads. A scan of a large workspace is one `lstat` per file and little else (and on a worker that
 * has not seen the workspace before, one read and hash per file), and a restore is one open, write, stat and
 * close per file; Linux has no call that does any of these for many files, so the calls are shared out to
 * worker threads (as git's preloaded index does) while this thread waits, or fetches what comes next. The workers start on
 * first use, stay, and never keep the process alive while idle. A worker that fails costs nothing but time:
 * the caller does what it left itself. A workspace's paths rarely change between two scans, so each worker
 * keeps the last few lists it was sent and is told only which one to stat again.
 */
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'

/** Numbers per path in a stat table: mode (ABSENT, FAILED), dev, ino, size, mtimeMs, ctimeMs. */
export const STAT_FIELDS = 6
/** The path did not exist (or a folder on its way was no folder): it is not part of the tree. */
export const ABSENT = -1
/** `lstat` failed otherwise in a worker: the caller asks again itself, to raise the real error. */
export const FAILED = -2
/** Path lists each worker keeps for stat'ing again (under 1 MB each for 10,000 paths). */
const KEPT_LISTS = 8
/** A file or folder's stat, as far as a scan compares it: from `lstat` here or from a worker's table. */
export interface StatFields {
  mode: number
  dev: number
  ino: number
  size: number
  mtimeMs: number
  ctimeMs: number
}

/** Entry `n` of a stat table that a worker wrote (its mode is neither ABSENT nor FAILED). */
export function statAt(table: Float64Array, n: number): StatFields {
  const o = n * STAT_FIELDS
  return {
    mode: table[o] as number,
    dev: table[o + 1] as number,
    ino: table[o + 2] as number,
    size: table[o + 3] as number,
    mtimeMs: table[o + 4] as number,
    ctimeMs: table[o + 5] as number,
  }
}

/** Paths a worker takes at a time. */
const CHUNK = 512
/** Files a worker writes, or reads and hashes, at a time. */
const FILE_CHUNK = 16
/** Bytes of the shared blocks that files read by the workers are laid out in. */
const BLOCK_BYTES = 16 * 1024 * 1024
/** Bytes of a SHA-256 digest. */
const DIGEST = 32

// Plain CommonJS given as source, so it runs the same from src/ (tsx), from dist/ and from the CLI bundle.
// Each worker takes the next chunk of the list until none is left, so a worker whose core is busy with other
// work takes fewer: a scan waits for the machine's free cores, not for the slowest thread.
const WORKER = `
const { parentPort } = require('node:worker_threads')
const { closeSync, constants, fchmodSync, fstatSync, lstatSync, openSync, readlinkSync, readSync, writeSync } = require('node:fs')
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK
const { createHash } = require('node:crypto')
const NOT_ASCII = /[^\\x00-\\x7f]/
// Names that are not ASCII go to the file system as their bytes.
const named = (path) => (NOT_ASCII.test(path) ? Buffer.from(path, 'latin1') : path)
const record = (stats, o, s) => {
  stats[o + 1] = s.dev
  stats[o + 2] = s.ino
  stats[o + 3] = s.size
  stats[o + 4] = s.mtimeMs
  stats[o + 5] = s.ctimeMs
  stats[o] = s.mode
}
// Entries 0 … count - 1, size at a time, taken from the shared counter in next until none is left and
// handed to each; then this worker counts itself done (an atomic write after the table's, which the caller
// reads before it: the table is then all seen) and says so.
function take(id, next, count, size, each) {
  const counter = new Int32Array(next)
  for (;;) {
    const from = Atomics.add(counter, 0, 1) * size
    if (from >= count) break
    for (let i = from; i < Math.min(from + size, count); i++) each(i)
  }
  Atomics.add(counter, 1, 1)
  parentPort.postMessage({ id, kept: true })
}
const lists = new Map()
parentPort.on('message', (message) => {
  if (message.files) write(message)
  else if (message.reads) read(message)
  else stat(message)
})
// Each file: read up to the size its stat gave (one that grew since is taken as far as that; the next scan
// sees the rest), into its place in the caller's blocks when it has one, else into this worker's own buffer,
// and hashed; the length read goes into the table, the digest beside it. One that cannot be read stays FAILED.
let own = Buffer.alloc(0)
function read({ id, reads: { paths, reals, sizes, blocks, places }, table, digests, next }) {
  const list = paths.split('\\0')
  const where = reals.split('\\0')
  const views = blocks.map((block) => new Uint8Array(block))
  const lengths = new Float64Array(table)
  const out = new Uint8Array(digests)
  take(id, next, list.length, ${FILE_CHUNK}, (i) => {
    const size = sizes[i]
    if (places[2 * i] < 0 && own.length < size) own = Buffer.allocUnsafe(size)
    const bytes =
      places[2 * i] < 0 ? own : views[places[2 * i]].subarray(places[2 * i + 1], places[2 * i + 1] + size)
    let fd
    try {
      fd = openSync(named(list[i]), READ_FLAGS)
      // Still the regular file the stat saw, where it saw it (no folder on the way swapped for a link);
      // anything else is left to the caller, which says so.
      if (!fstatSync(fd).isFile() || readlinkSync('/proc/self/fd/' + fd, 'latin1') !== where[i])
        throw new Error('not the file the scan saw')
      let filled = 0
      while (filled < size) {
        const got = readSync(fd, bytes, filled, size - filled, filled)
        if (got === 0) break
        filled += got
      }
      const done = fd
      fd = undefined
      closeSync(done)
      out.set(createHash('sha256').update(bytes.subarray(0, filled)).digest(), i * ${DIGEST})
      lengths[i] = filled
    } catch {
      if (fd !== undefined) try { closeSync(fd) } catch {}
    }
  })
}
// Each file: its content checked against its hash when it has one (else it is not written, and stays FAILED),
// created (or emptied) with its mode, written whole, its mode set again should the umask have taken bits
// away, stat'ed once closed.
function write({ id, files: { paths, modes, blocks, places, hashes }, table, next }) {
  const list = paths.split('\\0')
  const expected = hashes.split('\\0')
  const views = blocks.map((block) => new Uint8Array(block))
  const stats = new Float64Array(table)
  take(id, next, list.length, ${FILE_CHUNK}, (i) => {
    const bytes = views[places[3 * i]]
    const start = places[3 * i + 1]
    const end = start + places[3 * i + 2]
    if (expected[i] && createHash('sha256').update(bytes.subarray(start, end)).digest('hex') !== expected[i])
      return
    let fd
    try {
      fd = openSync(named(list[i]), 'w', modes[i])
      let at = start
      while (at < end) at += writeSync(fd, bytes, at, end - at)
      let s = fstatSync(fd)
      if ((s.mode & 0o777) !== modes[i]) {
        fchmodSync(fd, modes[i])
        s = fstatSync(fd)
      }
      const done = fd
      fd = undefined
      closeSync(done)
      record(stats, i * ${STAT_FIELDS}, s)
    } catch {
      if (fd !== undefined) try { closeSync(fd) } catch {}
    }
  })
}
function stat({ id, key, paths, table, next }) {
  let list = lists.get(key)
  if (paths !== undefined) {
    list = paths.split('\\0').map(named)
  } else if (list === undefined) {
    parentPort.postMessage({ id, kept: false })
    return
  }
  // The lists used last are the ones kept.
  lists.delete(key)
  lists.set(key, list)
  if (lists.size > ${KEPT_LISTS}) lists.delete(lists.keys().next().value)
  const stats = new Float64Array(table)
  take(id, next, list.length, ${CHUNK}, (i) => {
    const o = i * ${STAT_FIELDS}
    let s
    try {
      s = lstatSync(list[i], { throwIfNoEntry: false })
    } catch {
      stats[o] = ${FAILED}
      return
    }
    if (s === undefined) stats[o] = ${ABSENT}
    else record(stats, o, s)
  })
}`

class FsWorkers {
  private readonly workers: Worker[] = []
  private readonly waiting = new Map<
    number,
    { worker: number; resolve: (kept: boolean) => void; reject: (e: Error) => void }
  >()
  private next = 0
  broken = false

  constructor(count: number) {
    for (let i = 0; i < count; i++) {
      // No loader flags of the parent's (tsx): the source is plain JavaScript.
      const worker = new Worker(WORKER, { eval: true, execArgv: [] })
      worker.unref()
      worker.on('message', ({ id, kept }: { id: number; kept: boolean }) => {
        this.waiting.get(id)?.resolve(kept)
        this.settled(id)
      })
      // Only this worker's work fails: the others are still writing into their tables.
      const fail = (error: Error) => {
        this.broken = true
        for (const [id, waiter] of this.waiting) {
          if (waiter.worker !== i) continue
          waiter.reject(error)
          this.settled(id)
        }
      }
      worker.on('error', fail)
      worker.on('exit', (code) => fail(new Error(`a file system worker exited (${code})`)))
      this.workers.push(worker)
    }
  }

  get size(): number {
    return this.workers.length
  }

  /**
   * Worker `n` takes chunks of the work into `table` until `next` passes its end. To stat: the list `key`,
   * of `paths` when given (the worker keeps them under `key`), else of the paths it kept under `key`; false
   * when it no longer kept them (it took nothing). To write: `files`.
   */
  ask(n: number, work: { table: SharedArrayBuffer; next: SharedArrayBuffer }): Promise<boolean> {
    const id = this.next++
    const worker = this.workers[n] as Worker
    // Held while it works, so a process waiting only on a scan does not exit under it.
    if (this.waiting.size === 0) for (const w of this.workers) w.ref()
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { worker: n, resolve, reject })
      worker.postMessage({ id, ...work })
    })
  }

  private settled(id: number) {
    this.waiting.delete(id)
    if (this.waiting.size === 0) for (const w of this.workers) w.unref()
  }
}

let shared: FsWorkers | undefined

function pool(): FsWorkers {
  if (!shared || shared.broken) shared = new FsWorkers(Math.min(4, Math.max(2, availableParallelism())))
  return shared
}

/**
 * A new table of `fields` numbers for each of `count` paths, every entry FAILED until a worker writes it,
 * and its counters.
 */
function newTable(
  count: number,
  fields = STAT_FIELDS,
): { table: SharedArrayBuffer; next: SharedArrayBuffer } {
  const table = new SharedArrayBuffer(count * fields * Float64Array.BYTES_PER_ELEMENT)
  const numbers = new Float64Array(table)
  // A worker writes an entry's first number last: what no worker reached stays FAILED.
  for (let o = 0; o < numbers.length; o += fields) numbers[o] = FAILED
  // The next chunk to take, and how many workers are done.
  return { table, next: new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT) }
}

/** Waits for every worker's answer (or death): none writes into the table after. Then reads it. */
async function settled(
  asked: Array<Promise<unknown>>,
  work: { table: SharedArrayBuffer; next: SharedArrayBuffer },
) {
  await Promise.allSettled(asked)
  Atomics.load(new Int32Array(work.next), 1)
  return new Float64Array(work.table)
}
/** The list each caller sent last (and its key), to be named again rather than sent when it recurs. */
const sent = new WeakMap<object, { key: number; paths: readonly string[]; workers: FsWorkers }>()
let lists = 0

/**
 * The stat table of `paths` (latin1 strings, one character per byte of the name): `STAT_FIELDS` numbers
 * each, in order, taken by the workers a chunk at a time. A path no worker stat'ed (a worker failed) or
 * could stat is FAILED: the caller stats it itself, which raises the real error. `caller` (one per
 * workspace, say) lets a list equal to the one it sent last be stat'ed again without being sent again.
 */
export async function lstatMany(paths: readonly string[], caller: object): Promise<Float64Array> {
  const workers = pool()
  const last = sent.get(caller)
  const again = last !== undefined && last.workers === workers && sameList(last.paths, paths)
  const key = again ? last.key : ++lists
  if (!again) sent.set(caller, { key, paths, workers })
  const work = { key, ...newTable(paths.length) }
  let joined: string | undefined
  const withPaths = () => {
    joined ??= paths.join('\0')
    return { ...work, paths: joined }
  }
  const asked = Array.from({ length: workers.size }, async (_, n) => {
    // A worker that no longer keeps the list is sent it.
    if (again && (await workers.ask(n, work))) return
    await workers.ask(n, withPaths())
  })
  return settled(asked, work)
}

/**
 * A file for readMany: its path (a latin1 string, as lstatMany's), the path the file it opens must have
 * (with every link on the way resolved, as `/proc/self/fd` gives it), the size its stat gave, and whether
 * its bytes are wanted back.
 */
export interface FileToRead {
  path: string
  real: string
  size: number
  keep: boolean
}

/** What readMany read of a file: its SHA-256, the bytes read, and those bytes when they were to be kept. */
export interface FileRead {
  hash: string
  length: number
  data: Buffer | undefined
}

/**
 * Reads and hashes `files`, taken by the workers a few at a time, each up to the size given. The bytes of
 * those to be kept are laid out in shared blocks, where the returned buffers show them. A file no worker
 * read (it failed, or a worker did) is undefined: the caller reads it itself, which raises the real error.
 */
export async function readMany(files: readonly FileToRead[]): Promise<Array<FileRead | undefined>> {
  const workers = pool()
  const blocks: SharedArrayBuffer[] = []
  // Each file's block and offset there; -1 for a file whose bytes are not kept.
  const places = new Int32Array(2 * files.length).fill(-1)
  // The block being laid out: its size, and whether any file is placed in it (an empty file may be).
  let size = 0
  let used = false
  const close = () => {
    if (used) blocks.push(new SharedArrayBuffer(size))
    size = 0
    used = false
  }
  files.forEach((file, i) => {
    if (!file.keep) return
    if (size + file.size > BLOCK_BYTES) close()
    places[2 * i] = blocks.length
    places[2 * i + 1] = size
    size += file.size
    used = true
  })
  close()
  const digests = new SharedArrayBuffer(files.length * DIGEST)
  const work = {
    ...newTable(files.length, 1),
    digests,
    reads: {
      paths: files.map((f) => f.path).join('\0'),
      reals: files.map((f) => f.real).join('\0'),
      sizes: Float64Array.from(files, (f) => f.size),
      blocks,
      places,
    },
  }
  const lengths = await settled(
    Array.from({ length: workers.size }, (_, n) => workers.ask(n, work)),
    work,
  )
  const hashes = Buffer.from(digests)
  return files.map((_, i) => {
    const length = lengths[i] as number
    if (length < 0) return undefined
    const block = places[2 * i] as number
    const hash = hashes.toString('hex', i * DIGEST, (i + 1) * DIGEST)
    const data =
      block < 0 ? undefined : Buffer.from(blocks[block] as SharedArrayBuffer, places[2 * i + 1], length)
    return { hash, length, data }
  })
}

/**
 * A file for writeMany: its path (a latin1 string, one character per byte of the name), mode and content,
 * and the SHA-256 its content must have, when it is still to be checked.
 */
export interface FileToWrite {
  path: string
  mode: number
  data: Buffer
  hash?: string
}

/**
 * Writes `files`, each created (or emptied) with exactly its mode whatever the umask, taken by the workers a
 * few files at a time; returns their stat table, as lstatMany's, each file's stat taken once it was written.
 * A file no worker wrote (it failed, or a worker did, or its content is not what its hash says) is FAILED:
 * the caller writes it itself, which raises the real error. Contents in shared memory are read where they
 * are; the rest are copied once into one shared block.
 */
export async function writeMany(files: readonly FileToWrite[]): Promise<Float64Array> {
  const workers = pool()
  const inShared = (data: Buffer) => data.buffer instanceof SharedArrayBuffer
  let unshared = 0
  for (const file of files) if (!inShared(file.data)) unshared += file.data.length
  const copies = new SharedArrayBuffer(unshared)
  const copied = Buffer.from(copies)
  const blocks: SharedArrayBuffer[] = [copies]
  const numbered = new Map<ArrayBufferLike, number>([[copies, 0]])
  // Each file's block, offset and length.
  const places: number[] = []
  let at = 0
  for (const { data } of files) {
    if (inShared(data)) {
      let n = numbered.get(data.buffer)
      if (n === undefined) {
        n = blocks.push(data.buffer as SharedArrayBuffer) - 1
        numbered.set(data.buffer, n)
      }
      places.push(n, data.byteOffset, data.length)
    } else {
      data.copy(copied, at)
      places.push(0, at, data.length)
      at += data.length
    }
  }
  const work = {
    ...newTable(files.length),
    files: {
      paths: files.map((f) => f.path).join('\0'),
      modes: files.map((f) => f.mode),
      blocks,
      places,
      hashes: files.map((f) => f.hash ?? '').join('\0'),
    },
  }
  return settled(
    Array.from({ length: workers.size }, (_, n) => workers.ask(n, work)),
    work,
  )
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
