/**
 * `lstat` of many paths at once, spread over a few worker threads. A scan of a large
 * workspace is one `lstat` per file and little else; Linux has no call that stats many files, so the calls
 * are shared out to worker threads (as git's preloaded index does) while this thread waits. The workers
 * start on first use, stay, and never keep the process alive while idle. A worker that fails costs nothing
 * but time: the caller stats its share itself. A workspace's paths rarely change between two scans, so each
 * worker keeps the last few lists it was sent and is told only which one to stat again.
 */
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'

/** Numbers per path in a stat table: mode (ABSENT, FAILED), dev, ino, size, mtimeMs, ctimeMs. */
export const STAT_FIELDS = 6
/** The path did not exist (or a folder on its way was no folder): it is not part of the tree. */
export const ABSENT = -1
/** `lstat` failed otherwise in a worker: the caller asks again itself, to raise the real error. */
export const FAILED = -2
/** Path lists each worker keeps for stat'ing again (a few hundred KB each for 10,000 paths). */
const KEPT_LISTS = 16

// Plain CommonJS given as source, so it runs the same from src/ (tsx), from dist/ and from the CLI bundle.
const WORKER = `
const { parentPort } = require('node:worker_threads')
const { lstatSync } = require('node:fs')
const NOT_ASCII = /[^\\x00-\\x7f]/
const lists = new Map()
parentPort.on('message', ({ id, key, paths }) => {
  let list = lists.get(key)
  if (paths !== undefined) {
    // Names that are not ASCII go to the file system as their bytes.
    list = paths.split('\\0').map((path) => (NOT_ASCII.test(path) ? Buffer.from(path, 'latin1') : path))
  } else if (list === undefined) {
    parentPort.postMessage({ id, table: undefined })
    return
  }
  // The lists used last are the ones kept.
  lists.delete(key)
  lists.set(key, list)
  if (lists.size > ${KEPT_LISTS}) lists.delete(lists.keys().next().value)
  const table = new Float64Array(list.length * ${STAT_FIELDS})
  for (let i = 0; i < list.length; i++) {
    const path = list[i]
    const o = i * ${STAT_FIELDS}
    let s
    try {
      s = lstatSync(path, { throwIfNoEntry: false })
    } catch {
      table[o] = ${FAILED}
      continue
    }
    if (s === undefined) {
      table[o] = ${ABSENT}
      continue
    }
    table[o] = s.mode
    table[o + 1] = s.dev
    table[o + 2] = s.ino
    table[o + 3] = s.size
    table[o + 4] = s.mtimeMs
    table[o + 5] = s.ctimeMs
  }
  parentPort.postMessage({ id, table }, [table.buffer])
})`

class StatWorkers {
  private readonly workers: Worker[] = []
  private readonly waiting = new Map<
    number,
    { resolve: (t: Float64Array | undefined) => void; reject: (e: Error) => void }
  >()
  private next = 0
  broken = false

  constructor(count: number) {
    for (let i = 0; i < count; i++) {
      // No loader flags of the parent's (tsx): the source is plain JavaScript.
      const worker = new Worker(WORKER, { eval: true, execArgv: [] })
      worker.unref()
      worker.on('message', ({ id, table }: { id: number; table: Float64Array | undefined }) => {
        this.waiting.get(id)?.resolve(table)
        this.settled(id)
      })
      const fail = (error: Error) => {
        this.broken = true
        for (const [id, waiter] of this.waiting) {
          waiter.reject(error)
          this.settled(id)
        }
      }
      worker.on('error', fail)
      worker.on('exit', (code) => fail(new Error(`a stat worker exited (${code})`)))
      this.workers.push(worker)
    }
  }

  get size(): number {
    return this.workers.length
  }

  /**
   * The stat table of the list `key`, from worker `n`: of `paths` when given (the worker keeps them under
   * `key`), else of the paths it kept under `key` — undefined when it no longer has them.
   */
  ask(n: number, key: number, paths?: readonly string[]): Promise<Float64Array | undefined> {
    const id = this.next++
    const worker = this.workers[n] as Worker
    // Held while it works, so a process waiting only on a scan does not exit under it.
    if (this.waiting.size === 0) for (const w of this.workers) w.ref()
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.postMessage({ id, key, paths: paths?.join('\0') })
    })
  }

  private settled(id: number) {
    this.waiting.delete(id)
    if (this.waiting.size === 0) for (const w of this.workers) w.unref()
  }
}

let shared: StatWorkers | undefined
/** The list each caller sent last (and its key), to be named again rather than sent when it recurs. */
const sent = new WeakMap<object, { key: number; paths: readonly string[]; workers: StatWorkers }>()
let lists = 0

/**
 * The stat table of `paths` (latin1 strings, one character per byte of the name): `STAT_FIELDS` numbers
 * each, in order, sliced out to the workers. A path a worker could not stat (or a worker that failed)
 * is FAILED: the caller stats it itself, which raises the real error. `caller` (one per workspace, say)
 * lets a list equal to the one it sent last be stat'ed again without being sent again.
 */
export async function lstatMany(paths: readonly string[], caller?: object): Promise<Float64Array> {
  if (!shared || shared.broken) shared = new StatWorkers(Math.min(4, Math.max(2, availableParallelism())))
  const workers = shared
  const last = caller && sent.get(caller)
  const again = last !== undefined && last.workers === workers && sameList(last.paths, paths)
  const key = again ? last.key : ++lists
  if (caller && !again) sent.set(caller, { key, paths, workers })
  const table = new Float64Array(paths.length * STAT_FIELDS)
  const per = Math.ceil(paths.length / workers.size)
  const asked = Array.from({ length: workers.size }, async (_, n) => {
    const slice = paths.slice(n * per, (n + 1) * per)
    if (slice.length === 0) return
    const ask = (withPaths: boolean) => workers.ask(n, key, withPaths ? slice : undefined)
    // A worker that no longer keeps the list is sent it.
    const part = await (again ? ask(false).then((t) => t ?? ask(true)) : ask(true)).catch(() => undefined)
    if (part) table.set(part, n * per * STAT_FIELDS)
    else for (let i = 0; i < slice.length; i++) table[(n * per + i) * STAT_FIELDS] = FAILED
  })
  await Promise.all(asked)
  return table
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
