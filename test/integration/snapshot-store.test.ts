/**
 * The PostgreSQL snapshot store reads and writes objects with binary COPY (src/snapshots/pg-copy.ts): against a real
 * server, every byte comes back as written, what the store lacks is named, and what it holds under the
 * wrong name is caught.
 */
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { postgresStore, SnapshotStoreError, sha256 } from '../../src/snapshots/index.js'
import { copyRows } from '../../src/snapshots/pg-copy.js'
import { openTestAudit } from '../support/agent.js'

let audit: AuditStore
beforeAll(async () => {
  audit = await openTestAudit()
})
afterAll(() => audit?.close())

const object = (data: Buffer) => ({ hash: sha256(data), data })

describe('the PostgreSQL snapshot store', () => {
  it('gives back exactly the bytes it was given: every byte value, nothing at all, megabytes', async () => {
    const store = postgresStore(audit.pool)
    const objects = [
      object(Buffer.from(Array.from({ length: 256 }, (_, i) => i))),
      object(Buffer.alloc(0)),
      object(randomBytes(5 * 1024 * 1024)),
      ...Array.from({ length: 600 }, () => object(randomBytes(300))),
    ]
    await store.put(objects)
    const got = await store.get(objects.map((o) => o.hash))
    expect(got.size).toBe(objects.length)
    for (const { hash, data } of objects) expect((got.get(hash) as Buffer).equals(data)).toBe(true)
    // Unchecked, for a restore's writers: the same bytes, in shared blocks they read in place.
    const handed = await store.getUnchecked?.(objects.map((o) => o.hash))
    expect(handed?.size).toBe(objects.length)
    for (const { hash, data } of objects) {
      const bytes = handed?.get(hash) as Buffer
      expect(bytes.equals(data)).toBe(true)
      if (data.length > 0) expect(bytes.buffer).toBeInstanceOf(SharedArrayBuffer)
    }
  })

  it('writes a batch of which another writer stored one meanwhile: nothing fails and nothing is lost', async () => {
    const store = postgresStore(audit.pool)
    const first = object(randomBytes(1000))
    await store.put([first])
    const batch = [object(randomBytes(1000)), first, object(randomBytes(1000))]
    await store.put(batch)
    const got = await store.get(batch.map((o) => o.hash))
    for (const { hash, data } of batch) expect(got.get(hash)?.equals(data)).toBe(true)
    const { rows } = await audit.pool.query<{ hash: string; size: number }>(
      'select hash, size from snapshot_objects where hash = any($1::text[])',
      [batch.map((o) => o.hash)],
    )
    expect(rows.map((row) => row.size)).toEqual([1000, 1000, 1000])
  })

  it('names what it lacks, a name no object could have included, and loses nothing it holds', async () => {
    const store = postgresStore(audit.pool)
    const held = object(randomBytes(64))
    await store.put([held])
    const absent = sha256(randomBytes(8))
    await expect(store.get([held.hash, absent, "x'); drop table snapshot_objects; --"])).rejects.toThrow(
      /lacks 2 objects/,
    )
    expect((await store.get([held.hash])).get(held.hash)?.equals(held.data)).toBe(true)
  })

  it('says it is damaged when an object no longer matches its name', async () => {
    const store = postgresStore(audit.pool)
    const damaged = object(randomBytes(100))
    await store.put([damaged])
    await audit.pool.query(`update snapshot_objects set data = '\\x00' where hash = $1`, [damaged.hash])
    const error = await store.get([damaged.hash]).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SnapshotStoreError)
    expect((error as Error).message).toMatch(/other content than its name says/)
    // Unchecked, it is handed over as it is: the caller's check is what catches it (restore.test.ts).
    expect((await store.getUnchecked?.([damaged.hash]))?.get(damaged.hash)).toEqual(Buffer.from([0]))
  })

  it('reads NULL, empty and binary values of a query, and a failing query as the server’s error', async () => {
    const rows = await copyRows(audit.pool, `select null::bytea, ''::bytea, '\\x00ff0a'::bytea, 'é'::text`)
    expect(rows).toEqual([[null, Buffer.alloc(0), Buffer.from([0, 0xff, 0x0a]), Buffer.from('é')]])
    await expect(copyRows(audit.pool, 'select 1/0')).rejects.toThrow(/division by zero/)
    // The connection goes back to the pool fit for use.
    expect((await audit.pool.query('select 1 as one')).rows).toEqual([{ one: 1 }])
  })
})
