/**
 * A worker's snapshots: what it remembers of each workspace folder it served (the stat index, the last
 * root), which objects it knows the store holds, and the three things activities ask of it — take a
 * snapshot, bring a folder to a recorded tree, and say whether a folder is at one.
 */
import { existsSync } from 'node:fs'
import { chmod, mkdir, rename, rm } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import type pg from 'pg'
import {
  collectionGeneration,
  collectSnapshots,
  recordSnapshot,
  type SnapshotKind,
  type SnapshotRow,
  type SnapshotSql,
  snapshotLockInTransaction,
  underSnapshotLock,
} from './catalog.js'
import { diffTrees, RestoreError, restoreTree, type TreeChange } from './restore.js'
import {
  type Exclusion,
  objectBytes,
  type Scan,
  scanTree,
  WorkspaceChangedError,
  WorkspaceIndex,
} from './scan.js'
import type { ObjectStore } from './store.js'
import { displayName } from './tree.js'

/** Objects remembered as held by the store, before the memory is started afresh. */
const KNOWN_LIMIT = 1_000_000
/** Bytes uploaded per call to the store. */
const UPLOAD_BYTES = 16 * 1024 * 1024
/** Bytes of new objects sent without asking the store first which it lacks. */
const BLIND_BYTES = 4 * 1024 * 1024
/** How often retention runs on its own: a worker starting a run collects when the last collection is older. */
const COLLECT_EVERY_MS = 6 * 3_600_000

export interface SnapshotRef {
  runId: string
  step: number
  call: number
  kind: SnapshotKind
}

/**
 * The caller's transaction, offered to a snapshot for its row: `write` runs in it, so the row commits with
 * the caller's own rows (a command's result), in one commit.
 */
export type SnapshotCommit = (write: (tx: SnapshotSql) => Promise<void>) => Promise<void>

export interface TakenSnapshot {
  root: string
  row: SnapshotRow
  scan: Scan
  /** How long the scan took (0 when it was handed in), for benches and logs. */
  scanMs: number
}

export class WorkspaceSnapshots {
  private readonly indexes = new Map<string, WorkspaceIndex>()
  private readonly known = new Set<string>()
  private generation = -1
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(
    readonly store: ObjectStore,
    private readonly pool: pg.Pool,
  ) {}

  /** Runs `work` alone on `folder`: two activities never scan or restore one folder at once. */
  exclusive<T>(folder: string, work: () => Promise<T>): Promise<T> {
    const before = this.queues.get(folder) ?? Promise.resolve()
    const mine = before.then(work, work)
    const settled = mine.catch(() => {})
    this.queues.set(folder, settled)
    void settled.then(() => {
      if (this.queues.get(folder) === settled) this.queues.delete(folder)
    })
    return mine
  }

  private index(folder: string): WorkspaceIndex {
    let index = this.indexes.get(folder)
    if (!index) {
      index = new WorkspaceIndex()
      this.indexes.set(folder, index)
    }
    return index
  }

  /** The root this worker last saw `folder` at (a scan or a restore), if it has seen it. */
  lastRoot(folder: string): string | undefined {
    return this.indexes.get(folder)?.root
  }

  /** The folder's tree now (objects not uploaded): for comparing with a recorded root. */
  scan(folder: string, exclusion: { key: string; excluded: Exclusion }): Promise<Scan> {
    return scanTree(folder, this.index(folder), exclusion)
  }

  /**
   * Stores what the store lacks of `folder`'s tree, then records the row under the snapshot lock — in the
   * caller's transaction when `commit` offers one (the lock then lasts until that transaction commits).
   * `scanned` is a scan of the folder just made (by `scan`), to be stored rather than made again.
   *
   * The upload holds no connection: a connection held for the lock while the store (on the same pool) waits
   * for another starved the pool once as many snapshots ran at once as it has connections. A collection
   * that ran meanwhile may have deleted what this took for stored; the generation, read before the upload
   * and again under the lock, tells, and the tree is then taken again from scratch.
   */
  async take(
    ref: SnapshotRef,
    folder: string,
    exclusion: { key: string; excluded: Exclusion },
    detail?: string,
    options: { scanned?: Scan; commit?: SnapshotCommit } = {},
  ): Promise<TakenSnapshot> {
    // The collection generation the upload goes by: the one this worker last saw, else read while the folder
    // is scanned. Either may be old by the time the row is recorded; the read under the lock then tells
    // (StaleIndex below), and the tree is taken again from scratch. A collection is rare (hours apart), so
    // a step pays no read for it.
    let generation: Promise<number> =
      this.generation >= 0 ? Promise.resolve(this.generation) : collectionGeneration(this.pool)
    generation.catch(() => {})
    let scan = options.scanned
    let scanMs = 0
    for (let attempt = 1; ; attempt++) {
      try {
        if (!scan) {
          const scanning = performance.now()
          scan = await this.scan(folder, exclusion)
          scanMs = performance.now() - scanning
        }
        const current = scan
        const uploaded = await this.upload(folder, current, await generation)
        const row: SnapshotRow = {
          ...ref,
          root: current.root,
          store: this.store.name,
          files: current.files,
          bytes: current.bytes,
          newObjects: uploaded.newObjects,
          newBytes: uploaded.newBytes,
          detail,
          takenAt: new Date(),
        }
        /** The row recorded under the lock at `generation`: stale if a collection ran since the upload. */
        const recorded = (generation: number): TakenSnapshot => {
          if (generation !== uploaded.generation) throw new StaleIndex()
          // Only a scan of the folder as the index now has it confirms the index's objects.
          const index = this.index(folder)
          if (index.root === current.root) index.stored(generation)
          return { root: current.root, row, scan: current, scanMs }
        }
        if (!options.commit) {
          return await underSnapshotLock(this.pool, async (client, generation) => {
            await recordSnapshot(client, row)
            return recorded(generation)
          })
        }
        let taken: TakenSnapshot | undefined
        await options.commit(async (tx) => {
          // The row goes out with the lock, in the same round trip: a collection that ran meanwhile moved the
          // generation read under the lock, and the stale row is rolled back with the rest of the commit.
          const [generation] = await Promise.all([snapshotLockInTransaction(tx), recordSnapshot(tx, row)])
          taken = recorded(generation)
        })
        if (!taken) throw new Error(`the snapshot of ${folder} was offered no transaction to record it in`)
        return taken
      } catch (error) {
        // A file changed while the scan read it or before its upload, or a collection ran since this worker
        // last knew what the store holds: the tree is taken again (from scratch after a collection), once.
        if (!(error instanceof WorkspaceChangedError || error instanceof StaleIndex) || attempt > 1)
          throw error
        if (error instanceof StaleIndex) {
          this.indexes.delete(folder)
          this.known.clear()
        }
        generation = collectionGeneration(this.pool)
        generation.catch(() => {})
        scan = undefined
      }
    }
  }

  /** Puts what the store lacks of `scan` (as of collection `generation`), on the pool, holding nothing. */
  private async upload(
    folder: string,
    scan: Scan,
    generation: number,
  ): Promise<{ generation: number; newObjects: number; newBytes: number }> {
    const index = this.index(folder)
    if (generation !== this.generation || this.known.size > KNOWN_LIMIT) {
      this.known.clear()
      this.generation = generation
    }
    // Objects this index took for stored may have been collected since: only a full scan can tell.
    if (index.generation !== undefined && index.generation !== generation) throw new StaleIndex()
    const candidates = [...scan.objects.keys()].filter((hash) => !this.known.has(hash))
    const small = this.store.putNew && smallUpload(scan, candidates)
    if (small && this.store.putNew) {
      // Few, small objects (a step's change): written blind, the store saying which were new.
      const fresh = new Set(await this.store.putNew(small))
      for (const hash of candidates) this.known.add(hash)
      let newBytes = 0
      for (const { hash, data } of small) if (fresh.has(hash)) newBytes += data.length
      return { generation, newObjects: fresh.size, newBytes }
    }
    const missing = candidates.length > 0 ? await this.store.missing(candidates) : []
    let newBytes = 0
    let batch: Array<{ hash: string; data: Buffer }> = []
    let batchBytes = 0
    for (const hash of missing) {
      const data = objectBytes(
        hash,
        scan.objects.get(hash) as NonNullable<ReturnType<typeof scan.objects.get>>,
      )
      batch.push({ hash, data })
      batchBytes += data.length
      newBytes += data.length
      if (batchBytes >= UPLOAD_BYTES) {
        await this.store.put(batch)
        batch = []
        batchBytes = 0
      }
    }
    if (batch.length > 0) await this.store.put(batch)
    for (const hash of candidates) this.known.add(hash)
    return { generation, newObjects: missing.length, newBytes }
  }

  /**
   * Lays the tree `root` out in `folder`, which must be absent or empty, and confirms by a scan that the
   * tree is at `root` (every object was checked against its name as it arrived). It is laid out beside the
   * folder and moved into place once confirmed: a restore that fails or dies part way (a damaged store, a
   * worker killed again) leaves no partial workspace, which a later attempt would take for the run's own and
   * record its missing files as deleted outside the run. With `recorded`, a row of kind `restore` says so
   * once the folder is in place (a run's timeline shows where its workspace moved).
   */
  async restore(
    root: string,
    folder: string,
    exclusion: { key: string; excluded: Exclusion },
    recorded?: { ref: SnapshotRef; detail: string },
  ): Promise<{ files: number; bytes: number }> {
    const staging = join(dirname(folder), `.${basename(folder)}.tether-restore`)
    // What an attempt that died left there goes; the folder is then made anew, never one found there (a
    // link put in its place meanwhile fails the restore rather than leading its writes elsewhere).
    await rm(staging, { recursive: true, force: true })
    await mkdir(dirname(folder), { recursive: true })
    await mkdir(staging, { mode: 0o700 })
    const index = new WorkspaceIndex()
    try {
      const written = await restoreTree(this.store, root, staging, index)
      const check = await scanTree(staging, index, exclusion)
      if (check.root !== root) {
        throw new RestoreError(
          `the restored workspace hashes to ${check.root.slice(0, 12)}…, not the recorded ${root.slice(0, 12)}…; nothing was kept`,
        )
      }
      // A tree keeps its entries' modes, not its root's: the folder gets the mode a new folder gets here, as a
      // clone's would, once nothing is left to write into it.
      await chmod(staging, 0o777 & ~process.umask())
      await rename(staging, folder)
      index.moved()
      this.indexes.set(folder, index)
      if (recorded) {
        await recordSnapshot(this.pool, {
          ...recorded.ref,
          root,
          store: this.store.name,
          files: check.files,
          bytes: check.bytes,
          newObjects: 0,
          newBytes: 0,
          detail: recorded.detail,
          takenAt: new Date(),
        })
      }
      return written
    } catch (error) {
      await rm(staging, { recursive: true, force: true })
      throw error
    }
  }

  /** What changed from tree `from` to tree `to`. */
  diff(from: string, to: string): Promise<TreeChange[]> {
    return diffTrees(this.store, from, to)
  }

  /**
   * Collects what retention lets go when no collection ran in the last hours (any worker's counts), in the
   * background; a collection running elsewhere makes this one a no-op.
   */
  collectIfDue(retentionDays: number, log: (line: string) => void = () => {}): void {
    const due = async () => {
      const { rows } = await this.pool.query<{ due: boolean }>(
        `select coalesce(max(ran_at) < now() - make_interval(secs => $1), true) as due from snapshot_collections`,
        [COLLECT_EVERY_MS / 1000],
      )
      if (!rows[0]?.due) return
      const report = await collectSnapshots(this.pool, this.store, { retentionDays })
      if (report.ran && report.deletedObjects > 0) {
        log(`snapshot retention: collected ${report.deletedObjects} objects from ${this.store.name}`)
      }
    }
    due().catch((error) => log(`snapshot retention failed: ${(error as Error).message}`))
  }

  /** Forgets a folder (it was deleted, or laid out again). */
  forget(folder: string): void {
    this.indexes.delete(folder)
  }

  exists(folder: string): boolean {
    return existsSync(folder)
  }
}

/**
 * The objects of `candidates` when they are all in memory and together small enough to send without
 * asking the store first which it lacks; undefined otherwise.
 */
function smallUpload(scan: Scan, candidates: readonly string[]) {
  const objects: Array<{ hash: string; data: Buffer }> = []
  let bytes = 0
  for (const hash of candidates) {
    const data = scan.objects.get(hash)
    if (!Buffer.isBuffer(data)) return undefined
    bytes += data.length
    if (bytes > BLIND_BYTES) return undefined
    objects.push({ hash, data })
  }
  return objects.length > 0 ? objects : undefined
}

/** The index of a folder took objects for stored that a collection may have deleted since. */
class StaleIndex extends Error {
  override name = 'StaleIndex'
}

/** Changes in a line a person (or the model) reads: `M src/a.js, A notes.txt, and 3 more`. */
export function describeChanges(changes: readonly TreeChange[], limit = 20): string {
  const shown = changes.slice(0, limit).map((c) => `${c.change} ${displayName(c.path)}`)
  const more = changes.length - shown.length
  return `${shown.join(', ')}${more > 0 ? `, and ${more} more` : ''}`
}
