/**
 * The local stack: a Temporal dev server and an embedded PostgreSQL, started together for development
 * (`tether dev`, the demo) and for the test suite, and stopped together — also when the process that
 * started them dies without cleaning up.
 */
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { embeddedPostgresFolders, removeEmbeddedPostgres, startEmbeddedPostgres } from './postgres.js'
import { freePort, portFree, startReaper } from './process.js'
import { ensureTemporalCli } from './temporal-cli.js'
import { startDevServer } from './temporal-server.js'

export {
  ConfigError,
  type ConfigFallback,
  connectionProblem,
  connectTemporalClient,
  connectTemporalWorker,
  credentialFiles,
  DEFAULT_NAMESPACE,
  DEFAULT_TASK_QUEUE,
  DEFAULT_TEMPORAL_ADDRESS,
  databaseUrl,
  floorFile,
  localTarget,
  mcpServersFile,
  type OtlpTarget,
  pricesFile,
  type ReadConfigOptions,
  readAuditTarget,
  readConfig,
  readTelemetry,
  readTemporalTarget,
  readUserSettings,
  type SnapshotSettings,
  type SnapshotStoreSetting,
  snapshotSettings,
  type TelemetryConfig,
  type TemporalConnectionOptions,
  type TemporalSetting,
  type TemporalTarget,
  type TetherConfig,
  temporalAddress,
  type UserSetting,
  type UserSettings,
  type WorkerDeployment,
  workerKeyFile,
  workflowCacheSetting,
} from './config.js'
// The MCP servers' reader (zod, YAML, the run and tool modules) is reached beside this door by the worker
// alone: through here, every command of the CLI would load it at start.
export type { McpServerConfig } from './mcp-servers.js'
export {
  type EmbeddedPostgres,
  EmbeddedPostgresError,
  embeddedPostgresFolders,
  removeEmbeddedPostgres,
  startEmbeddedPostgres,
} from './postgres.js'
export { isAlive } from './process.js'
export {
  type DevStackRecord,
  devStackFile,
  runningDevStack,
  tetherStateDir,
  usualPort,
} from './state.js'
export {
  ensureTemporalCli,
  type TemporalCli,
  TemporalCliUnavailableError,
  temporalCacheDir,
} from './temporal-cli.js'
export {
  type DevServer,
  DevServerStartError,
  LOCAL_TEMPORAL_TUNING,
  PENDING_APPROVAL_ATTRIBUTE,
  startDevServer,
  TETHER_SEARCH_ATTRIBUTES,
} from './temporal-server.js'
export {
  checkClientPair,
  isTlsAlert,
  parseCertificate,
  parsePrivateKey,
  readTlsFile,
  TlsFileError,
  UNTRUSTED_CERTIFICATE,
} from './tls-files.js'

export interface LocalStackOptions {
  /** Folder for the Temporal SQLite file, the Postgres data and logs. */
  stateDir: string
  /** Use this Temporal server instead of starting one. */
  temporalAddress?: string | undefined
  /** Use this PostgreSQL instead of the embedded one. */
  databaseUrl?: string | undefined
  /** Delete `stateDir` when the stack stops (tests); keep it for the next start (development). */
  ephemeral?: boolean
  ui?: boolean
  /** Ports tried first (when free) for a Temporal server and a PostgreSQL this stack starts; else free ones. */
  temporalPort?: number | undefined
  postgresPort?: number | undefined
  dynamicConfig?: Record<string, string | number | boolean>
  log?: (line: string) => void
}

export interface LocalStack {
  temporalAddress: string
  namespace: string
  databaseUrl: string
  uiUrl?: string
  /** How the Temporal CLI was found, when this stack started a server. */
  temporalCliRoute?: string
  /** What a person should know, e.g. that a preferred port was taken and which one was used instead. */
  notices: string[]
  /** The servers this stack started, by pid (none for one it was given or found running): benches read their CPU. */
  pids: { temporal?: number; postgres?: number }
  stop(): Promise<void>
}

export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  await mkdir(options.stateDir, { recursive: true })
  const stops: Array<() => Promise<void>> = []
  const notices: string[] = []
  // A preferred port that is taken is not an error: a free one is used, and the stack says which.
  const preferred = async (port: number | undefined) => (port && (await portFree(port)) ? port : undefined)
  const moved = (service: string, wanted: number | undefined, got: number) => {
    if (wanted && wanted !== got) notices.push(`port ${wanted} was taken, so ${service} uses ${got}`)
  }
  // What an ephemeral stack deletes once stopped: its state folder, and what the database keeps elsewhere.
  const folders = options.ephemeral ? [options.stateDir] : []
  const processes: Array<{ pid: number; signal: NodeJS.Signals; group: boolean }> = []
  const pids: LocalStack['pids'] = {}
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop()
  }
  try {
    let databaseUrl = options.databaseUrl
    if (!databaseUrl) {
      const port = await preferred(options.postgresPort)
      const dataDir = join(options.stateDir, 'postgres')
      if (options.ephemeral) folders.push(...embeddedPostgresFolders(dataDir))
      const postgres = await startEmbeddedPostgres({
        dataDir,
        ...(port ? { port } : {}),
        ...(options.log ? { log: options.log } : {}),
      })
      databaseUrl = postgres.url
      if (postgres.started) {
        moved('PostgreSQL', options.postgresPort, postgres.port)
        stops.push(postgres.stop)
        processes.push({ pid: postgres.pid, signal: 'SIGINT', group: false })
        pids.postgres = postgres.pid
      }
    }
    let temporalAddress = options.temporalAddress
    let uiUrl: string | undefined
    let temporalCliRoute: string | undefined
    if (!temporalAddress) {
      const cli = await ensureTemporalCli(options.log ? { log: options.log } : {})
      temporalCliRoute = cli.route
      const port = await preferred(options.temporalPort)
      // The UI sits 1000 above the gRPC port, when that one is free too.
      const uiPort = port && options.ui ? ((await preferred(port + 1000)) ?? (await freePort())) : undefined
      const server = await startDevServer({
        cliPath: cli.path,
        ...(port ? { port } : {}),
        ...(uiPort ? { uiPort } : {}),
        dbFilename: join(options.stateDir, 'temporal.db'),
        ui: options.ui ?? false,
        ...(options.dynamicConfig ? { dynamicConfig: options.dynamicConfig } : {}),
        ...(options.log ? { log: options.log } : {}),
      })
      temporalAddress = server.address
      moved('Temporal', options.temporalPort, Number(server.address.split(':').at(-1)))
      uiUrl = server.uiUrl
      stops.push(server.stop)
      processes.push({ pid: server.pid, signal: 'SIGTERM', group: true })
      pids.temporal = server.pid
    }
    const dismissReaper = startReaper({ processes, folders })
    return {
      temporalAddress,
      namespace: 'default',
      databaseUrl,
      ...(uiUrl ? { uiUrl } : {}),
      ...(temporalCliRoute ? { temporalCliRoute } : {}),
      notices,
      pids,
      stop: async () => {
        await stopAll()
        await removeAll(folders)
        dismissReaper()
      },
    }
  } catch (error) {
    // The folders stay: the error names the logs in them.
    await stopAll()
    throw error
  }
}

/**
 * Deletes what a local stack keeps in `stateDir` — the Temporal dev server's history (`temporal.db` and its
 * journal and log) and the embedded PostgreSQL's data, with the server folder it has outside the state
 * folder as root — so the next start is a fresh one. Settings stay (`floor.yaml`, the inbox's tokens). A
 * PostgreSQL still running on that data is stopped first; the caller makes sure no stack is running there.
 * Returns what it deleted.
 */
export async function resetLocalStack(
  stateDir: string,
  options: { serverRoot?: string } = {},
): Promise<string[]> {
  const removed = await removeEmbeddedPostgres(join(stateDir, 'postgres'), options.serverRoot)
  for (const name of ['temporal.db', 'temporal.db-wal', 'temporal.db-shm', 'temporal.db.log']) {
    const file = join(stateDir, name)
    if (
      await rm(file).then(
        () => true,
        () => false,
      )
    )
      removed.push(file)
  }
  return removed
}

async function removeAll(folders: readonly string[]): Promise<void> {
  for (const folder of folders) await rm(folder, { recursive: true, force: true })
}

export { packageVersion } from './version.js'
