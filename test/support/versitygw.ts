/**
 * A real S3-compatible object store for the snapshot tests: versitygw (its `posix` backend: objects are files
 * in a folder) on a loopback port. The binary is built once per user with `go install` into the per-user
 * cache beside the Temporal CLI (`~/.cache/tether/bin/versitygw`); a lock file makes a second first use wait
 * for the first build instead of building again.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, open, rename, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { temporalCacheDir } from '../../src/stack/index.js'
import { freePort } from '../../src/stack/process.js'

export const VERSITYGW_VERSION = '1.8.0'
const PACKAGE = `github.com/versity/versitygw/cmd/versitygw@v${VERSITYGW_VERSION}`
/** A build older than this lock's holder would have finished is taken as dead. */
const STALE_LOCK_MS = 20 * 60_000

/** The cached binary, built first if it is not there yet. */
export async function ensureVersitygw(log: (line: string) => void = () => {}): Promise<string> {
  const dir = temporalCacheDir()
  const binary = join(dir, 'versitygw')
  if (existsSync(binary)) return binary
  await mkdir(dir, { recursive: true })
  const lock = join(dir, '.versitygw.lock')
  for (;;) {
    try {
      const handle = await open(lock, 'wx')
      await handle.close()
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      if (existsSync(binary)) return binary
      const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs
      if (age > STALE_LOCK_MS) await rm(lock, { force: true })
      else await sleep(1_000)
    }
  }
  try {
    if (existsSync(binary)) return binary
    const work = await mkdtemp(join(dir, '.versitygw-'))
    try {
      log(`building versitygw ${VERSITYGW_VERSION} with \`go install ${PACKAGE}\` (about a minute)…`)
      const built = spawnSync('go', ['install', PACKAGE], {
        env: { ...process.env, GOBIN: work, GOFLAGS: '-mod=mod' },
        cwd: tmpdir(),
        encoding: 'utf8',
        timeout: 15 * 60_000,
      })
      if (built.status !== 0) {
        throw new Error(
          `could not build versitygw (go install ${PACKAGE}): ${(built.stderr || built.error?.message || '').trim().split('\n').slice(-3).join(' | ')}; install Go, or put a versitygw ${VERSITYGW_VERSION} binary at ${binary}`,
        )
      }
      await rename(join(work, 'versitygw'), binary)
    } finally {
      await rm(work, { recursive: true, force: true })
    }
    return binary
  } finally {
    await rm(lock, { force: true })
  }
}

export interface Versitygw {
  endpoint: string
  bucket: string
  credentials: { accessKeyId: string; secretAccessKey: string }
  stop(): Promise<void>
}

/** versitygw on 127.0.0.1 over a fresh folder, with one bucket made. */
export async function startVersitygw(bucket = 'tether-snapshots'): Promise<Versitygw> {
  const binary = await ensureVersitygw((line) => console.log(`[versitygw] ${line}`))
  const root = await mkdtemp(join(tmpdir(), 'tether-s3-'))
  const port = await freePort()
  const credentials = { accessKeyId: 'tetheraccess', secretAccessKey: 'tethersecret-for-tests-only' }
  const child: ChildProcess = spawn(binary, ['--port', `127.0.0.1:${port}`, 'posix', root], {
    env: {
      ...process.env,
      ROOT_ACCESS_KEY: credentials.accessKeyId,
      ROOT_SECRET_KEY: credentials.secretAccessKey,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000)
  })
  const endpoint = `http://127.0.0.1:${port}`
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials })
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await new Promise((resolve) => child.once('exit', resolve))
    }
    client.destroy()
    await rm(root, { recursive: true, force: true })
  }
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      await client.send(new CreateBucketCommand({ Bucket: bucket }))
      break
    } catch (error) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await stop()
        throw new Error(
          `versitygw did not start on ${endpoint}: ${(error as Error).message} ${stderr.trim()}`,
        )
      }
      await sleep(200)
    }
  }
  return { endpoint, bucket, credentials, stop }
}
