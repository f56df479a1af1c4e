/**
 * Where snapshot objects live: a content-addressed store of immutable objects named by their SHA-256.
 * Two real ones: PostgreSQL (the audit database; the default) and any S3-compatible object store. Every
 * read is checked against its name, so a store that returns other bytes than were written is caught.
 */
import { sha256 } from './tree.js'

export interface StoredObject {
  hash: string
  /** When the store first held it (for retention: a young object is never collected). */
  createdAt: Date
}

export interface ObjectStore {
  /** `postgres` or `s3://bucket/prefix`, for messages and the audit. */
  readonly name: string
  /** The hashes of `hashes` the store does not hold. */
  missing(hashes: readonly string[]): Promise<string[]>
  /** Writes objects; writing one the store holds already changes nothing. */
  put(objects: ReadonlyArray<{ hash: string; data: Buffer }>): Promise<void>
  /**
   * Where the store can tell in the same request: writes objects and returns the hashes it did not hold
   * before (one round trip instead of `missing` then `put`, for uploads small enough to send blind).
   */
  putNew?(objects: ReadonlyArray<{ hash: string; data: Buffer }>): Promise<string[]>
  /** The objects asked for, each checked against its name; a missing one is an error naming it. */
  get(hashes: readonly string[]): Promise<Map<string, Buffer>>
  /**
   * `get` without the check, for a caller that checks each object itself before it uses it (a restore's
   * writers do, off the main thread); the bytes may be ranges of shared memory, which writers read in place.
   */
  getUnchecked?(hashes: readonly string[]): Promise<Map<string, Buffer>>
  /** Every object, for retention. */
  list(): AsyncIterable<StoredObject>
  delete(hashes: readonly string[]): Promise<void>
}

export class SnapshotStoreError extends Error {
  override name = 'SnapshotStoreError'
}

/** Checks an object read from `store` against its name. */
export function checked(store: string, hash: string, data: Buffer): Buffer {
  if (sha256(data) !== hash) {
    throw new SnapshotStoreError(
      `the snapshot store ${store} returned object ${hash.slice(0, 12)}… with other content than its name says; the store is damaged`,
    )
  }
  return data
}

/** Checks every object of `objects`, read from `store`, against its name. */
export function checkedAll(store: string, objects: Map<string, Buffer>): Map<string, Buffer> {
  for (const [hash, data] of objects) checked(store, hash, data)
  return objects
}

/** Runs `work` over `items` with at most `limit` at once. */
export async function inParallel<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++] as T)
  })
  await Promise.all(lanes)
}
