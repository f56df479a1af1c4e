/**
 * Where tether connects, read in one place: the Temporal target (address, namespace, TLS, mutual TLS or API
 * key, read the way Temporal's own tools read them: `TEMPORAL_*` variables over a TOML profile), the task
 * queue, the audit database and the state folder — one default each. An empty variable counts as unset.
 * Also the person's own settings (`readUserSettings`): profiles in tether's config file, below flags and
 * variables.
 *
 * A setting that cannot work (a certificate file that is missing, a key that is not the certificate's, a
 * profile the file does not have) is a `ConfigError` before anything connects; a server that refuses the
 * connection is one too, once a short probe has found out why. Each is one line naming the setting and what
 * to do.
 */
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { connect as connectTcp, isIP } from 'node:net'
import { homedir, platform } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { type ConnectionOptions, checkServerIdentity, connect as connectTls } from 'node:tls'
import type { Connection, TLSConfig } from '@temporalio/client'
import type { ClientConfigProfile, ConfigDataSource } from '@temporalio/envconfig'
import type { NativeConnection } from '@temporalio/worker'
import { parse as parseToml } from 'smol-toml'
import { tetherStateDir } from './state.js'
import {
  checkClientPair,
  isTlsAlert,
  parseCertificate,
  readTlsFile,
  TlsFileError,
  UNTRUSTED_CERTIFICATE,
} from './tls-files.js'

export const DEFAULT_TEMPORAL_ADDRESS = '127.0.0.1:7233'
export const DEFAULT_NAMESPACE = 'default'
export const DEFAULT_TASK_QUEUE = 'tether'

/** A setting that cannot work, or a server that refused it: one line naming the setting and what to do. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** What `Connection.connect` (clients) and `NativeConnection.connect` (workers) both take. */
export interface TemporalConnectionOptions {
  address: string
  tls?: TLSConfig | boolean
  apiKey?: string
  metadata?: Record<string, string>
}

/** The settings a Temporal target is made of, each named in messages by where it was set. */
export type TemporalSetting =
  | 'address'
  | 'namespace'
  | 'apiKey'
  | 'tls'
  | 'clientCert'
  | 'clientKey'
  | 'serverCACert'
  | 'serverName'

export interface TemporalTarget {
  address: string
  namespace: string
  /** For `Connection.connect` and `NativeConnection.connect` alike: the same TLS and API key for both. */
  connection: TemporalConnectionOptions
  /** How the connection is protected, for a start line: `no TLS`, `TLS`, `mutual TLS` or `API key`. */
  security: string
  /**
   * Where each value was set (`TEMPORAL_API_KEY`, `api_key in profile "prod" of ~/.config/…`), for messages;
   * a value missing here is a default (or the running `tether dev`'s).
   */
  settings: Partial<Record<TemporalSetting, string>>
}

export interface TetherConfig {
  temporal: TemporalTarget
  taskQueue: string
  /** The audit database; undefined means the embedded PostgreSQL in `stateDir`. */
  databaseUrl: string | undefined
  stateDir: string
  /** The operator's floor file (`TETHER_FLOOR`); undefined means the built-in floor. */
  floor: string | undefined
  /** The operator's model price file (`TETHER_PRICES`); undefined means the shipped prices only. */
  prices: string | undefined
  /** The operator's MCP servers file (`TETHER_MCP_SERVERS`); undefined: no MCP servers. */
  mcpServers: string | undefined
  /** tether as an MCP server: the folder of policies clients may name, and the workspace roots. */
  mcpServe: { policies: string | undefined; workspaceRoots: string[] }
  /**
   * The Worker Deployment this worker belongs to and its build (`TETHER_DEPLOYMENT` and `TETHER_BUILD_ID`):
   * with them, runs are pinned to the build that started them. Undefined: no Worker Versioning.
   */
  deployment: WorkerDeployment | undefined
  /** Runs the worker keeps in memory between their tasks (`TETHER_WORKFLOW_CACHE`); undefined: sized from memory. */
  workflowCache: number | undefined
}

export interface WorkerDeployment {
  name: string
  buildId: string
}

/** What a running local stack (`tether dev`) offers when nothing is configured. */
export interface ConfigFallback {
  temporalAddress?: string | undefined
  namespace?: string | undefined
  taskQueue?: string | undefined
  databaseUrl?: string | undefined
}

export interface ReadConfigOptions {
  /** Default `process.env`. */
  env?: NodeJS.ProcessEnv
  /** A profile of the TOML file; default `TEMPORAL_PROFILE`, else `default` (which may be absent). */
  profile?: string
  /**
   * Used where nothing is set: the Temporal target and task queue when no address is configured, the
   * database when `DATABASE_URL` is unset. The CLI passes the running `tether dev`'s record here.
   */
  fallback?: ConfigFallback | undefined
  /**
   * The Temporal profile tether's own settings name (`temporal_profile`, see `readUserSettings`), and where
   * that was set; `TEMPORAL_PROFILE` and `profile` win over it.
   */
  temporalProfile?: { name: string; setting: string } | undefined
}

/** Everything tether reads to connect; throws `ConfigError`. */
export function readConfig(options: ReadConfigOptions = {}): TetherConfig {
  const env = presentVariables(options.env ?? process.env)
  const temporal = readTemporalTarget(options)
  const fallback = temporal.settings.address ? undefined : options.fallback
  return {
    temporal,
    taskQueue: env.TETHER_TASK_QUEUE ?? fallback?.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...readAuditTarget(options),
    floor: floorFile(env),
    prices: pricesFile(env),
    mcpServers: mcpServersFile(env),
    mcpServe: {
      policies: env.TETHER_MCP_POLICIES,
      workspaceRoots: (env.TETHER_MCP_WORKSPACES ?? '').split(':').filter((root) => root !== ''),
    },
    deployment: workerDeployment(env),
    workflowCache: workflowCacheSetting(env),
  }
}

/** `TETHER_WORKFLOW_CACHE`: the runs a worker keeps in memory; undefined: sized from its memory. */
export function workflowCacheSetting(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const value = presentVariables(env).TETHER_WORKFLOW_CACHE
  if (value === undefined) return undefined
  if (!/^[0-9]{1,6}$/.test(value) || Number(value) < 2) {
    throw new ConfigError(
      `TETHER_WORKFLOW_CACHE must be a whole number of runs, at least 2 (it is "${value.slice(0, 40)}"); unset it to size the cache from the worker's memory`,
    )
  }
  return Number(value)
}

/**
 * Only where the audit is (`readConfig`'s `databaseUrl` and `stateDir`): what a command that reads only the
 * audit needs, without reading (or loading the code for) the Temporal target.
 */
export function readAuditTarget(
  options: Pick<ReadConfigOptions, 'env' | 'fallback'> = {},
): Pick<TetherConfig, 'databaseUrl' | 'stateDir'> {
  const env = presentVariables(options.env ?? process.env)
  return {
    databaseUrl: databaseUrl(env) ?? (options.fallback?.databaseUrl || undefined),
    stateDir: tetherStateDir(env),
  }
}

function workerDeployment(env: Record<string, string>): WorkerDeployment | undefined {
  const name = env.TETHER_DEPLOYMENT
  const buildId = env.TETHER_BUILD_ID
  if (name === undefined && buildId === undefined) return undefined
  if (name === undefined || buildId === undefined) {
    throw new ConfigError(
      `${name === undefined ? 'TETHER_BUILD_ID' : 'TETHER_DEPLOYMENT'} is set without ${name === undefined ? 'TETHER_DEPLOYMENT' : 'TETHER_BUILD_ID'}: Worker Versioning needs both, the deployment's name and this build's id`,
    )
  }
  return { name, buildId }
}

/** Where OTLP data goes: the endpoint URL of one signal and its encoding. */
export interface OtlpTarget {
  url: string
  protocol: 'http/protobuf' | 'http/json'
}

/**
 * What a worker exports (docs/observability.md): traces and metrics over OTLP where the standard `OTEL_*`
 * variables say so (nothing when none is set), metrics on a Prometheus endpoint of its own when
 * `TETHER_METRICS_PORT` is set, and never prompt, file or output text unless `TETHER_TRACE_CONTENT=excerpts`.
 */
export interface TelemetryConfig {
  /** Undefined: no traces are exported. */
  traces?: OtlpTarget | undefined
  /** Undefined: no metrics are pushed over OTLP. */
  metrics?: (OtlpTarget & { intervalMs: number }) | undefined
  /** Undefined: no Prometheus endpoint. */
  prometheus?: { host: string; port: number } | undefined
  /** `excerpts`: bounded prompt, file and output excerpts in spans. */
  content: 'off' | 'excerpts'
  /** `OTEL_SERVICE_NAME`, default `tether-worker` (`OTEL_RESOURCE_ATTRIBUTES` adds to the resource). */
  serviceName: string
}

/** The worker's telemetry settings; a setting that cannot work is a one-line `ConfigError`. */
export function readTelemetry(env: NodeJS.ProcessEnv = process.env): TelemetryConfig {
  const present = presentVariables(env)
  const disabled = present.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true'
  const content = present.TETHER_TRACE_CONTENT ?? 'off'
  if (content !== 'off' && content !== 'excerpts') {
    throw new ConfigError(`TETHER_TRACE_CONTENT must be off or excerpts, not "${content}"`)
  }
  const traces = disabled ? undefined : otlpTarget(present, 'traces')
  const metricTarget = disabled ? undefined : otlpTarget(present, 'metrics')
  const interval = present.OTEL_METRIC_EXPORT_INTERVAL ?? '60000'
  if (metricTarget && !/^\d+$/.test(interval)) {
    throw new ConfigError(
      `OTEL_METRIC_EXPORT_INTERVAL must be milliseconds, a whole number, not "${interval}"`,
    )
  }
  return {
    traces,
    metrics: metricTarget && { ...metricTarget, intervalMs: Math.max(1_000, Number(interval)) },
    prometheus: prometheusEndpoint(present),
    content,
    serviceName: present.OTEL_SERVICE_NAME ?? 'tether-worker',
  }
}

/**
 * One signal's OTLP target, the way the OpenTelemetry specification reads the variables: exported when an
 * endpoint is set (the signal's own, used as it is, or the shared one with `/v1/<signal>` after it) or the
 * signal's exporter is `otlp` (then to the default `http://localhost:4318`); `none` turns it off.
 */
function otlpTarget(env: Record<string, string>, signal: 'traces' | 'metrics'): OtlpTarget | undefined {
  const upper = signal.toUpperCase()
  const exporter = env[`OTEL_${upper}_EXPORTER`]?.trim().toLowerCase()
  if (exporter === 'none') return undefined
  if (exporter !== undefined && exporter !== 'otlp') {
    throw new ConfigError(
      `OTEL_${upper}_EXPORTER is "${exporter}"; tether exports ${signal} over OTLP only: set it to otlp or none`,
    )
  }
  const own = env[`OTEL_EXPORTER_OTLP_${upper}_ENDPOINT`]
  const shared = env.OTEL_EXPORTER_OTLP_ENDPOINT
  if (own === undefined && shared === undefined && exporter === undefined) return undefined
  const setting = own !== undefined ? `OTEL_EXPORTER_OTLP_${upper}_ENDPOINT` : 'OTEL_EXPORTER_OTLP_ENDPOINT'
  const url = own ?? `${(shared ?? 'http://localhost:4318').replace(/\/+$/, '')}/v1/${signal}`
  if (!/^https?:\/\/[^/]/i.test(url)) {
    throw new ConfigError(`${setting} must be an http:// or https:// URL, not "${url}"`)
  }
  const protocolSetting = env[`OTEL_EXPORTER_OTLP_${upper}_PROTOCOL`]
    ? `OTEL_EXPORTER_OTLP_${upper}_PROTOCOL`
    : 'OTEL_EXPORTER_OTLP_PROTOCOL'
  const protocol = env[protocolSetting] ?? 'http/protobuf'
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new ConfigError(
      `${protocolSetting} is "${protocol}"; tether sends OTLP over HTTP: set it to http/protobuf (or http/json) and point ${setting} at the collector's OTLP/HTTP port (usually 4318)`,
    )
  }
  return { url, protocol }
}

/** The worker's Prometheus endpoint: `TETHER_METRICS_PORT` turns it on, on `TETHER_METRICS_HOST` (loopback). */
function prometheusEndpoint(env: Record<string, string>): { host: string; port: number } | undefined {
  const value = env.TETHER_METRICS_PORT?.trim()
  if (!value) return undefined
  const port = Number(value)
  if (!/^\d+$/.test(value) || port < 1 || port > 65_535) {
    throw new ConfigError(`TETHER_METRICS_PORT must be a port number from 1 to 65535, not "${value}"`)
  }
  return { host: env.TETHER_METRICS_HOST ?? '127.0.0.1', port }
}

/**
 * The worker's signing key, for each run's provenance (`TETHER_WORKER_KEY`; default `worker-key.pem` in the
 * state folder, made on first use). Hidden from every command like the state folder.
 */
export function workerKeyFile(env: NodeJS.ProcessEnv = process.env): string {
  const present = presentVariables(env)
  return resolve(present.TETHER_WORKER_KEY ?? join(tetherStateDir(env), 'worker-key.pem'))
}

/** The operator's model price file (`TETHER_PRICES`); undefined: the shipped prices only. */
export function pricesFile(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return presentVariables(env).TETHER_PRICES
}

/** The audit database (`DATABASE_URL`); undefined: the embedded PostgreSQL in the state folder. */
export function databaseUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return presentVariables(env).DATABASE_URL
}

/** The operator's floor file a worker stands on (`TETHER_FLOOR`); undefined: the built-in floor. */
export function floorFile(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return presentVariables(env).TETHER_FLOOR
}

/** Where workspace snapshots are kept: the audit database, an S3-compatible bucket, or nowhere. */
export type SnapshotStoreSetting =
  | { kind: 'postgres' }
  | { kind: 'off' }
  | { kind: 's3'; bucket: string; prefix: string; endpoint?: string | undefined; region?: string | undefined }

export interface SnapshotSettings {
  store: SnapshotStoreSetting
  /** Days a run's snapshots are kept after it ends (`TETHER_SNAPSHOT_RETENTION_DAYS`, default 30). */
  retentionDays: number
  /** Where the worker lays out workspaces that come from a source (`TETHER_WORKSPACES`). */
  workspaces: string
  /** Hours a worker keeps its copy of a finished run's workspace (`TETHER_WORKSPACES_KEEP_HOURS`, default 24). */
  keepWorkspacesHours: number
}

/**
 * The snapshot settings: `TETHER_SNAPSHOTS` (`postgres`, the default; `s3://bucket/prefix` with
 * `TETHER_S3_ENDPOINT` for an S3-compatible server, credentials as the AWS SDK reads them; or `off`),
 * `TETHER_SNAPSHOT_RETENTION_DAYS`, `TETHER_WORKSPACES` (default `workspaces` in the state folder) and
 * `TETHER_WORKSPACES_KEEP_HOURS`.
 */
export function snapshotSettings(env: NodeJS.ProcessEnv = process.env): SnapshotSettings {
  const present = presentVariables(env)
  const raw = present.TETHER_SNAPSHOTS ?? 'postgres'
  let store: SnapshotStoreSetting
  if (raw === 'postgres' || raw === 'off') store = { kind: raw }
  else {
    const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(raw)
    if (!match) {
      throw new ConfigError(
        `TETHER_SNAPSHOTS is "${raw}"; write postgres, off, or s3://BUCKET/PREFIX (with TETHER_S3_ENDPOINT for a server other than AWS)`,
      )
    }
    const prefix = match[2] ?? ''
    store = {
      kind: 's3',
      bucket: match[1] as string,
      prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`,
      ...(present.TETHER_S3_ENDPOINT ? { endpoint: present.TETHER_S3_ENDPOINT } : {}),
      ...(present.AWS_REGION ? { region: present.AWS_REGION } : {}),
    }
  }
  const retentionDays = decimalVariable(
    'TETHER_SNAPSHOT_RETENTION_DAYS',
    present.TETHER_SNAPSHOT_RETENTION_DAYS ?? '30',
    'write a number of days above zero, e.g. 30',
    { aboveZero: true },
  )
  const workspaces = present.TETHER_WORKSPACES
    ? resolve(present.TETHER_WORKSPACES)
    : join(tetherStateDir(env), 'workspaces')
  const keepWorkspacesHours = decimalVariable(
    'TETHER_WORKSPACES_KEEP_HOURS',
    present.TETHER_WORKSPACES_KEEP_HOURS ?? '24',
    'write a number of hours, e.g. 24 (0: remove at the next look after the run ends)',
  )
  return { store, retentionDays, workspaces, keepWorkspacesHours }
}

/** A variable holding a decimal number (`1.5`, not `1e3` or `-1`), or a ConfigError ending in `advice`. */
function decimalVariable(name: string, value: string, advice: string, { aboveZero = false } = {}): number {
  const number = Number(value)
  if (!/^\d+(\.\d+)?$/.test(value) || (aboveZero && number <= 0)) {
    throw new ConfigError(`${name} is "${value}"; ${advice}`)
  }
  return number
}

/** The operator's MCP servers file a worker offers its runs (`TETHER_MCP_SERVERS`); undefined: none. */
export function mcpServersFile(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return presentVariables(env).TETHER_MCP_SERVERS
}

/** What a person sets once instead of on every command, each from a flag, a variable or their config file. */
export interface UserSettings {
  /** The profile read (`--profile`, else `TETHER_PROFILE`, else `default`). */
  profile: string
  /** tether's config file (`TETHER_CONFIG_FILE`, else `tether/config.toml` in the user's config folder). */
  file: string
  /** The default policy file of `tether run` and `tether policy check`: an absolute path. */
  policy?: string
  /** Who answers approvals from this machine (`tether approve --as`). */
  approver?: string
  /** Where the approvals inbox is reached, for links. */
  inboxUrl?: string
  /** The profile of Temporal's own TOML file to connect with. */
  temporalProfile?: string
  /** Where each value was set (`TETHER_APPROVER`, `approver in profile "work" of …`), for messages. */
  sources: Partial<Record<UserSetting, string>>
}

export type UserSetting = 'policy' | 'approver' | 'inboxUrl' | 'temporalProfile'

/** Each user setting's variable and its key in a profile of tether's config file. */
const USER_SETTINGS: Record<UserSetting, { env: string; toml: string }> = {
  policy: { env: 'TETHER_POLICY', toml: 'policy' },
  approver: { env: 'TETHER_APPROVER', toml: 'approver' },
  inboxUrl: { env: 'TETHER_INBOX_URL', toml: 'inbox_url' },
  temporalProfile: { env: 'TEMPORAL_PROFILE', toml: 'temporal_profile' },
}

/**
 * The person's own settings: a variable over the profile's entry in tether's config file, a TOML file of
 * `[profile.NAME]` tables like Temporal's (flags, read by the CLI, win over both):
 *
 * ```toml
 * [profile.default]
 * policy = "~/policies/team.yaml"       # relative paths are read from this file's folder
 * approver = "alice"
 * inbox_url = "https://inbox.example.com"
 * temporal_profile = "prod"             # a profile of Temporal's temporal.toml
 * ```
 *
 * No file, or no `default` profile, is no settings; a profile named (by `--profile` or `TETHER_PROFILE`) that
 * the file lacks, an unknown key or a value that is not text is a one-line `ConfigError`.
 */
export function readUserSettings(options: { env?: NodeJS.ProcessEnv; profile?: string } = {}): UserSettings {
  const env = presentVariables(options.env ?? process.env)
  const file = env.TETHER_CONFIG_FILE
    ? resolve(env.TETHER_CONFIG_FILE)
    : join(env.XDG_CONFIG_HOME || join(env.HOME ?? homedir(), '.config'), 'tether', 'config.toml')
  const named = options.profile ? '--profile' : env.TETHER_PROFILE ? 'TETHER_PROFILE' : undefined
  const profile = options.profile || env.TETHER_PROFILE || 'default'
  const profiles = readProfiles(file, env.TETHER_CONFIG_FILE ? 'TETHER_CONFIG_FILE' : undefined)
  const entry = profiles[profile]
  if (named && !entry) {
    const known = Object.keys(profiles)
    throw new ConfigError(
      `${named} "${profile}" is not in ${file} (${known.length ? `it has ${known.map((name) => `"${name}"`).join(', ')}` : existsSync(file) ? 'it has no profiles' : 'that file does not exist'}); name one it has, or add [profile.${profile}] there`,
    )
  }
  const settings: UserSettings = { profile, file, sources: {} }
  const keys = Object.entries(USER_SETTINGS) as Array<[UserSetting, (typeof USER_SETTINGS)[UserSetting]]>
  for (const key of Object.keys(entry ?? {})) {
    if (!keys.some(([, names]) => names.toml === key)) {
      throw new ConfigError(
        `${file}: profile "${profile}" has an unknown setting "${key}"; it takes ${keys.map(([, n]) => n.toml).join(', ')}`,
      )
    }
  }
  for (const [setting, names] of keys) {
    const fromEnv = env[names.env]
    const fromFile = entry?.[names.toml]
    if (fromFile !== undefined && typeof fromFile !== 'string') {
      throw new ConfigError(`${file}: ${names.toml} in profile "${profile}" must be text in quotes`)
    }
    // TEMPORAL_PROFILE is Temporal's own variable: the Temporal reader applies it; here only the file's.
    const value = setting === 'temporalProfile' ? fromFile : (fromEnv ?? fromFile)
    if (!value) continue
    const fromVariable = value === fromEnv && setting !== 'temporalProfile'
    settings[setting] =
      setting === 'policy' ? expandPath(value, fromVariable ? process.cwd() : dirname(file), env) : value
    settings.sources[setting] = fromVariable ? names.env : `${names.toml} in profile "${profile}" of ${file}`
  }
  return settings
}

function readProfiles(file: string, setting: string | undefined): Record<string, Record<string, unknown>> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException
    if (code === 'ENOENT' && !setting) return {}
    throw new ConfigError(
      code === 'ENOENT'
        ? `${setting} names ${file}, which does not exist; point it at tether's config file, or unset it`
        : `cannot read ${file} (${message.split(',')[0]}); make it readable, or move it away`,
    )
  }
  let parsed: Record<string, unknown>
  try {
    parsed = parseToml(text) as Record<string, unknown>
  } catch (error) {
    throw new ConfigError(`${file} is not a valid TOML file: ${tomlProblem(error)}`)
  }
  const profiles = parsed.profile ?? {}
  const others = Object.keys(parsed).filter((key) => key !== 'profile')
  if (others.length > 0 || typeof profiles !== 'object' || Array.isArray(profiles)) {
    throw new ConfigError(
      `${file}: settings go in [profile.NAME] tables (e.g. [profile.default]), not ${others[0] ?? 'profile'} at the top`,
    )
  }
  for (const [name, entry] of Object.entries(profiles)) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new ConfigError(`${file}: profile "${name}" must be a [profile.${name}] table`)
    }
  }
  return profiles as Record<string, Record<string, unknown>>
}

/** `~/x` in the home folder, a relative path from `base`. */
function expandPath(path: string, base: string, env: Record<string, string>): string {
  if (path === '~' || path.startsWith('~/')) return join(env.HOME ?? homedir(), path.slice(1))
  return resolve(base, path)
}

/**
 * The Temporal target from the environment and the TOML profile, certificates loaded and checked — what an
 * embedder passes to `Connection.connect` and `NativeConnection.connect`:
 *
 * ```ts
 * const target = readTemporalTarget()
 * const connection = await NativeConnection.connect(target.connection)
 * ```
 */
export function readTemporalTarget(options: ReadConfigOptions = {}): TemporalTarget {
  const loaded = loadProfile(options)
  const { profile, settings } = loaded
  const fallback = settings.address ? undefined : options.fallback
  const address = profile.address ?? fallback?.temporalAddress ?? DEFAULT_TEMPORAL_ADDRESS
  const namespace = profile.namespace ?? fallback?.namespace ?? DEFAULT_NAMESPACE
  const { connectionOptions } = envconfig().toClientOptions({ ...profile, ...tlsFiles(profile, settings) })
  const connection: TemporalConnectionOptions = {
    address,
    ...(connectionOptions.tls != null ? { tls: connectionOptions.tls } : {}),
    ...(profile.apiKey ? { apiKey: profile.apiKey } : {}),
    ...(profile.grpcMeta && Object.keys(profile.grpcMeta).length ? { metadata: profile.grpcMeta } : {}),
  }
  return { address, namespace, connection, security: security(connection), settings }
}

/** A server this process started itself: its address, no TLS. */
export function localTarget(address: string, namespace = DEFAULT_NAMESPACE): TemporalTarget {
  return { address, namespace, connection: { address }, security: 'no TLS', settings: {} }
}

/** Only the address (no certificate is read): what commands must never reach. */
export function temporalAddress(env: NodeJS.ProcessEnv = process.env): string {
  return loadProfile({ env }).profile.address ?? DEFAULT_TEMPORAL_ADDRESS
}

/**
 * The files that hold this process's own secrets, which no command may read: the Temporal config file (it
 * may hold an API key or a key inline), the private keys of the Temporal and audit database connections and
 * the worker's signing key.
 * Certificates and CAs are public and stay visible (a CA may be the system's bundle).
 */
export function credentialFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const present = presentVariables(env)
  const files: string[] = []
  const { path } = configFile(present)
  if (path) files.push(path)
  const key = loadProfile({ env }).profile.tls?.clientKey
  if (key && 'path' in key) files.push(key.path)
  let databaseKey = present.PGSSLKEY
  try {
    if (present.DATABASE_URL)
      databaseKey = new URL(present.DATABASE_URL).searchParams.get('sslkey') || databaseKey
  } catch {
    // Not a URL: the audit store says so when it opens.
  }
  if (databaseKey) files.push(databaseKey)
  files.push(workerKeyFile(env))
  return [...new Set(files.map((file) => resolve(file)))]
}

/** A Temporal client connection; a refused or unreachable server is a one-line `ConfigError`. */
export async function connectTemporalClient(
  target: TemporalTarget = readTemporalTarget(),
  options: { connectTimeout?: string | number } = {},
): Promise<Connection> {
  // The SDKs are loaded when a connection is made, not with the configuration: a command that only reads
  // the audit never pays for them.
  const { Connection } = await import('@temporalio/client')
  try {
    return await Connection.connect({
      ...target.connection,
      ...(options.connectTimeout !== undefined ? { connectTimeout: options.connectTimeout } : {}),
    })
  } catch (error) {
    throw new ConfigError(await connectionProblem(error, target), { cause: error })
  }
}

/** A worker's connection; a refused or unreachable server is a one-line `ConfigError`. */
export async function connectTemporalWorker(
  target: TemporalTarget = readTemporalTarget(),
): Promise<NativeConnection> {
  const { NativeConnection } = await import('@temporalio/worker')
  try {
    return await NativeConnection.connect(target.connection)
  } catch (error) {
    throw new ConfigError(await connectionProblem(error, target), { cause: error })
  }
}

// ---------------------------------------------------------------------------------------------------------
// Reading

/** Variables that are set and not empty; an empty `TEMPORAL_GRPC_META_*` keeps its meaning (drop the header). */
function presentVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const present: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue
    if (value !== '' || name.startsWith('TEMPORAL_GRPC_META_')) present[name] = value
  }
  return present
}

/** Each setting's variables, and its key in a TOML profile. */
const SETTINGS: Record<TemporalSetting, { env: string[]; toml: string }> = {
  address: { env: ['TEMPORAL_ADDRESS'], toml: 'address' },
  namespace: { env: ['TEMPORAL_NAMESPACE'], toml: 'namespace' },
  apiKey: { env: ['TEMPORAL_API_KEY'], toml: 'api_key' },
  tls: { env: ['TEMPORAL_TLS'], toml: 'tls' },
  clientCert: {
    env: ['TEMPORAL_TLS_CLIENT_CERT_PATH', 'TEMPORAL_TLS_CLIENT_CERT_DATA'],
    toml: 'tls.client_cert',
  },
  clientKey: {
    env: ['TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_CLIENT_KEY_DATA'],
    toml: 'tls.client_key',
  },
  serverCACert: {
    env: ['TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_DATA'],
    toml: 'tls.server_ca_cert',
  },
  serverName: { env: ['TEMPORAL_TLS_SERVER_NAME'], toml: 'tls.server_name' },
}

/**
 * Temporal's own config reader, loaded the first time a Temporal target is read (it brings Temporal's common
 * code, which a command that only reads the audit does without).
 */
function envconfig(): typeof import('@temporalio/envconfig') {
  return createRequire(import.meta.url)('@temporalio/envconfig')
}

interface LoadedProfile {
  profile: ClientConfigProfile
  settings: Partial<Record<TemporalSetting, string>>
}

function loadProfile(options: ReadConfigOptions): LoadedProfile {
  const env = presentVariables(options.env ?? process.env)
  const file = configFile(env)
  const fromSettings = options.profile || env.TEMPORAL_PROFILE ? undefined : options.temporalProfile
  const profileName = options.profile ?? env.TEMPORAL_PROFILE ?? fromSettings?.name
  const where = `${file.setting ? `${file.setting} ` : ''}${file.path ?? '(no config folder)'}`
  if (file.setting && file.path && !existsSync(file.path)) {
    throw new ConfigError(
      `TEMPORAL_CONFIG_FILE names ${file.path}, which does not exist; point it at a Temporal TOML file, or unset it`,
    )
  }
  const source: ConfigDataSource | undefined = file.path ? { path: file.path } : undefined
  let profiles: Record<string, ClientConfigProfile>
  try {
    profiles = source
      ? envconfig().loadClientConfig({ configSource: source, overrideEnvVars: env }).profiles
      : {}
  } catch (error) {
    throw new ConfigError(`${where} is not a valid Temporal config file: ${tomlProblem(error)}`)
  }
  if (profileName && !profiles[profileName]) {
    const known = Object.keys(profiles)
    throw new ConfigError(
      `${fromSettings ? `the Temporal profile "${profileName}" (${fromSettings.setting})` : `${options.profile ? 'profile' : 'TEMPORAL_PROFILE'} "${profileName}"`} is not in ${where} ` +
        `(${known.length ? `it has ${known.map((name) => `"${name}"`).join(', ')}` : file.path && existsSync(file.path) ? 'it has no profiles' : 'that file does not exist'}); ` +
        'name one it has, or add it there',
    )
  }
  const name = profileName ?? 'default'
  let profile: ClientConfigProfile
  try {
    profile = envconfig().loadClientConfigProfile({
      ...(source ? { configSource: source } : { disableFile: true }),
      ...(profileName ? { profile: profileName } : {}),
      overrideEnvVars: env,
    })
  } catch (error) {
    throw new ConfigError(`profile "${name}" of ${where}: ${tomlProblem(error)}`)
  }
  if (
    env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === 'true' ||
    env.TEMPORAL_TLS_DISABLE_HOST_VERIFICATION === '1'
  ) {
    throw new ConfigError(
      "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported by Temporal's TypeScript SDK; set TEMPORAL_TLS_SERVER_NAME to a name in the server's certificate instead",
    )
  }
  const fromFile = profiles[name]
  const settings: LoadedProfile['settings'] = {}
  for (const [setting, names] of Object.entries(SETTINGS) as Array<
    [TemporalSetting, (typeof SETTINGS)[TemporalSetting]]
  >) {
    const variable = names.env.find((variable) => env[variable] !== undefined)
    if (variable) settings[setting] = variable
    else if (fromFile && tomlValue(fromFile, setting) !== undefined) {
      settings[setting] = `${tomlKey(fromFile, setting)} in profile "${name}" of ${file.path}`
    }
  }
  return { profile, settings }
}

/** The TOML file: `TEMPORAL_CONFIG_FILE`, else `temporalio/temporal.toml` in the user's config folder. */
function configFile(env: Record<string, string>): { path: string | undefined; setting?: string } {
  if (env.TEMPORAL_CONFIG_FILE) return { path: env.TEMPORAL_CONFIG_FILE, setting: 'TEMPORAL_CONFIG_FILE' }
  const home = env.HOME ?? homedir()
  let folder: string | undefined
  switch (platform()) {
    case 'win32':
      folder = env.APPDATA
      break
    case 'darwin':
      folder = join(home, 'Library', 'Application Support')
      break
    default:
      folder = env.XDG_CONFIG_HOME
        ? isAbsolute(env.XDG_CONFIG_HOME)
          ? env.XDG_CONFIG_HOME
          : undefined
        : join(home, '.config')
  }
  return { path: folder ? join(folder, 'temporalio', 'temporal.toml') : undefined }
}

function tomlValue(profile: ClientConfigProfile, setting: TemporalSetting): unknown {
  switch (setting) {
    case 'tls':
      return profile.tls
    case 'clientCert':
    case 'clientKey':
    case 'serverCACert':
    case 'serverName':
      return profile.tls?.[setting]
    default:
      return profile[setting]
  }
}

function tomlKey(profile: ClientConfigProfile, setting: TemporalSetting): string {
  const key = SETTINGS[setting].toml
  const value = tomlValue(profile, setting)
  if (value && typeof value === 'object' && ('path' in value || 'data' in value) && setting !== 'tls') {
    return `${key}_${'path' in value ? 'path' : 'data'}`
  }
  return key
}

function tomlProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  const { line, column } = (error ?? {}) as { line?: number; column?: number }
  const first = message.split('\n')[0]?.trim() ?? ''
  return line ? `${first} (line ${line}${column ? `, column ${column}` : ''})` : first
}

/**
 * The profile's certificates and key, read and checked here so that a missing file, a key that is not the
 * certificate's or an expired certificate is named now, not found out in a TLS handshake.
 */
function tlsFiles(
  profile: ClientConfigProfile,
  settings: LoadedProfile['settings'],
): Pick<ClientConfigProfile, 'tls'> {
  const tls = profile.tls
  if (!tls || tls.disabled) return {}
  const name = (setting: TemporalSetting) => settings[setting] ?? SETTINGS[setting].env[0] ?? setting
  try {
    const cert = tls.clientCert && pem(tls.clientCert, name('clientCert'))
    const key = tls.clientKey && pem(tls.clientKey, name('clientKey'))
    const ca = tls.serverCACert && pem(tls.serverCACert, name('serverCACert'))
    if (cert && !key) {
      throw new ConfigError(
        `${name('clientCert')} gives a client certificate but no key is set; set TEMPORAL_TLS_CLIENT_KEY_PATH to its private key`,
      )
    }
    if (key && !cert) {
      throw new ConfigError(
        `${name('clientKey')} gives a client key but no certificate is set; set TEMPORAL_TLS_CLIENT_CERT_PATH to its certificate`,
      )
    }
    if (ca) parseCertificate(ca, name('serverCACert'))
    if (cert && key) {
      checkClientPair(
        { cert, key },
        {
          cert: name('clientCert'),
          key: name('clientKey'),
          encrypted:
            "Temporal's SDK cannot use one: decrypt it (openssl pkey -in KEY -out KEY.plain) and keep that file private",
        },
      )
    }
    return {
      tls: {
        ...tls,
        ...(cert ? { clientCert: { data: cert } } : {}),
        ...(key ? { clientKey: { data: key } } : {}),
        ...(ca ? { serverCACert: { data: ca } } : {}),
      },
    }
  } catch (error) {
    if (error instanceof TlsFileError) throw new ConfigError(error.message)
    throw error
  }
}

function pem(source: ConfigDataSource, setting: string): Uint8Array {
  if ('path' in source) return readTlsFile(source.path, setting)
  return typeof source.data === 'string' ? Buffer.from(source.data) : source.data
}

function security(connection: TemporalConnectionOptions): string {
  const tls = Boolean(connection.tls)
  if (connection.apiKey) return tls ? 'API key' : 'API key without TLS'
  if (typeof connection.tls === 'object' && connection.tls.clientCertPair) return 'mutual TLS'
  return tls ? 'TLS' : 'no TLS'
}

// ---------------------------------------------------------------------------------------------------------
// Why a connection failed

/** One line saying why connecting to `target` failed and which setting to change. */
export async function connectionProblem(error: unknown, target: TemporalTarget): Promise<string> {
  const text = errorText(error)
  const at = `Temporal at ${target.address}`
  const set = (setting: TemporalSetting) => target.settings[setting] ?? SETTINGS[setting].env[0]
  const clientCert =
    typeof target.connection.tls === 'object' && Boolean(target.connection.tls.clientCertPair)
  if (
    /UNAUTHENTICATED|status(?: code)?:? 401|401 Unauthorized|authentication credentials|Request unauthorized/i.test(
      text,
    )
  ) {
    if (target.connection.apiKey) {
      return `${at} refused the API key in ${set('apiKey')} (unauthenticated); check that it is current and allowed in namespace ${target.namespace}`
    }
    return `${at} asks for credentials (unauthenticated); set TEMPORAL_API_KEY, or a client certificate (TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH)`
  }
  if (/PERMISSION_DENIED|status(?: code)?:? 403|403 Forbidden|does not have permission/i.test(text)) {
    return `${at} does not let these credentials in (permission denied); check that ${target.connection.apiKey ? `the API key in ${set('apiKey')}` : 'the client certificate'} is allowed in namespace ${target.namespace} (${set('namespace')})`
  }
  // A TLS-terminating proxy such as nginx answers a missing or untrusted client certificate with HTTP 400.
  if (target.connection.tls && /status(?: code)?:? 400|400 Bad Request/i.test(text)) {
    return clientCert
      ? `${at} refused the client certificate in ${set('clientCert')} (HTTP 400 Bad Request); give a certificate signed by a CA the server trusts, with its key in ${set('clientKey')}`
      : `${at} asks for a client certificate (HTTP 400 Bad Request); set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH`
  }
  const found = await probe(target)
  if (found) return found
  return `cannot reach ${at} (${firstLine(text)}); ${whereToLook(target)}`
}

function whereToLook(target: TemporalTarget): string {
  const address = target.settings.address
  return address && !address.startsWith('TEMPORAL_')
    ? `check ${address}, or that the server is up`
    : 'start `tether dev`, or set TEMPORAL_ADDRESS'
}

function errorText(error: unknown): string {
  const parts: string[] = []
  let current: unknown = error
  for (let depth = 0; current && depth < 4; depth += 1) {
    const { message, details } = current as { message?: string; details?: string }
    if (message) parts.push(message)
    if (details) parts.push(details)
    current = (current as { cause?: unknown }).cause
  }
  return parts.join(' | ') || String(error)
}

function firstLine(text: string): string {
  return text.split('\n')[0]?.split(' | ')[0] ?? text
}

const PROBE_TIMEOUT_MS = 3_000

/**
 * The SDKs say little about a failed handshake (the client only "failed to connect before the deadline"), so
 * after a failure the target is tried once more with Node's own TCP and TLS, which name the reason.
 */
async function probe(target: TemporalTarget): Promise<string | undefined> {
  const at = `Temporal at ${target.address}`
  const set = (setting: TemporalSetting) => target.settings[setting] ?? SETTINGS[setting].env[0]
  const { host, port } = hostAndPort(target.address)
  const tcp = await reach(host, port)
  if (tcp === 'ECONNREFUSED') return `cannot reach ${at} (connection refused); ${whereToLook(target)}`
  if (tcp === 'ENOTFOUND' || tcp === 'EAI_AGAIN') {
    return `cannot resolve the host ${host} of ${at}; check ${set('address')}`
  }
  if (tcp !== 'ok') return `cannot reach ${at} (${tcp}); check ${set('address')} and the network path`
  const tls = target.connection.tls
  if (!tls) {
    const answer = await handshake({ host, port, rejectUnauthorized: false, ...serverName(host, undefined) })
    return answer === 'ok'
      ? `${at} speaks TLS, and TLS is off; set TEMPORAL_TLS=true (with TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA, and a client certificate if the server asks for one)`
      : undefined
  }
  const options = tls === true ? {} : tls
  const answer = await handshake({
    host,
    port,
    ...serverName(host, options.serverNameOverride),
    ...(options.serverRootCACertificate ? { ca: Buffer.from(options.serverRootCACertificate) } : {}),
    ...(options.clientCertPair
      ? { cert: Buffer.from(options.clientCertPair.crt), key: Buffer.from(options.clientCertPair.key) }
      : {}),
  })
  if (answer === 'ok') return undefined
  const { code = '', message = '' } = answer
  if (UNTRUSTED_CERTIFICATE.has(code)) {
    return target.settings.serverCACert
      ? `the certificate of ${at} is not signed by the CA in ${set('serverCACert')} (${code}); give the CA that signed it`
      : `the certificate of ${at} is not signed by a CA this machine trusts (${code}); set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA that signed it`
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    const name = options.serverNameOverride ?? host
    return `the certificate of ${at} is not for "${name}" (${(answer as { reason?: string }).reason ?? message}); set TEMPORAL_TLS_SERVER_NAME to a name it is for`
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return `the certificate of ${at} is not valid now (${code}); the server's operator must renew it`
  }
  if (isTlsAlert(answer) || code === HUNG_UP) {
    return options.clientCertPair
      ? `${at} refused the client certificate in ${set('clientCert')} (${firstLine(message)}); give one signed by a CA the server trusts`
      : `${at} asks for a client certificate (${firstLine(message)}); set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH`
  }
  if (
    /wrong version number|packet length too long|unknown protocol|before secure TLS connection/i.test(message)
  ) {
    return `${at} does not speak TLS, and TLS is on (${set('tls') ?? 'an API key or TLS setting turns it on'}); check the port, or set TEMPORAL_TLS=false`
  }
  return undefined
}

function hostAndPort(address: string): { host: string; port: number } {
  const match = /^\[?([^\]]*?)\]?(?::(\d+))?$/.exec(address.replace(/^[a-z]+:\/\//i, ''))
  return { host: match?.[1] || address, port: Number(match?.[2] ?? 7233) }
}

/** Node warns when SNI is an IP address; for one, the name is only what the certificate is checked against. */
function serverName(
  host: string,
  override: string | undefined,
): Pick<ConnectionOptions, 'servername' | 'checkServerIdentity'> {
  if (override)
    return { servername: override, checkServerIdentity: (_host, cert) => checkServerIdentity(override, cert) }
  return isIP(host) ? {} : { servername: host }
}

function reach(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connectTcp({ host, port })
    const done = (result: string) => {
      socket.destroy()
      resolve(result)
    }
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done('no answer'))
    socket.once('connect', () => done('ok'))
    socket.on('error', (error: NodeJS.ErrnoException) => done(error.code ?? error.message))
  })
}

type Handshake = 'ok' | { code?: string; message?: string; reason?: string }
const HUNG_UP = 'HUNG_UP_AFTER_HANDSHAKE'

/** A TLS handshake; a server that rejects the client certificate may say so just after it (TLS 1.3). */
function handshake(options: ConnectionOptions & { host: string; port: number }): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket = connectTls({ ...options, ALPNProtocols: ['h2'] })
    let settled = false
    const done = (result: Handshake) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(result)
    }
    const timer = setTimeout(() => done({ message: 'no TLS answer in time' }), PROBE_TIMEOUT_MS)
    let secure = false
    socket.once('secureConnect', () => {
      secure = true
      setTimeout(() => done('ok'), 300)
    })
    // Some servers (Node's among them) hang up on a client certificate they refuse without an alert.
    socket.once('close', () =>
      done(secure ? { code: HUNG_UP, message: 'it closed the connection right after the handshake' } : 'ok'),
    )
    socket.on('error', (error: NodeJS.ErrnoException & { reason?: string }) =>
      done({
        ...(error.code ? { code: error.code } : {}),
        message: error.message,
        ...(error.reason ? { reason: error.reason } : {}),
      }),
    )
  })
}
