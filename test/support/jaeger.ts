/**
 * Jaeger v2 for the tracing tests: a real OpenTelemetry collector and trace store with a query API. Built
 * once per user from the Go module proxy into the per-user cache beside the Temporal CLI
 * (`$XDG_CACHE_HOME/tether/bin`, default `~/.cache/tether/bin`), under a lock so two first uses do not build
 * twice. `go install` refuses the module (it has `replace` directives), so it is built in a scratch module
 * that requires it as a tool. Each test starts its own Jaeger on free loopback ports, from a config file:
 * with no config it would listen on every interface.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, open, rename, rm, stat, unlink, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from '../../src/stack/process.js'

const run = promisify(execFile)

export const JAEGER_VERSION = '1.76.0'
const MODULE = 'github.com/jaegertracing/jaeger'

function cacheDir(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tether', 'bin')
}

/** The cached Jaeger binary, built on first use (about 3 minutes; the lock makes a second caller wait). */
export async function jaegerBinary(): Promise<string> {
  const dir = cacheDir()
  const binary = join(dir, `jaeger-${JAEGER_VERSION}`)
  if (existsSync(binary)) return binary
  await mkdir(dir, { recursive: true })
  const lock = join(dir, `jaeger-${JAEGER_VERSION}.lock`)
  const release = await acquire(lock)
  try {
    if (existsSync(binary)) return binary
    const work = await mkdtemp(join(dir, '.jaeger-build-'))
    try {
      const env = { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'auto' }
      const go = async (args: string[]) => {
        try {
          await run('go', args, { cwd: work, env, maxBuffer: 64 * 1024 * 1024 })
        } catch (error) {
          const stderr = String((error as { stderr?: string }).stderr ?? (error as Error).message)
          throw new Error(
            `building Jaeger ${JAEGER_VERSION} failed at \`go ${args.join(' ')}\`: ${stderr.trim().split('\n').slice(-3).join(' | ')}; the tracing tests need Go and the module proxy`,
          )
        }
      }
      await go(['mod', 'init', 'tether.test/jaeger'])
      await go(['get', '-tool', `${MODULE}/cmd/jaeger@v${JAEGER_VERSION}`])
      await go(['build', '-o', join(work, 'jaeger'), `${MODULE}/cmd/jaeger`])
      await rename(join(work, 'jaeger'), binary)
    } finally {
      await rm(work, { recursive: true, force: true })
    }
    return binary
  } finally {
    await release()
  }
}

/** An exclusive lock file; a lock older than the longest build is left over from a killed build. */
async function acquire(path: string): Promise<() => Promise<void>> {
  const stale = 20 * 60_000
  for (;;) {
    try {
      const handle = await open(path, 'wx')
      await handle.writeFile(`${process.pid}\n`)
      await handle.close()
      return () => unlink(path).catch(() => {})
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const age = await stat(path).then(
        (info) => Date.now() - info.mtimeMs,
        () => 0,
      )
      if (age > stale) await unlink(path).catch(() => {})
      else await new Promise((resolve) => setTimeout(resolve, 2_000))
    }
  }
}

export interface Jaeger {
  /** `http://127.0.0.1:PORT`: where OTLP over HTTP goes (`/v1/traces`). */
  otlpHttp: string
  /** `http://127.0.0.1:PORT`: the query API (`/api/traces`, `/api/services`). */
  query: string
  stop(): Promise<void>
}

/**
 * A Jaeger on loopback only: OTLP/HTTP and the query API on free ports, OTLP/gRPC too (Jaeger's receiver
 * wants it), spans kept in memory.
 */
export async function startJaeger(): Promise<Jaeger> {
  const binary = await jaegerBinary()
  const [http, grpc, query, metrics] = await Promise.all([freePort(), freePort(), freePort(), freePort()])
  const dir = await mkdtemp(join(tmpdir(), 'tether-jaeger-'))
  const config = join(dir, 'config.yaml')
  await writeFile(config, jaegerConfig({ http, grpc, query, metrics }))
  const child = spawn(binary, ['--config', `file:${config}`], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-8_000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const queryUrl = `http://127.0.0.1:${query}`
  const deadline = Date.now() + 60_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`jaeger exited (${child.exitCode}): ${output.slice(-1_000)}`)
    const ready = await fetch(`${queryUrl}/api/services`).then(
      (response) => response.ok,
      () => false,
    )
    if (ready) break
    if (Date.now() > deadline) {
      await stop(child)
      throw new Error(`jaeger did not answer on ${queryUrl} within 60 s: ${output.slice(-1_000)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return {
    otlpHttp: `http://127.0.0.1:${http}`,
    query: queryUrl,
    stop: async () => {
      await stop(child)
      await rm(dir, { recursive: true, force: true })
    },
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.pid === undefined) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
  await exited
  clearTimeout(timer)
}

/** Jaeger v2's all-in-one shape (receiver → batch → memory store, query on it), every port on 127.0.0.1. */
function jaegerConfig(ports: { http: number; grpc: number; query: number; metrics: number }): string {
  return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn

extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${ports.query}
    grpc:
      endpoint: 127.0.0.1:${ports.metrics}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:${ports.grpc}
      http:
        endpoint: 127.0.0.1:${ports.http}

processors:
  batch:
    timeout: 100ms

exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`
}

/** One trace as the query API returns it (Jaeger's JSON model). */
export interface JaegerTrace {
  traceID: string
  spans: Array<{
    traceID: string
    spanID: string
    operationName: string
    references: Array<{ refType: string; traceID: string; spanID: string }>
    tags: Array<{ key: string; type: string; value: unknown }>
    processID: string
  }>
  processes: Record<string, { serviceName: string; tags: Array<{ key: string; value: unknown }> }>
}

/** The traces of `service` in the last hour (up to `limit`), as the query API returns them. */
export async function findTraces(jaeger: Jaeger, service: string, limit = 100): Promise<JaegerTrace[]> {
  const url = `${jaeger.query}/api/traces?service=${encodeURIComponent(service)}&lookback=1h&limit=${limit}`
  const response = await fetch(url)
  if (!response.ok) throw new Error(`jaeger query ${url}: HTTP ${response.status}`)
  const body = (await response.json()) as { data: JaegerTrace[] | null }
  return body.data ?? []
}
