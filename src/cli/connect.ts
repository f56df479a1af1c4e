/**
 * What a command connects to: the state folder, the running `tether dev` (`<state>/dev.json`), the person's
 * own settings (profiles), Temporal and the audit store. Loaded by the commands that need it, when they
 * run — and each SDK only when a connection is made — so `--help` and the audit's lists start quickly.
 *
 * Settings are read by src/stack/config.ts (flags, then variables, then Temporal's TOML profiles and
 * tether's own config file). `tether dev` records the stack it started in the per-user state folder, so
 * other commands in any folder and any terminal find it without a variable set; whatever is configured wins
 * over that record.
 */
import type { Client, Connection } from '@temporalio/client'
import type { AuditStore } from '../audit/reader.js'
import {
  ConfigError,
  connectTemporalClient,
  type DevStackRecord,
  readAuditTarget,
  readConfig,
  readUserSettings,
  runningDevStack,
  type TemporalTarget,
  type TetherConfig,
  tetherStateDir,
  type UserSettings,
} from '../stack/index.js'
import { chosenProfile } from './context.js'
import { CliError } from './errors.js'

export { type DevStackRecord, devStackFile } from '../stack/index.js'

export function stateDir(): string {
  return tetherStateDir()
}

/** The running `tether dev`, if there is one (a record left by one that was killed is ignored). */
export function devStack(): DevStackRecord | undefined {
  return runningDevStack(stateDir())
}

/** A ConfigError is one line for the person at the terminal. */
function configured<T>(read: () => T): T {
  try {
    return read()
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message)
    throw error
  }
}

let settings: UserSettings | undefined

/** The person's settings: the profile `--profile` (or TETHER_PROFILE) names in tether's config file. */
export function userSettings(): UserSettings {
  const profile = chosenProfile()
  settings ??= configured(() => readUserSettings(profile ? { profile } : {}))
  return settings
}

/** What commands connect to: the configuration, with the running `tether dev` filling in what is unset. */
export function cliConfig(): TetherConfig {
  const dev = devStack()
  const user = userSettings()
  return configured(() =>
    readConfig({
      fallback: dev && {
        temporalAddress: dev.temporalAddress,
        namespace: dev.namespace,
        taskQueue: dev.taskQueue,
        databaseUrl: dev.databaseUrl,
      },
      temporalProfile: user.temporalProfile
        ? { name: user.temporalProfile, setting: user.sources.temporalProfile ?? 'temporal_profile' }
        : undefined,
    }),
  )
}

export type CliTarget = TemporalTarget & { taskQueue: string }

/** Runs `fn` with a Temporal client; an unreachable server or a refused credential is one clear line. */
export async function withTemporal<T>(fn: (client: Client, target: CliTarget) => Promise<T>): Promise<T> {
  const config = cliConfig()
  const target = { ...config.temporal, taskQueue: config.taskQueue }
  let connection: Connection
  try {
    connection = await connectTemporalClient(target, { connectTimeout: '5 seconds' })
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message)
    throw error
  }
  const { Client } = await import('@temporalio/client')
  try {
    return await fn(new Client({ connection, namespace: target.namespace }), target)
  } finally {
    await connection.close()
  }
}

/**
 * Runs `fn` with the audit store: DATABASE_URL, else the one `tether dev` uses, else the embedded PostgreSQL
 * in the state folder.
 */
export async function withAudit<T>(fn: (audit: AuditStore) => Promise<T>): Promise<T> {
  // A profile that cannot be read is one line whatever the command (a named one that is not there too).
  userSettings()
  const dev = devStack()
  const { databaseUrl, stateDir } = readAuditTarget({ fallback: dev && { databaseUrl: dev.databaseUrl } })
  const { AuditError, openAudit } = await import('../audit/reader.js')
  let audit: AuditStore
  try {
    audit = await openAudit({ databaseUrl, stateDir, migrate: true })
  } catch (error) {
    if (error instanceof AuditError) throw new CliError(error.message)
    throw error
  }
  try {
    return await fn(audit)
  } finally {
    await audit.close()
  }
}

/**
 * The one run or approval id that `given` names: itself, or the only id that starts with it. None, or
 * several, is one line saying so (with a few of them, to type more of one); with `keepUnknown`, none is `given`.
 */
export async function resolveId(
  audit: AuditStore,
  kind: 'run' | 'approval',
  given: string,
  options: { keepUnknown?: boolean } = {},
): Promise<string> {
  const found = await audit.idsStartingWith(kind, given, 6)
  if (found.includes(given) || found.length === 1) return found.includes(given) ? given : (found[0] as string)
  // A run the audit has no row of may still be in Temporal (its row deleted): what `audit verify` is for.
  if (found.length === 0 && options.keepUnknown) return given
  if (found.length === 0) {
    throw new CliError(
      kind === 'run'
        ? `no run ${given} in the audit; list runs with \`tether ls\``
        : `no approval ${given}; see \`tether approvals\``,
    )
  }
  const shown = found.slice(0, 5).join(', ')
  throw new CliError(
    `${kind} id ${given} is ambiguous: it starts ${found.length > 5 ? 'more than 5' : found.length} ${kind}s (${shown}${found.length > 5 ? ', …' : ''}); type more of it`,
  )
}
