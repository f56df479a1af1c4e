/**
 * Snapshot objects in PostgreSQL: the audit database's `snapshot_objects` table (migration 8). The default
 * store: nothing more to run. Reads and writes go in batches, so a restore of thousands of small files is a
 * handful of round trips.
 */
import type pg from 'pg'
import { copyIn, copyRows, int4 } from './pg-copy.js'
import { checkedAll, type ObjectStore, SnapshotStoreError, type StoredObject } from './store.js'

/** Bytes per batch read or written: large enough for few round trips, small enough for bounded memory. */
const BATCH_BYTES = 16 * 1024 * 1024
const BATCH_HASHES = 2_000
/** PostgreSQL's error code for a duplicate key. */
const UNIQUE_VIOLATION = '23505'
/** An object's name: its SHA-256, in lowercase hex (the table's check says so too). */
const OBJECT_NAME = /^[0-9a-f]{64}$/

export function postgresStore(pool: pg.Pool): ObjectStore {
  const name = 'postgres'
  return {
    name,
    async missing(hashes) {
      const missing: string[] = []
      for (let i = 0; i < hashes.length; i += BATCH_HASHES) {
        const batch = hashes.slice(i, i + BATCH_HASHES)
        const { rows } = await pool.query<{ hash: string }>(
          'select hash from snapshot_objects where hash = any($1::text[])',
          [batch],
        )
        const held = new Set(rows.map((row) => row.hash))
        for (const hash of batch) if (!held.has(hash)) missing.push(hash)
      }
      return missing
    },

    async put(objects) {
      // Asked for after `missing`: the objects are new, unless another worker wrote one meanwhile, which
      // fails the whole COPY; that batch is then inserted as putNew does, skipping what is there.
      await inBatches(objects, async (batch) => {
        try {
          await copyIn(
            pool,
            'snapshot_objects (hash, data, size)',
            batch.map(({ hash, data }) => [Buffer.from(hash, 'latin1'), data, int4(data.length)]),
          )
        } catch (error) {
          if ((error as { code?: unknown }).code !== UNIQUE_VIOLATION) throw error
          await insert(batch)
        }
      })
    },

    async putNew(objects) {
      const inserted: string[] = []
      await inBatches(objects, async (batch) => {
        inserted.push(...(await insert(batch)))
      })
      return inserted
    },

    async get(hashes) {
      return checkedAll(name, await read(hashes, false))
    },

    getUnchecked(hashes) {
      return read(hashes, true)
    },

    async *list(): AsyncIterable<StoredObject> {
      let after = ''
      for (;;) {
        const { rows } = await pool.query<{ hash: string; created_at: Date }>(
          'select hash, created_at from snapshot_objects where hash > $1 order by hash limit 5000',
          [after],
        )
        for (const row of rows) yield { hash: row.hash, createdAt: row.created_at }
        if (rows.length < 5000) return
        after = rows[rows.length - 1]?.hash as string
      }
    },

    async delete(hashes) {
      for (let i = 0; i < hashes.length; i += BATCH_HASHES) {
        await pool.query('delete from snapshot_objects where hash = any($1::text[])', [
          hashes.slice(i, i + BATCH_HASHES),
        ])
      }
    },
  }

  /** The objects of `hashes`, unchecked; with `shared`, in shared blocks (see BinaryCopyReader). */
  async function read(hashes: readonly string[], shared: boolean): Promise<Map<string, Buffer>> {
    const found = new Map<string, Buffer>()
    // Only names a store can hold are written into the query (COPY takes no parameters); any other is missing.
    const wanted = [...new Set(hashes)].filter((hash) => OBJECT_NAME.test(hash))
    for (let i = 0; i < wanted.length; i += BATCH_HASHES / 4) {
      const batch = wanted.slice(i, i + BATCH_HASHES / 4)
      const rows = await copyRows(
        pool,
        `select hash, data from snapshot_objects where hash = any('{${batch.join(',')}}'::text[])`,
        { shared },
      )
      for (const [hash, data] of rows) found.set((hash as Buffer).toString('latin1'), data as Buffer)
    }
    const absent = [...new Set(hashes)].filter((hash) => !found.has(hash))
    if (absent.length > 0) throw missingObjects(name, absent)
    return found
  }

  /** Inserts one batch; returns the hashes that were not there yet. */
  async function insert(batch: ReadonlyArray<{ hash: string; data: Buffer }>): Promise<string[]> {
    const { rows } = await pool.query<{ hash: string }>(
      `insert into snapshot_objects (hash, data, size)
       select hash, data, octet_length(data) from unnest($1::text[], $2::bytea[]) as o(hash, data)
       on conflict (hash) do nothing returning hash`,
      [batch.map((o) => o.hash), batch.map((o) => o.data)],
    )
    return rows.map((row) => row.hash)
  }
}

/** Hands `objects` to `write` in batches of at most BATCH_BYTES (or one object, when larger). */
async function inBatches<T extends { data: Buffer }>(
  objects: readonly T[],
  write: (batch: T[]) => Promise<void>,
): Promise<void> {
  let batch: T[] = []
  let bytes = 0
  for (const object of objects) {
    if (batch.length > 0 && bytes + object.data.length > BATCH_BYTES) {
      await write(batch)
      batch = []
      bytes = 0
    }
    batch.push(object)
    bytes += object.data.length
  }
  if (batch.length > 0) await write(batch)
}

export function missingObjects(store: string, hashes: readonly string[]): SnapshotStoreError {
  return new SnapshotStoreError(
    `the snapshot store ${store} lacks ${hashes.length} object${hashes.length === 1 ? '' : 's'} ` +
      `(${hashes[0]?.slice(0, 12)}…): they were collected, or this worker uses another store than the one that took the snapshot`,
  )
}
