/**
 * A worker's own copies of finished runs' workspaces go, some hours after the run ended: the folders it laid
 * out from a source or restored for a rewind (`TETHER_WORKSPACES/<run id>`), the restore a crash left beside
 * one, and the marks of caches still to be rebuilt. Each is a copy: the run's trees stay in the snapshot
 * store for as long as retention keeps them (`tether checkout` lays any step out again). A folder a contract
 * names (`workspace`) is the user's and is never touched, and nothing is removed for a run the audit does
 * not know as finished.
 */
import { chmod, readdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type pg from 'pg'

/** Where a worker marks the folders it restored without their caches, inside its folder of workspaces. */
export const CACHES_PENDING = '#caches-pending'
const STAGING = /^\.(.+)\.tether-restore$/

/**
 * A run id as a folder name: anything but letters, digits, `.`, `_` and `-` written as `%` and the hex of
 * its UTF-8 bytes, so no two run ids share a folder and the name gives the id back — and a leading `.` too,
 * so no run's folder is `.` or `..` (the folder of workspaces itself, or the one above it) or a restore's
 * leftover.
 */
export function safeName(runId: string): string {
  return runId.replace(/^\.|[^A-Za-z0-9._-]/gu, (ch) =>
    [...Buffer.from(ch)].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join(''),
  )
}

/** What a caches mark holds: whose it is. */
export function cachesMarkText(runId: string, path: string): string {
  return `${JSON.stringify({ runId, path })}\n`
}

export interface SweepReport {
  /** The paths removed. */
  removed: string[]
  /** The paths that could not be removed, and why. */
  failed: Array<{ path: string; error: string }>
}

/**
 * Removes from `folder` (a worker's `TETHER_WORKSPACES`) what belongs to runs that finished more than
 * `keepHours` ago.
 */
export async function sweepWorkspaces(
  pool: pg.Pool,
  folder: string,
  keepHours: number,
): Promise<SweepReport> {
  const report: SweepReport = { removed: [], failed: [] }
  // Each path and the run it belongs to.
  const owned: Array<{ path: string; runId: string }> = []
  for (const name of await listed(folder)) {
    const staged = STAGING.exec(name)
    const runId = runOf(staged ? (staged[1] as string) : name)
    if (runId !== undefined) owned.push({ path: join(folder, name), runId })
  }
  const marks = join(folder, CACHES_PENDING)
  for (const name of await listed(marks)) {
    const path = join(marks, name)
    const runId = await readFile(path, 'utf8').then(markOwner, () => undefined)
    if (runId !== undefined) owned.push({ path, runId })
  }
  if (owned.length === 0) return report
  const { rows } = await pool.query<{ run_id: string }>(
    `select run_id from runs
      where run_id = any($1::text[]) and status = 'finished'
        and finished_at < now() - make_interval(secs => $2)`,
    [[...new Set(owned.map((o) => o.runId))], keepHours * 3600],
  )
  const finished = new Set(rows.map((row) => row.run_id))
  for (const { path, runId } of owned) {
    if (!finished.has(runId)) continue
    try {
      await removeAll(path)
      report.removed.push(path)
    } catch (error) {
      report.failed.push({ path, error: (error as Error).message })
    }
  }
  return report
}

async function listed(folder: string): Promise<string[]> {
  try {
    return await readdir(folder)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
}

/** The run a folder name was made for; undefined for a name no run id gives. */
function runOf(name: string): string | undefined {
  try {
    const runId = decodeURIComponent(name)
    return safeName(runId) === name ? runId : undefined
  } catch {
    return undefined
  }
}

function markOwner(text: string): string | undefined {
  try {
    const { runId } = JSON.parse(text) as { runId?: unknown }
    return typeof runId === 'string' ? runId : undefined
  } catch {
    return undefined
  }
}

/**
 * `rm -rf`, and where a command left a folder without write permission (a non-root worker cannot empty it),
 * every folder made writable to its owner first.
 */
async function removeAll(path: string): Promise<void> {
  try {
    await rm(path, { recursive: true, force: true })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EACCES') throw error
    await writable(path)
    await rm(path, { recursive: true, force: true })
  }
}

async function writable(folder: string): Promise<void> {
  await chmod(folder, 0o700)
  for (const entry of await readdir(folder, { withFileTypes: true }))
    if (entry.isDirectory()) await writable(join(folder, entry.name))
}
