/**
 * Where tether keeps its local state, and the ports `tether dev` tries first. One folder per user, not per
 * project, so the stack `tether dev` started is found from any folder.
 */
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { isAlive } from './process.js'

/**
 * tether's state folder: `TETHER_STATE_DIR`, else `$XDG_STATE_HOME/tether`, else `~/.local/state/tether`.
 * It holds `dev.json` (the running `tether dev`), the Temporal dev server's SQLite file and the embedded
 * PostgreSQL's data.
 */
export function tetherStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TETHER_STATE_DIR) return resolve(env.TETHER_STATE_DIR)
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'tether')
}

/** The ports `tether dev` uses unless they are taken (then it says which it chose instead). */
const USUAL_PORTS = { temporal: 7233, postgres: 5433, inbox: 7280 } as const

/**
 * The port `tether dev` tries first for `service`: `TETHER_TEMPORAL_PORT` / `TETHER_POSTGRES_PORT` /
 * `TETHER_INBOX_PORT`, else the usual one.
 */
export function usualPort(service: keyof typeof USUAL_PORTS, env: NodeJS.ProcessEnv = process.env): number {
  const name = `TETHER_${service.toUpperCase()}_PORT`
  const value = env[name]?.trim()
  if (!value) return USUAL_PORTS[service]
  const port = Number(value)
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    throw new Error(`${name} must be a port number from 1 to 65535, not "${value}"`)
  }
  return port
}

/** What a running `tether dev` records in `<state>/dev.json`, so tether in any folder finds its stack. */
export interface DevStackRecord {
  temporalAddress: string
  namespace: string
  taskQueue: string
  uiUrl?: string
  /** The approvals inbox `tether dev` serves (its login link, with the stack's token). */
  inboxUrl?: string
  /** The audit database `tether dev` uses (it may hold a password: the file is readable by its owner only). */
  databaseUrl?: string
  pid: number
}

export function devStackFile(dir: string): string {
  return join(dir, 'dev.json')
}

/** The `tether dev` running on state folder `dir`, if there is one (a record left by one that was killed is ignored). */
export function runningDevStack(dir: string): DevStackRecord | undefined {
  let record: DevStackRecord
  try {
    record = JSON.parse(readFileSync(devStackFile(dir), 'utf8')) as DevStackRecord
  } catch {
    return undefined
  }
  return isAlive(record.pid) ? record : undefined
}
