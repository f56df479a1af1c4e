/**
 * The embedded default: with no DATABASE_URL, the store runs tether's own PostgreSQL under the state folder,
 * reuses one that is already running there, stops only what it started, and keeps the data across restarts.
 */
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openAudit } from '../../../src/audit/index.js'
import { embeddedPostgresFolders } from '../../../src/stack/index.js'
import { runStarted } from './support.js'

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('embedded audit database', () => {
  let stateDir: string
  const previousUrl = process.env.DATABASE_URL

  beforeAll(async () => {
    delete process.env.DATABASE_URL
    stateDir = await mkdtemp(join(tmpdir(), 'tether-audit-embedded-'))
  })
  afterAll(async () => {
    if (previousUrl !== undefined) process.env.DATABASE_URL = previousUrl
    if (!stateDir) return
    for (const folder of [stateDir, ...embeddedPostgresFolders(join(stateDir, 'postgres'))]) {
      await rm(folder, { recursive: true, force: true })
    }
  })

  it('start, reuse, stop only what it started, and keep the data for the next start', async () => {
    const runId = `embedded-${randomUUID()}`
    const first = await openAudit({ stateDir })
    let pid: number
    try {
      expect(first.embedded?.started).toBe(true)
      pid = first.embedded!.pid
      expect(first.target).toBe(`127.0.0.1:${first.embedded?.port}`)
      expect(await first.recordRunStarted(runStarted(runId))).toBe(true)

      // A second tether process on the same state folder reuses the running server…
      const second = await openAudit({ stateDir })
      expect(second.embedded).toEqual({ started: false, pid, port: first.embedded?.port })
      expect((await second.runSummary(runId))?.runId).toBe(runId)
      // …and closing it leaves the server to the one that started it.
      await second.close()
      expect(alive(pid)).toBe(true)
      expect((await first.listRuns()).items.map((run) => run.runId)).toEqual([runId])
    } finally {
      await first.close()
    }
    expect(alive(pid)).toBe(false)

    const reopened = await openAudit({ stateDir })
    try {
      expect(reopened.embedded?.started).toBe(true)
      expect((await reopened.runSummary(runId))?.goal).toBe(runStarted(runId).goal)
      expect((await reopened.migrate()).applied).toEqual([])
    } finally {
      await reopened.close()
    }
    expect(alive(reopened.embedded!.pid)).toBe(false)
  })
})
