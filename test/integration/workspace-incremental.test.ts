/**
 * Incremental snapshots against the real PostgreSQL store: what a worker remembers between scans never
 * leaves an object out of the store — not after a scan that was only compared, not after a collection.
 */

import { randomBytes } from 'node:crypto'
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { AuditStore, AuditWrites } from '../../src/audit/index.js'
import { type ObjectStore, postgresStore, sha256, WorkspaceSnapshots } from '../../src/snapshots/index.js'
import { openTestAudit } from '../support/agent.js'

let audit: AuditStore
const folders: string[] = []
const nothing = { key: 'none', excluded: () => false }

beforeAll(async () => {
  audit = await openTestAudit()
})

afterAll(async () => {
  await audit?.close()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

const settle = () => new Promise((resolve) => setTimeout(resolve, 2_100))

async function setUp() {
  const runId = `incremental-${Math.random().toString(36).slice(2)}`
  await audit.pool.query(
    `insert into runs (run_id, goal, workspace, contract, policy, started_at) values ($1, 'g', '/w', '{}', '{}', now())`,
    [runId],
  )
  const root = mkdtempSync(join(tmpdir(), 'tether-incremental-'))
  folders.push(root)
  mkdirSync(join(root, 'src'))
  const salt = Math.random().toString(36)
  writeFileSync(join(root, 'src/a.txt'), `${salt} a`)
  writeFileSync(join(root, 'b.txt'), `${salt} b`)
  await settle()
  return { runId, root, salt, snapshots: new WorkspaceSnapshots(postgresStore(audit.pool), audit.pool) }
}

/** What a collection may do to an object a worker took for stored: delete it, and move the generation. */
async function collect(hash: string) {
  await audit.pool.query('delete from snapshot_objects where hash = $1', [hash])
  await audit.pool.query(
    `insert into snapshot_collections (id, generation, ran_at) values (1, 1, now())
     on conflict (id) do update set generation = snapshot_collections.generation + 1`,
  )
}

async function restored(snapshots: WorkspaceSnapshots, root: string): Promise<string> {
  const parent = mkdtempSync(join(tmpdir(), 'tether-incremental-restore-'))
  folders.push(parent)
  const into = join(parent, 'ws')
  await snapshots.restore(root, into, nothing)
  return into
}

describe('an incremental snapshot', () => {
  it('stores a change that a scan saw first and only compared', async () => {
    const { runId, root, salt, snapshots } = await setUp()
    await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing)
    writeFileSync(join(root, 'src/a.txt'), `${salt} edited by hand`)
    // Old enough not to be read again: the second scan knows the file by its stat alone.
    await settle()
    const compared = await snapshots.scan(root, nothing)
    const taken = await snapshots.take({ runId, step: 1, call: 0, kind: 'tool' }, root, nothing)
    expect(taken.root).toBe(compared.root)
    expect(taken.scan.hashed).toBe(0)
    const into = await restored(snapshots, taken.root)
    expect(await readFile(join(into, 'src/a.txt'), 'utf8')).toBe(`${salt} edited by hand`)
  })

  it('checks every object again after a collection, and puts back what it deleted', async () => {
    const { runId, root, salt, snapshots } = await setUp()
    const first = await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing)
    await collect(sha256(`${salt} b`))
    const again = await snapshots.take({ runId, step: 1, call: 0, kind: 'tool' }, root, nothing)
    expect(again.root).toBe(first.root)
    expect(again.row.newObjects).toBe(1)
    const into = await restored(snapshots, again.root)
    expect(await readFile(join(into, 'b.txt'), 'utf8')).toBe(`${salt} b`)
  })

  it.each([
    ['on its own', false],
    ['in its caller’s commit, rolling back the caller’s rows with it', true],
  ])('notices a collection that ran while it uploaded, and takes the tree again: %s', async (_, inCommit) => {
    const { runId, root, salt, snapshots: first } = await setUp()
    await first.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing)
    writeFileSync(join(root, 'src/a.txt'), `${salt} changed`)
    // The store as another worker's collection meets it: after this worker read the generation, before its
    // upload was recorded.
    const real = postgresStore(audit.pool)
    let collected = false
    const collectOnce = async () => {
      if (collected) return
      collected = true
      await collect(sha256(`${salt} b`))
    }
    // A small upload asks nothing first (`putNew`); a large one asks `missing`: either meets the collection,
    // which deletes what the upload took for stored.
    const racing: ObjectStore = {
      ...real,
      async missing(hashes) {
        const missing = await real.missing(hashes)
        await collectOnce()
        return missing
      },
      async putNew(objects) {
        const fresh = await (real.putNew as NonNullable<ObjectStore['putNew']>)(objects)
        await collectOnce()
        return fresh
      },
    }
    const snapshots = new WorkspaceSnapshots(racing, audit.pool)
    // In a caller's commit (as a command's result is recorded), its row goes out with the lock and the
    // caller's own rows: the stale attempt's are all rolled back, and the second attempt's written once.
    const commit = inCommit
      ? async (snapshot: (tx: AuditWrites) => Promise<void>) => {
          await audit.together('test', (writes) =>
            Promise.all([
              writes.appendMessages(runId, 0, [{ role: 'user', content: 'goal' }]),
              snapshot(writes),
            ]),
          )
        }
      : undefined
    await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing, undefined, { commit })
    expect(collected).toBe(true)
    if (inCommit) {
      const counts = await audit.pool.query<{ messages: number; rows: number }>(
        `select (select count(*)::int from messages where run_id = $1) as messages,
                (select count(*)::int from workspace_snapshots where run_id = $1) as rows`,
        [runId],
      )
      expect(counts.rows[0]).toEqual({ messages: 1, rows: 1 })
    }
    const into = await restored(snapshots, (await first.scan(root, nothing)).root)
    expect(await readFile(join(into, 'b.txt'), 'utf8')).toBe(`${salt} b`)
  })
})

describe('a file swapped while the scan reads it', () => {
  it('is taken again, once, as it is now: a scan never reads through what took its place', async () => {
    const { runId, root, snapshots } = await setUp()
    const secret = join(root, '..', `${basename(root)}-secret`)
    folders.push(secret)
    writeFileSync(secret, 'not the workspace')
    // Asked about b.txt after its stat and before its read (the exclusion comes first): b.txt becomes a link.
    let swaps = 0
    const swapping = {
      key: 'swap',
      excluded: (rel: string) => {
        if (rel === 'b.txt' && swaps === 0) {
          swaps += 1
          rmSync(join(root, 'b.txt'))
          symlinkSync(secret, join(root, 'b.txt'))
        }
        return false
      },
    }
    const taken = await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, swapping)
    expect(swaps).toBe(1)
    const into = await restored(snapshots, taken.root)
    expect(readlinkSync(join(into, 'b.txt'))).toBe(secret)
    expect(taken.row.files).toBe(2)
  })
})

describe('snapshots taken at once', () => {
  it('never wait on each other for the pool: as many at once as it has connections', async () => {
    const pool = new pg.Pool({
      connectionString: inject('databaseUrl'),
      max: 2,
      connectionTimeoutMillis: 5_000,
    })
    try {
      const snapshots = new WorkspaceSnapshots(postgresStore(pool), pool)
      const runs = await Promise.all([setUp(), setUp()])
      const taken = await Promise.all(
        runs.map(({ runId, root }) =>
          snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing),
        ),
      )
      expect(taken.map((t) => t.row.newObjects)).toEqual([expect.any(Number), expect.any(Number)])
      expect(Math.min(...taken.map((t) => t.row.newObjects))).toBeGreaterThan(0)
    } finally {
      await pool.end()
    }
  })
})

describe('a restore', () => {
  it('lays out every mode, empty file, link and folder exactly, many files at once', async () => {
    const { runId, root, snapshots } = await setUp()
    // Modes the umask takes bits from (0o777, 0o666) and ones it does not; binary content; more files
    // than are written at once.
    const modes = [0o777, 0o666, 0o644, 0o600, 0o444, 0o755]
    for (let i = 0; i < 60; i++) {
      const path = join(root, 'src', `f${i}.bin`)
      writeFileSync(path, randomBytes(i * 97))
      chmodSync(path, modes[i % modes.length] as number)
    }
    symlinkSync('f1.bin', join(root, 'src/link'))
    mkdirSync(join(root, 'empty'))
    chmodSync(join(root, 'empty'), 0o750)
    const taken = await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing)
    // The restore checks the tree's root hash, modes and links included, before it returns.
    const into = await restored(new WorkspaceSnapshots(postgresStore(audit.pool), audit.pool), taken.root)
    for (let i = 0; i < 60; i++) {
      const name = `src/f${i}.bin`
      expect(lstatSync(join(into, name)).mode & 0o777, name).toBe(modes[i % modes.length])
      expect(await readFile(join(into, name)), name).toEqual(await readFile(join(root, name)))
    }
    expect(readlinkSync(join(into, 'src/link'))).toBe('f1.bin')
    expect(lstatSync(join(into, 'empty')).mode & 0o777).toBe(0o750)
  })

  it('is moved into place whole: the next scans know every file there, and see a change deep inside', async () => {
    const { runId, root, snapshots } = await setUp()
    mkdirSync(join(root, 'src/deep/er'), { recursive: true })
    writeFileSync(join(root, 'src/deep/er/c.txt'), 'c')
    const taken = await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing)
    const worker = new WorkspaceSnapshots(postgresStore(audit.pool), audit.pool)
    const into = await restored(worker, taken.root)
    expect(readdirSync(dirname(into))).toEqual(['ws'])
    // The root's mode is no part of a tree: it gets a new folder's.
    expect(lstatSync(into).mode & 0o777).toBe(0o777 & ~process.umask())
    await settle()
    const again = await worker.scan(into, nothing)
    expect(again.root).toBe(taken.root)
    expect(again.hashed).toBe(0)
    writeFileSync(join(into, 'src/deep/er/c.txt'), 'changed')
    const changed = await worker.take({ runId, step: 1, call: 0, kind: 'tool' }, into, nothing)
    expect(changed.scan.hashed).toBe(1)
    expect(await worker.diff(taken.root, changed.root)).toMatchObject([
      { change: 'M', path: 'src/deep/er/c.txt' },
    ])
  })

  it('that fails part way leaves nothing where the workspace goes, nor beside it', async () => {
    const { runId, root, salt, snapshots } = await setUp()
    for (let i = 0; i < 50; i++) writeFileSync(join(root, 'src', `f${i}.txt`), `${salt} ${i}`)
    const taken = await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, nothing)
    await audit.pool.query(`update snapshot_objects set data = 'damaged'::bytea where hash = $1`, [
      sha256(`${salt} 7`),
    ])
    const parent = mkdtempSync(join(tmpdir(), 'tether-incremental-restore-'))
    folders.push(parent)
    const into = join(parent, 'ws')
    await expect(
      new WorkspaceSnapshots(postgresStore(audit.pool), audit.pool).restore(taken.root, into, nothing),
    ).rejects.toThrow(/other content than its name says/)
    expect(readdirSync(parent)).toEqual([])
  })
})
