/**
 * What every `tether` subcommand needs: where the state folder is, how to reach Temporal and the audit
 * store, and how to print for a person (colour only on a terminal) or a script (`--json`).
 *
 * Settings are read by src/config.ts (variables and Temporal's TOML profiles). `tether dev` records the stack
 * it started in `<state>/dev.json`, in the per-user state folder, so other commands in any folder and any
 * terminal find it without a variable set; whatever is configured wins over that record.
 */
import { Client, type Connection } from '@temporalio/client'
import { AuditError, type AuditStore, openAudit } from '../audit/index.js'
import {
  ConfigError,
  connectTemporalClient,
  type DevStackRecord,
  readConfig,
  runningDevStack,
  type TemporalTarget,
  type TetherConfig,
  tetherStateDir,
} from '../stack/index.js'
import { CliError } from './errors.js'

export { type DevStackRecord, devStackFile } from '../stack/index.js'

export function stateDir(): string {
  return tetherStateDir()
}

/** The running `tether dev`, if there is one (a record left by one that was killed is ignored). */
export function devStack(): DevStackRecord | undefined {
  return runningDevStack(stateDir())
}

/** What commands connect to: the configuration, with the running `tether dev` filling in what is unset. */
export function cliConfig(): TetherConfig {
  const dev = devStack()
  try {
    return readConfig({
      fallback: dev && {
        temporalAddress: dev.temporalAddress,
        namespace: dev.namespace,
        taskQueue: dev.taskQueue,
        databaseUrl: dev.databaseUrl,
      },
    })
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message)
    throw error
  }
}

export type CliTarget = TemporalTarget & { taskQueue: string }

export function temporalTarget(): CliTarget {
  const config = cliConfig()
  return { ...config.temporal, taskQueue: config.taskQueue }
}

/** Runs `fn` with a Temporal client; an unreachable server or a refused credential is one clear line. */
export async function withTemporal<T>(fn: (client: Client, target: CliTarget) => Promise<T>): Promise<T> {
  const target = temporalTarget()
  let connection: Connection
  try {
    connection = await connectTemporalClient(target, { connectTimeout: '5 seconds' })
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message)
    throw error
  }
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
  const { databaseUrl, stateDir } = cliConfig()
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

const useColour = () => Boolean(process.stdout.isTTY) && !process.env.NO_COLOR
const paint = (code: number) => (text: string) => (useColour() ? `\u001b[${code}m${text}\u001b[0m` : text)
export const colour = { red: paint(31), green: paint(32), yellow: paint(33), dim: paint(2), bold: paint(1) }

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

export function print(line = ''): void {
  process.stdout.write(`${line}\n`)
}

/** Left-aligned columns for a person; the header is dimmed on a terminal. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd()
  print(colour.dim(line(header)))
  for (const row of rows) print(line(row))
}

export { visible } from '../present/index.js'
