/**
 * Snapshot objects in any S3-compatible object store (AWS S3, versitygw, MinIO, …): one object per hash
 * under a prefix of a bucket. Objects are immutable and named by their content, so a repeated write is
 * harmless and a read is checked against its name.
 */
import type { S3Client } from '@aws-sdk/client-s3'
import { checkedAll, inParallel, type ObjectStore, SnapshotStoreError, type StoredObject } from './store.js'
import { missingObjects } from './store-postgres.js'

export interface S3Location {
  bucket: string
  /** Key prefix, e.g. `tether/` (may be empty). */
  prefix: string
  /** The server, for S3-compatible stores (`http://127.0.0.1:7070`); unset: AWS. */
  endpoint?: string | undefined
  region?: string | undefined
  /** Unset: the AWS SDK's usual chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, profiles, roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string } | undefined
}

/** Requests in flight at once: small objects are latency-bound. */
const CONCURRENCY = 32

/**
 * The AWS SDK and a client, loaded at the store's first request: the SDK takes 100 ms and more to load, and
 * most processes that open the audit (every CLI command) never touch the store.
 */
function lazyClient(location: S3Location) {
  let loading: Promise<{ client: S3Client; sdk: typeof import('@aws-sdk/client-s3') }> | undefined
  return () => {
    loading ??= import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      client: new sdk.S3Client({
        region: location.region ?? 'us-east-1',
        ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
        ...(location.credentials ? { credentials: location.credentials } : {}),
        // Content is checked by its SHA-256 name on every read; S3-compatible servers differ in which extra
        // checksums they accept.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      }),
    }))
    return loading
  }
}

export function s3Store(location: S3Location): ObjectStore {
  const s3 = lazyClient(location)
  const { bucket, prefix } = location
  const name = `s3://${bucket}/${prefix}`
  const key = (hash: string) => `${prefix}${hash}`
  const fail = (what: string, error: unknown) =>
    new SnapshotStoreError(`the snapshot store ${name} failed to ${what}: ${(error as Error).message}`)

  async function getUnchecked(hashes: readonly string[]): Promise<Map<string, Buffer>> {
    const { client, sdk } = await s3()
    const found = new Map<string, Buffer>()
    const absent: string[] = []
    await inParallel([...new Set(hashes)], CONCURRENCY, async (hash) => {
      try {
        const reply = await client.send(new sdk.GetObjectCommand({ Bucket: bucket, Key: key(hash) }))
        const bytes = (await reply.Body?.transformToByteArray()) ?? new Uint8Array()
        // A view of the bytes the SDK gathered, not a copy of them.
        found.set(hash, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
      } catch (error) {
        if (notFound(error)) absent.push(hash)
        else throw fail(`read ${hash.slice(0, 12)}…`, error)
      }
    })
    if (absent.length > 0) throw missingObjects(name, absent)
    return found
  }

  return {
    name,
    async missing(hashes) {
      const { client, sdk } = await s3()
      const missing: string[] = []
      await inParallel(hashes, CONCURRENCY, async (hash) => {
        try {
          await client.send(new sdk.HeadObjectCommand({ Bucket: bucket, Key: key(hash) }))
        } catch (error) {
          if (notFound(error)) missing.push(hash)
          else throw fail(`look for ${hash.slice(0, 12)}…`, error)
        }
      })
      return missing
    },

    async put(objects) {
      const { client, sdk } = await s3()
      await inParallel(objects, CONCURRENCY, async ({ hash, data }) => {
        try {
          await client.send(new sdk.PutObjectCommand({ Bucket: bucket, Key: key(hash), Body: data }))
        } catch (error) {
          throw fail(`write ${hash.slice(0, 12)}…`, error)
        }
      })
    },

    async get(hashes) {
      return checkedAll(name, await getUnchecked(hashes))
    },

    getUnchecked,

    async *list(): AsyncIterable<StoredObject> {
      const { client, sdk } = await s3()
      let token: string | undefined
      do {
        const page = await client.send(
          new sdk.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
        )
        for (const object of page.Contents ?? []) {
          const hash = object.Key?.slice(prefix.length) ?? ''
          if (/^[0-9a-f]{64}$/.test(hash)) yield { hash, createdAt: object.LastModified ?? new Date(0) }
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined
      } while (token)
    },

    async delete(hashes) {
      const { client, sdk } = await s3()
      for (let i = 0; i < hashes.length; i += 1000) {
        const batch = hashes.slice(i, i + 1000)
        const reply = await client.send(
          new sdk.DeleteObjectsCommand({
            Bucket: bucket,
            Delete: { Objects: batch.map((hash) => ({ Key: key(hash) })), Quiet: true },
          }),
        )
        if (reply.Errors?.length) throw fail('delete objects', new Error(reply.Errors[0]?.Message ?? 'error'))
      }
    },
  }
}

function notFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } }
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404
}
