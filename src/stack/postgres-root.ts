/**
 * The embedded PostgreSQL when tether runs as root (containers, CI runners). PostgreSQL refuses to run as
 * root, so the server runs as the `postgres` user — and that user usually cannot enter the folders tether
 * was given: a checkout in `/root` or in a `mktemp -d` folder sits behind a mode-700 folder. Rather than open
 * the user's folders, the server gets a folder of its own that the `postgres` user can reach:
 *
 *     /var/lib/tether/postgres-<hash of the data folder's path>/   root, 0755
 *       origin     the data folder it serves (a folder whose data folder is gone is deleted later)
 *       data/      postgres, 0700: the cluster; the requested data folder becomes a link to it
 *       native/    the server binaries, hard-linked (or copied) from node_modules, only when the `postgres`
 *                  user cannot run them where they are
 *
 * An ephemeral stack deletes that folder with its state folder (see `embeddedPostgresFolders`); one left
 * behind by a deleted state folder is swept when the next new data folder is placed. A data folder that
 * already exists as a real folder is used where it is.
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmod,
  chown,
  copyFile,
  link,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises'
import { userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'

/** Where the server folders of a root tether go. */
export const ROOT_SERVER_ROOT = '/var/lib/tether'

export interface ServerOwner {
  uid: number
  gid: number
}

export interface PostgresBinaries {
  postgres: string
  initdb: string
}

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError'
}

/** Whether the server runs as the `postgres` user, in a server folder of its own. */
export function runsAsPostgresUser(): boolean {
  return userInfo().uid === 0
}

/** The user the server runs as (created when missing): undefined when we are not root (it runs as us). */
export function serverOwner(): ServerOwner | undefined {
  if (!runsAsPostgresUser()) return undefined
  const lookup = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
  })
  try {
    return lookup()
  } catch {
    try {
      execFileSync('groupadd', ['-f', 'postgres'], { stdio: 'ignore' })
      execFileSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres'], {
        stdio: 'ignore',
      })
      return lookup()
    } catch (error) {
      throw new EmbeddedPostgresError(
        `running as root, PostgreSQL needs a 'postgres' user and creating it failed (${firstLine(error)}); ` +
          'create that user (useradd postgres), run tether as another user, or set DATABASE_URL to an existing server',
      )
    }
  }
}

/** The server folder that serves `dataDir` as root (whether or not it exists yet). */
export function serverFolder(dataDir: string, serverRoot = ROOT_SERVER_ROOT): string {
  const hash = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16)
  return join(serverRoot, `postgres-${hash}`)
}

/**
 * The data folder the server is given (`-D`) as root: the requested one when it exists as a folder (or a
 * link to one); otherwise a fresh `data/` in the server folder, linked from `dataDir`.
 */
export async function placeDataFolder(
  dataDir: string,
  owner: ServerOwner,
  serverRoot: string,
): Promise<string> {
  const existing = await realpath(dataDir).catch(() => undefined)
  if (existing && (await stat(existing)).isDirectory()) {
    if (!canReach(owner, existing)) {
      throw new EmbeddedPostgresError(
        `PostgreSQL runs as the 'postgres' user, which cannot reach its data folder ${existing}; ` +
          'delete that folder so tether can place a new one where that user can reach it, or set DATABASE_URL',
      )
    }
    return existing
  }
  await sweepOrphans(serverRoot)
  const home = await serverHome(dataDir, serverRoot)
  const data = join(home, 'data')
  // No folder behind the link: whatever an earlier state folder left here belongs to nobody now.
  await rm(data, { recursive: true, force: true })
  await mkdir(data, { mode: 0o700 })
  await chown(data, owner.uid, owner.gid)
  await chmod(data, 0o700)
  await mkdir(dirname(dataDir), { recursive: true })
  await rm(dataDir, { force: true })
  await symlink(data, dataDir)
  if (!canReach(owner, data)) {
    throw new EmbeddedPostgresError(
      `PostgreSQL runs as the 'postgres' user, which cannot reach ${data} (a folder above it is closed to other users); ` +
        'make the folders above it traversable, or set DATABASE_URL',
    )
  }
  return data
}

/**
 * Binaries the `postgres` user can run: those in node_modules when it can reach them, else a linked (or
 * copied) tree of them in the server folder.
 */
export async function reachableBinaries(
  installed: PostgresBinaries,
  dataDir: string,
  owner: ServerOwner,
  serverRoot: string,
): Promise<PostgresBinaries> {
  if (canRun(owner, installed.postgres)) return installed
  const source = dirname(dirname(installed.postgres))
  const tree = join(await serverHome(dataDir, serverRoot), 'native')
  await rm(tree, { recursive: true, force: true })
  await shareTree(source, tree)
  const placed = {
    postgres: join(tree, 'bin', 'postgres'),
    initdb: join(tree, 'bin', 'initdb'),
  }
  if (!canRun(owner, placed.postgres)) {
    throw new EmbeddedPostgresError(
      `PostgreSQL runs as the 'postgres' user, which cannot run ${placed.postgres}; ` +
        'make the folders above it traversable, or set DATABASE_URL',
    )
  }
  return placed
}

/** Creates the server folder (root, 0755, under a root-owned 0755 `serverRoot`) and notes whom it serves. */
async function serverHome(dataDir: string, serverRoot: string): Promise<string> {
  const home = serverFolder(dataDir, serverRoot)
  try {
    for (const folder of [serverRoot, home]) {
      await mkdir(folder, { recursive: true, mode: 0o755 })
      const info = await lstat(folder)
      if (!info.isDirectory() || info.uid !== 0) throw new Error(`${folder} is not a folder owned by root`)
      // mkdir's mode is filtered by the umask; the server user must be able to enter.
      await chmod(folder, 0o755)
    }
    await writeFile(join(home, 'origin'), `${resolve(dataDir)}\n`, { mode: 0o644 })
  } catch (error) {
    throw new EmbeddedPostgresError(
      `running as root, PostgreSQL needs a folder the 'postgres' user can reach, and preparing ${home} failed ` +
        `(${firstLine(error)}); make ${serverRoot} writable, or set DATABASE_URL to an existing server`,
    )
  }
  return home
}

/**
 * Deletes the server folders whose data folder is gone (the checkout or temporary folder that linked to
 * them was deleted): nothing can reach their data any more. Left alone: a folder whose data folder path
 * still exists, one with a server's pid file, and one touched in the last minute (it may be being placed).
 */
async function sweepOrphans(serverRoot: string): Promise<void> {
  const names = await readdir(serverRoot).catch(() => [] as string[])
  for (const name of names.filter((n) => n.startsWith('postgres-'))) {
    const home = join(serverRoot, name)
    try {
      const origin = (await readFile(join(home, 'origin'), 'utf8')).trim()
      const kept =
        (await exists(origin)) ||
        (await exists(join(home, 'data', 'postmaster.pid'))) ||
        Date.now() - (await stat(home)).mtimeMs < 60_000
      if (!kept) await rm(home, { recursive: true, force: true })
    } catch {
      // A folder we cannot judge stays.
    }
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  )
}

/**
 * Mirrors `source` into `target`: folders 0755, links as links, files hard-linked when the server user may
 * already read (and run) them, else copied with those rights added to the copy — never to the original.
 */
async function shareTree(source: string, target: string): Promise<void> {
  await mkdir(target, { mode: 0o755 })
  await chmod(target, 0o755)
  for (const entry of await readdir(source, { withFileTypes: true })) {
    const from = join(source, entry.name)
    const to = join(target, entry.name)
    if (entry.isDirectory()) {
      await shareTree(from, to)
    } else if (entry.isSymbolicLink()) {
      await symlink(await readlink(from), to)
    } else if (entry.isFile()) {
      const { mode } = await stat(from)
      const executable = (mode & 0o100) !== 0
      const open = (mode & 0o004) !== 0 && (!executable || (mode & 0o001) !== 0)
      if (
        open &&
        (await link(from, to).then(
          () => true,
          () => false,
        ))
      ) {
        continue
      }
      await copyFile(from, to)
      await chmod(to, executable ? 0o755 : 0o644)
    }
  }
}

/** Whether `owner` can enter `folder` (the kernel decides, ACLs included). */
function canReach(owner: ServerOwner, folder: string): boolean {
  return spawnSync('test', ['-x', folder], { ...owner, cwd: '/', stdio: 'ignore' }).status === 0
}

function canRun(owner: ServerOwner, program: string): boolean {
  return spawnSync(program, ['--version'], { ...owner, cwd: '/', stdio: 'ignore' }).status === 0
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
}
