/**
 * A worker's copies of finished runs' workspaces go some hours after the run ended, against the real audit
 * database: what is still running, finished lately, unknown, or not the worker's own stays.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CACHES_PENDING,
  cachesMarkText,
  safeName,
  sweepWorkspaces,
} from '../../src/activities/workspace-sweep.js'
import type { AuditStore } from '../../src/audit/index.js'
import { openTestAudit } from '../support/agent.js'

let audit: AuditStore
const folders: string[] = []

beforeAll(async () => {
  audit = await openTestAudit()
})

afterAll(async () => {
  await audit?.close()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** A run on record: running, or finished `hoursAgo`. */
async function run(id: string, hoursAgo?: number): Promise<string> {
  await audit.pool.query(
    `insert into runs (run_id, goal, workspace, contract, policy, started_at, status, finished_at)
     values ($1, 'g', '', '{}', '{}', now() - interval '3 days', $2,
             case when $3::float8 is null then null else now() - make_interval(secs => $3::float8 * 3600) end)`,
    [id, hoursAgo === undefined ? 'running' : 'finished', hoursAgo ?? null],
  )
  return id
}

describe("a worker's copies of finished runs' workspaces", () => {
  it('go some hours after the run finished, with their restore leftovers and cache marks; nothing else does', async () => {
    const tag = Math.random().toString(36).slice(2)
    const old = await run(`sweep-old ${tag} é/€`, 30)
    const recent = await run(`sweep-recent-${tag}`, 2)
    const running = await run(`sweep-running-${tag}`)
    const unknown = `sweep-unknown-${tag}`
    const root = mkdtempSync(join(tmpdir(), 'tether-sweep-'))
    folders.push(root)
    for (const id of [old, recent, running, unknown]) {
      mkdirSync(join(root, safeName(id), 'src'), { recursive: true })
      writeFileSync(join(root, safeName(id), 'src/a.txt'), id)
    }
    // A folder a command left without write permission, which a worker that is not root cannot empty as it is.
    mkdirSync(join(root, safeName(old), 'locked/in'), { recursive: true })
    writeFileSync(join(root, safeName(old), 'locked/in/f.txt'), 'x')
    chmodSync(join(root, safeName(old), 'locked'), 0o500)
    mkdirSync(join(root, `.${safeName(old)}.tether-restore`))
    mkdirSync(join(root, CACHES_PENDING))
    const marks = join(root, CACHES_PENDING)
    writeFileSync(join(marks, 'old-contract-path'), cachesMarkText(old, '/home/someone/project'))
    writeFileSync(join(marks, 'recent'), cachesMarkText(recent, join(root, safeName(recent))))
    writeFileSync(join(marks, 'not-a-mark'), 'written by an older tether')
    writeFileSync(join(root, 'stray file'), '')

    const report = await sweepWorkspaces(audit.pool, root, 24)

    expect(report.failed).toEqual([])
    expect(report.removed.sort()).toEqual(
      [
        join(root, safeName(old)),
        join(root, `.${safeName(old)}.tether-restore`),
        join(marks, 'old-contract-path'),
      ].sort(),
    )
    for (const path of report.removed) expect(existsSync(path), path).toBe(false)
    for (const id of [recent, running, unknown])
      expect(existsSync(join(root, safeName(id), 'src/a.txt')), id).toBe(true)
    expect(existsSync(join(marks, 'recent'))).toBe(true)
    expect(existsSync(join(marks, 'not-a-mark'))).toBe(true)
    expect(existsSync(join(root, 'stray file'))).toBe(true)

    // With no hours kept, a run that finished goes at the next look; one still running never does.
    const none = await sweepWorkspaces(audit.pool, root, 0)
    expect(none.removed.sort()).toEqual([join(root, safeName(recent)), join(marks, 'recent')].sort())
    expect(existsSync(join(root, safeName(running)))).toBe(true)
  })

  it('are looked for in a folder that may not exist yet', async () => {
    const root = join(tmpdir(), `tether-sweep-absent-${Math.random().toString(36).slice(2)}`)
    expect(await sweepWorkspaces(audit.pool, root, 24)).toEqual({ removed: [], failed: [] })
  })
})

describe('folder names of run ids', () => {
  it('never share a folder between two run ids, and give the id back', () => {
    // Before, both were `%20ac`.
    expect(safeName('€')).not.toBe(safeName(' ac'))
    for (const id of ['run-1', 'a b/c', 'é€', '%41', '..', '.', '.x.tether-restore'])
      expect(decodeURIComponent(safeName(id))).toBe(id)
    expect(safeName('run-1.x_y')).toBe('run-1.x_y')
    // A run named `..` once had the folder above the worker's workspaces (its state folder), which a run
    // from a source empties first.
    for (const id of ['.', '..', '../x', '.hidden']) {
      expect(join('/w', safeName(id)).startsWith('/w/'), id).toBe(true)
      expect(safeName(id).startsWith('.'), id).toBe(false)
    }
  })
})
