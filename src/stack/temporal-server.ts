/**
 * Starts `temporal server start-dev` and waits until it answers. We start it ourselves (rather than through
 * the SDK's ephemeral-server launcher) because that launcher gives up after a fixed 5 s, which a busy
 * two-core machine regularly exceeds.
 */
import { spawn } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { freePort, sleep, stopProcess } from './process.js'

/** The search attribute that marks runs waiting for a human. */
export const PENDING_APPROVAL_ATTRIBUTE = 'TetherPendingApproval'
/** The search attributes tether sets, all Keyword: waiting for a person, the outcome, the workspace. */
export const TETHER_SEARCH_ATTRIBUTES = [
  PENDING_APPROVAL_ATTRIBUTE,
  'TetherOutcome',
  'TetherWorkspace',
] as const

/**
 * How every local Temporal server tether starts is tuned (`tether dev`, the demo, the tests, the benches).
 * The dev server runs one history shard with defaults sized for a cluster of many: as it ships, one remote
 * activity costs ~80 ms and a 1 ms timer fires after ~1 s; tuned, ~11 ms and ~35 ms on a busy 2-core
 * machine (`npx tsx bench/temporal.ts` measures both side by side).
 * docs/temporal.md says which of these matter on a production server.
 */
export const LOCAL_TEMPORAL_TUNING = {
  dynamicConfig: {
    // The transfer queue (activity dispatch, the next workflow task) is read at most this often per shard;
    // the default 20/s on the single shard puts ~50 ms between a step's commands.
    'history.transferProcessorMaxPollRPS': 10_000,
    // A workflow task that schedules an activity gets it back in its completion when the same worker polls
    // that task queue: no matching round trip.
    'system.enableActivityEagerExecution': true,
    // A timer is due no sooner than this after it is created: the default 1 s makes a short timer (an
    // activity retry's backoff, a brief sleep) fire up to 1 s late.
    'history.timerProcessorMaxTimeShift': '10ms',
    // Tasks with fairness keys (each run's, or its tenant's) are dispatched in turn, not first come first
    // served: under overload no run waits behind a burst of another's tasks (embed/client.ts runPriority).
    'matching.enableFairness': true,
  },
  sqlitePragmas: {
    // Appends to a log instead of rewriting pages, and readers no longer wait for the writer.
    journal_mode: 'wal',
    // With WAL, fsync at checkpoints only: a power cut may lose the last transactions, which a
    // development server can afford (a crash of the server process loses nothing).
    synchronous: 'normal',
  },
} as const

export interface DevServerOptions {
  cliPath: string
  /** SQLite file for the server's state; survives restarts of the server. */
  dbFilename: string
  /** gRPC port; a free one when unset. */
  port?: number
  namespace?: string
  /** Serve the Temporal Web UI (on `uiPort`, default gRPC port + 1000). Headless when false. */
  ui?: boolean
  uiPort?: number
  /** Extra `--dynamic-config-value` entries, e.g. a low continue-as-new threshold for tests. */
  dynamicConfig?: Record<string, string | number | boolean>
  /** Apply LOCAL_TEMPORAL_TUNING (default); false runs the CLI's own defaults, for comparison. */
  tuned?: boolean
  /** How long to wait for the server to answer (default 60 s). */
  readyTimeoutMs?: number
  /** Where the server's own output goes (default: next to the SQLite file, `<dbFilename>.log`). */
  logFile?: string
  log?: (line: string) => void
}

export interface DevServer {
  address: string
  namespace: string
  pid: number
  uiUrl?: string
  stop(): Promise<void>
}

export class DevServerStartError extends Error {
  override name = 'DevServerStartError'
}

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  // A port chosen by the OS can be taken by someone else before the server binds it; retry then.
  const attempts = options.port ? 1 : 3
  let lastError: unknown
  for (let i = 0; i < attempts; i++) {
    const port = options.port ?? (await freePort())
    try {
      return await startOnPort(options, port)
    } catch (error) {
      lastError = error
      if (
        !(
          error instanceof DevServerStartError &&
          /address already in use|can't set .*port/i.test(error.message)
        )
      )
        throw error
    }
  }
  throw lastError
}

async function startOnPort(options: DevServerOptions, port: number): Promise<DevServer> {
  const namespace = options.namespace ?? 'default'
  const uiPort = options.ui ? (options.uiPort ?? port + 1000) : undefined
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--namespace',
    namespace,
    '--db-filename',
    options.dbFilename,
    '--log-level',
    'warn',
    ...TETHER_SEARCH_ATTRIBUTES.flatMap((name) => ['--search-attribute', `${name}=Keyword`]),
    ...(uiPort ? ['--ui-port', String(uiPort)] : ['--headless']),
  ]
  const tuning = options.tuned === false ? undefined : LOCAL_TEMPORAL_TUNING
  for (const [pragma, value] of Object.entries(tuning?.sqlitePragmas ?? {})) {
    args.push('--sqlite-pragma', `${pragma}=${value}`)
  }
  // Values are JSON: a duration is the string `"10ms"`, quotes included.
  for (const [key, value] of Object.entries({ ...tuning?.dynamicConfig, ...options.dynamicConfig })) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`)
  }
  // The server's output goes to a file, never to a pipe: a Go program dies on a write to a closed pipe,
  // and nobody reads the server's logs after start-up.
  const logFile = options.logFile ?? `${options.dbFilename}.log`
  const logFd = openSync(logFile, 'a')
  const child = spawn(options.cliPath, args, { detached: true, stdio: ['ignore', logFd, logFd] })
  closeSync(logFd)
  const output = () => {
    try {
      return readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ')
    } catch {
      return ''
    }
  }
  let exited: string | undefined
  child.on('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`
  })
  child.on('error', (error) => {
    exited = error.message
  })
  const pid = child.pid
  if (pid === undefined) throw new DevServerStartError(`could not start ${options.cliPath}`)
  const address = `127.0.0.1:${port}`
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000)
  while (!(await healthy(options.cliPath, address))) {
    if (exited) {
      throw new DevServerStartError(
        `temporal server start-dev on ${address} ${exited}: ${output()} (log: ${logFile})`,
      )
    }
    if (Date.now() > deadline) {
      await stopProcess(pid, { group: true })
      throw new DevServerStartError(
        `temporal server start-dev on ${address} did not answer within ${(options.readyTimeoutMs ?? 60_000) / 1000} s`,
      )
    }
    await sleep(250)
  }
  child.unref()
  options.log?.(`Temporal dev server ready at ${address}${uiPort ? ` (UI http://127.0.0.1:${uiPort})` : ''}`)
  return {
    address,
    namespace,
    pid,
    ...(uiPort ? { uiUrl: `http://127.0.0.1:${uiPort}` } : {}),
    stop: () => stopProcess(pid, { group: true, signal: 'SIGTERM', graceMs: 10_000 }),
  }
}

function healthy(cliPath: string, address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = spawn(cliPath, ['operator', 'cluster', 'health', '--address', address], {
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    let out = ''
    probe.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8')
    })
    const timer = setTimeout(() => probe.kill('SIGKILL'), 5_000)
    probe.on('error', () => resolve(false))
    probe.on('close', (code) => {
      clearTimeout(timer)
      resolve(code === 0 && out.includes('SERVING'))
    })
  })
}
