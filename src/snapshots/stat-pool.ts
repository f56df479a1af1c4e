/**
 * `lstat` of many paths at once, spread over a few worker threads. A scan of a large
 * workspace is one `lstat` per file and little else; Linux has no call that stats many files, so the calls
 * are shared out to worker threads (as git's preloaded index does) while this thread waits. The workers
 * start on first use, stay, and never keep the process alive while idle. A worker that fails costs nothing
 * but time: the caller stats its share itself.
 */
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'

/** Numbers per path in a stat table: mode (ABSENT, FAILED), dev, ino, size, mtimeMs, ctimeMs. */
export const STAT_FIELDS = 6
/** The path did not exist (or a folder on its way was no folder): it is not part of the tree. */
export const ABSENT = -1
/** `lstat` failed otherwise in a worker: the caller asks again itself, to raise the real error. */
export const FAILED = -2

// Plain CommonJS given as source, so it runs the same from src/ (tsx), from dist/ and from the CLI bundle.
const WORKER = `
const { parentPort } = require('node:worker_threads')
const { lstatSync } = require('node:fs')
const NOT_ASCII = /[^\\x00-\\x7f]/
parentPort.on('message', ({ id, paths }) => {
  const list = paths.split('\\0')
  const table = new Float64Array(list.length * ${STAT_FIELDS})
  for (let i = 0; i < list.length; i++) {
    const path = list[i]
    const o = i * ${STAT_FIELDS}
    let s
    try {
      s = lstatSync(NOT_ASCII.test(path) ? Buffer.from(path, 'latin1') : path, { throwIfNoEntry: false })
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
    { resolve: (t: Float64Array) => void; reject: (e: Error) => void }
  >()
  private next = 0
  broken = false

  constructor(count: number) {
    for (let i = 0; i < count; i++) {
      // No loader flags of the parent's (tsx): the source is plain JavaScript.
      const worker = new Worker(WORKER, { eval: true, execArgv: [] })
      worker.unref()
      worker.on('message', ({ id, table }: { id: number; table: Float64Array }) => {
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

  /** The stat table of `paths`, from worker `n`. */
  ask(n: number, paths: readonly string[]): Promise<Float64Array> {
    const id = this.next++
    const worker = this.workers[n] as Worker
    // Held while it works, so a process waiting only on a scan does not exit under it.
    if (this.waiting.size === 0) for (const w of this.workers) w.ref()
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.postMessage({ id, paths: paths.join('\0') })
    })
  }

  private settled(id: number) {
    this.waiting.delete(id)
    if (this.waiting.size === 0) for (const w of this.workers) w.unref()
  }
}

let shared: StatWorkers | undefined

/**
 * The stat table of `paths` (latin1 strings, one character per byte of the name): `STAT_FIELDS` numbers
 * each, in order, sliced out to the workers. A path a worker could not stat (or a worker that failed)
 * is FAILED: the caller stats it itself, which raises the real error.
 */
export async function lstatMany(paths: readonly string[]): Promise<Float64Array> {
  if (!shared || shared.broken) shared = new StatWorkers(Math.min(4, Math.max(2, availableParallelism())))
  const workers = shared
  const table = new Float64Array(paths.length * STAT_FIELDS)
  const per = Math.ceil(paths.length / workers.size)
  const asked = Array.from({ length: workers.size }, async (_, n) => {
    const slice = paths.slice(n * per, (n + 1) * per)
    if (slice.length === 0) return
    const part = await workers.ask(n, slice).catch(() => undefined)
    if (part) table.set(part, n * per * STAT_FIELDS)
    else for (let i = 0; i < slice.length; i++) table[(n * per + i) * STAT_FIELDS] = FAILED
  })
  await Promise.all(asked)
  return table
}
