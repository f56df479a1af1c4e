/**
 * Which run recorded which tree when: the audit's `workspace_snapshots` rows, and retention over them.
 *
 * Retention keeps every object reachable from a tree of a run that is still running or ended less than
 * `retentionDays` ago, and collects the rest once it is older than a grace period. Taking a snapshot and
 * collecting never overlap: a snapshot holds a shared advisory lock from the moment it asks the store what
 * it lacks until its row is recorded, and a collection holds the exclusive one — so an object a new
 * snapshot counts on is never deleted under it. Nothing another run still references is ever collected,
 * because a run's rows name every tree it used (a run that starts from another run's tree records it as
 * its own start).
 */
import type pg from 'pg'
import { readTree } from './restore.js'
import type { ObjectStore } from './store.js'
import { decodeChunks } from './tree.js'

/** Any two 32-bit keys unlikely to collide with another application's advisory locks (migrations use 4). */
const LOCK = [0x7e7e7, 8] as const

export type SnapshotKind = 'start' | 'tool' | 'gate' | 'outside-edit' | 'restore'

export interface SnapshotRow {
  runId: string
  step: number
  call: number
  kind: SnapshotKind
  root: string
  store: string
  files: number
  bytes: number
  newObjects: number
  newBytes: number
  detail?: string | undefined
  takenAt: Date
  collectedAt?: Date | undefined
}

/** A connection, a pool or a transaction of the caller's: where a snapshot's row is written. */
export interface SnapshotSql {
  query<Row extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<Row>>
}

/** Records a row (idempotent: an activity retried after recording keeps the first row). */
export async function recordSnapshot(client: SnapshotSql, row: SnapshotRow): Promise<void> {
  await client.query(
    `insert into workspace_snapshots
       (run_id, step, call, kind, root, store, files, bytes, new_objects, new_bytes, detail, taken_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     on conflict (run_id, step, call, kind) do nothing`,
    [
      row.runId,
      row.step,
      row.call,
      row.kind,
      row.root,
      row.store,
      row.files,
      row.bytes,
      row.newObjects,
      row.newBytes,
      row.detail ?? null,
      row.takenAt,
    ],
  )
}

const COLUMNS = `run_id, step, call, kind, root, store, files, bytes, new_objects, new_bytes, detail, taken_at, collected_at`

function fromRow(r: Record<string, unknown>): SnapshotRow {
  return {
    runId: r.run_id as string,
    step: r.step as number,
    call: r.call as number,
    kind: r.kind as SnapshotKind,
    root: r.root as string,
    store: r.store as string,
    files: r.files as number,
    bytes: Number(r.bytes),
    newObjects: r.new_objects as number,
    newBytes: Number(r.new_bytes),
    ...(r.detail ? { detail: r.detail as string } : {}),
    takenAt: r.taken_at as Date,
    ...(r.collected_at ? { collectedAt: r.collected_at as Date } : {}),
  }
}

/** Adds what a person should know to a recorded row (what an outside edit changed). */
export async function noteSnapshot(
  pool: pg.Pool,
  key: { runId: string; step: number; call: number; kind: SnapshotKind },
  detail: string,
): Promise<void> {
  await pool.query(
    'update workspace_snapshots set detail = $5 where run_id = $1 and step = $2 and call = $3 and kind = $4',
    [key.runId, key.step, key.call, key.kind, detail],
  )
}

/** Every snapshot of a run, in the order they were taken. */
export async function runSnapshots(pool: pg.Pool, runId: string): Promise<SnapshotRow[]> {
  const { rows } = await pool.query(
    `select ${COLUMNS} from workspace_snapshots where run_id = $1 order by id`,
    [runId],
  )
  return rows.map(fromRow)
}

/** The row of one call's snapshot, when it was recorded (an earlier attempt that died after recording it). */
export async function callSnapshot(
  pool: pg.Pool,
  key: { runId: string; step: number; call: number; kind: SnapshotKind },
): Promise<SnapshotRow | undefined> {
  const { rows } = await pool.query(
    `select ${COLUMNS} from workspace_snapshots where run_id = $1 and step = $2 and call = $3 and kind = $4`,
    [key.runId, key.step, key.call, key.kind],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/** The last step a snapshot of the run was recorded at (0 when none was). */
export async function lastSnapshotStep(pool: pg.Pool, runId: string): Promise<number> {
  const { rows } = await pool.query<{ step: number }>(
    'select coalesce(max(step), 0) as step from workspace_snapshots where run_id = $1',
    [runId],
  )
  return rows[0]?.step ?? 0
}

/**
 * The workspace as it was at the end of step `step`: the last tree recorded at or before it; without a step,
 * the last tree the run recorded.
 */
export async function treeAtStep(
  pool: pg.Pool,
  runId: string,
  step?: number,
): Promise<SnapshotRow | undefined> {
  const bound = step === undefined ? '' : ' and step <= $2'
  const { rows } = await pool.query(
    `select ${COLUMNS} from workspace_snapshots where run_id = $1${bound} order by step desc, id desc limit 1`,
    step === undefined ? [runId] : [runId, step],
  )
  return rows[0] ? fromRow(rows[0]) : undefined
}

/**
 * The runs a run is linked to: the one it was rewound from, and those rewound from it; and the branch its
 * verified tree was written to (`branch tether/<run id> at <commit> in <folder>`), when one was.
 */
export interface RunLinks {
  from?: { runId: string; step: number } | undefined
  into: Array<{ runId: string; step: number }>
  branch?: string | undefined
}

export async function runLinks(pool: pg.Pool, runId: string): Promise<RunLinks> {
  const { rows: own } = await pool.query<{ source: { run?: string; step?: number } | null }>(
    `select contract -> 'source' as source from runs where run_id = $1`,
    [runId],
  )
  const source = own[0]?.source
  const { rows } = await pool.query<{ run_id: string; step: string }>(
    `select run_id, contract -> 'source' ->> 'step' as step from runs
      where contract -> 'source' ->> 'run' = $1 order by started_at, run_id`,
    [runId],
  )
  // The gate's snapshot carries what became of the branch (commitToBranch's note).
  const { rows: notes } = await pool.query<{ detail: string }>(
    `select detail from workspace_snapshots
      where run_id = $1 and kind = 'gate' and detail like 'branch %' order by id desc limit 1`,
    [runId],
  )
  return {
    ...(source?.run !== undefined ? { from: { runId: source.run, step: Number(source.step) } } : {}),
    into: rows.map((row) => ({ runId: row.run_id, step: Number(row.step) })),
    ...(notes[0] ? { branch: notes[0].detail } : {}),
  }
}

/** Everyone whose approval counted in a run (signed answers and plain decisions), in the order they gave it. */
export async function runApprovers(pool: pg.Pool, runId: string): Promise<string[]> {
  const { rows } = await pool.query<{ who: string }>(
    `select who from (
       select a.approver as who, a.answered_at as at from approval_answers a
         join approvals p using (approval_id)
        where p.run_id = $1 and a.decision = 'approve'
       union all
       select decided_by, decided_at from approvals
        where run_id = $1 and decision = 'approved' and decided_by is not null
     ) answers group by who order by min(at), who`,
    [runId],
  )
  return rows.map((row) => row.who)
}

/**
 * Runs `work` in one transaction on a client of its own, holding the shared lock (snapshots may be taken)
 * until it commits; `work` is given the collection generation, read under the lock. Beginning, locking and
 * reading the generation are one round trip.
 */
export async function underSnapshotLock<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, generation: number) => Promise<T>,
): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    const results = (await client.query(`begin; ${LOCKED_GENERATION}`)) as unknown as GenerationResults
    const result = await work(client, generationOf(results))
    await client.query('commit')
    return result
  } catch (error) {
    // A client that cannot roll back is not given back to the pool.
    broken = await client.query('rollback').then(
      () => undefined,
      (failure: Error) => failure,
    )
    throw error
  } finally {
    client.release(broken)
  }
}

/** The collection generation: it moves whenever a collection may have deleted objects. */
export async function collectionGeneration(client: SnapshotSql): Promise<number> {
  const { rows } = await client.query<{ generation: string }>(GENERATION)
  return Number(rows[0]?.generation ?? 0)
}

/**
 * The snapshot lock (shared) in the caller's transaction, held until it commits with the row; returns the
 * collection generation, read under the lock.
 */
export async function snapshotLockInTransaction(tx: SnapshotSql): Promise<number> {
  return generationOf((await tx.query(LOCKED_GENERATION)) as unknown as GenerationResults)
}

/**
 * The shared lock, then the collection generation: two statements sent as one (no values, so the simple
 * protocol), each with a snapshot of its own, so the generation is read after the lock is granted.
 */
const GENERATION = 'select generation from snapshot_collections where id = 1'
const LOCKED_GENERATION = `select pg_advisory_xact_lock_shared(${LOCK[0]}, ${LOCK[1]}); ${GENERATION}`
type GenerationResults = pg.QueryResult<{ generation?: string }>[]
/** The generation, from the results of a batch that ends with LOCKED_GENERATION. */
const generationOf = (results: GenerationResults) => Number(results.at(-1)?.rows[0]?.generation ?? 0)

export interface CollectionReport {
  /** False when another collection was running (nothing was done). */
  ran: boolean
  /** Trees kept, objects kept, objects and bytes deleted. */
  keptTrees: number
  keptObjects: number
  deletedObjects: number
  /** Rows of runs past retention, now marked collected. */
  expiredSnapshots: number
}

export interface RetentionOptions {
  /** Days a run's snapshots are kept after it ends. */
  retentionDays: number
  /** Objects younger than this are never collected (a snapshot may be writing them). Default 1 h. */
  graceMs?: number
  now?: Date
  /** Report what would go, delete nothing. */
  dryRun?: boolean
}

/** Collects what no retained run references; skips (ran: false) when another collection holds the lock. */
export async function collectSnapshots(
  pool: pg.Pool,
  store: ObjectStore,
  options: RetentionOptions,
): Promise<CollectionReport> {
  const client = await pool.connect()
  const report: CollectionReport = {
    ran: false,
    keptTrees: 0,
    keptObjects: 0,
    deletedObjects: 0,
    expiredSnapshots: 0,
  }
  try {
    const { rows: locked } = await client.query<{ ok: boolean }>(
      'select pg_try_advisory_lock($1, $2) as ok',
      [...LOCK],
    )
    if (!locked[0]?.ok) return report
    try {
      report.ran = true
      const now = options.now ?? new Date()
      const cutoff = new Date(now.getTime() - options.retentionDays * 86_400_000)
      const { rows: roots } = await client.query<{ root: string }>(
        `select distinct s.root from workspace_snapshots s join runs r using (run_id)
          where s.store = $1 and (r.finished_at is null or r.finished_at > $2)`,
        [store.name, cutoff],
      )
      const keep = new Set<string>()
      for (const { root } of roots) {
        if (keep.has(root)) continue
        keep.add(root)
        report.keptTrees += 1
        // A retained tree that cannot be read stops the collection: what it lacks cannot be told apart.
        for (const { entry } of await readTree(store, root, (page) => keep.add(page))) {
          if (keep.has(entry.hash)) continue
          keep.add(entry.hash)
          if (entry.kind === 'F') {
            for (const chunk of decodeChunks((await store.get([entry.hash])).get(entry.hash) as Buffer))
              keep.add(chunk)
          }
        }
      }
      const young = now.getTime() - (options.graceMs ?? 3_600_000)
      const doomed: string[] = []
      for await (const object of store.list()) {
        if (keep.has(object.hash)) report.keptObjects += 1
        else if (object.createdAt.getTime() < young) doomed.push(object.hash)
      }
      report.deletedObjects = doomed.length
      if (options.dryRun) return report
      await store.delete(doomed)
      const expired = await client.query(
        `update workspace_snapshots s set collected_at = $3 from runs r
          where s.run_id = r.run_id and s.store = $1 and s.collected_at is null
            and r.finished_at is not null and r.finished_at <= $2
            and not exists (select 1 from workspace_snapshots k join runs kr using (run_id)
                             where k.root = s.root and (kr.finished_at is null or kr.finished_at > $2))`,
        [store.name, cutoff, now],
      )
      report.expiredSnapshots = expired.rowCount ?? 0
      await client.query(
        `insert into snapshot_collections (id, generation, ran_at) values (1, 1, $1)
         on conflict (id) do update set generation = snapshot_collections.generation + 1, ran_at = $1`,
        [now],
      )
      return report
    } finally {
      await client.query('select pg_advisory_unlock($1, $2)', [...LOCK])
    }
  } finally {
    client.release()
  }
}
