/**
 * A worker's pacing against a real server: runs tell it through their sink when they take an activity's
 * result, and a worker whose bound is reached holds model turns back, yet every run finishes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StepPacer } from '../../src/activities/index.js'
import type { AuditStore } from '../../src/audit/index.js'
import { openTestAudit, startAgentWorker, startScriptedRun } from '../support/agent.js'
import { connectClient } from '../support/temporal.js'

// A bound of one run whatever the pace measured: on a slow machine the pace of the runs' first results
// alone could raise the bound past the four runs, and nothing would be held.
const pacer = new StepPacer({ least: 1, queueMs: 0 })
let audit: AuditStore
let client: Awaited<ReturnType<typeof connectClient>>
let worker: Awaited<ReturnType<typeof startAgentWorker>>

beforeAll(async () => {
  audit = await openTestAudit()
  client = await connectClient()
  worker = await startAgentWorker(audit, { pacer })
}, 60_000)

afterAll(async () => {
  await worker?.stop()
  await client?.close()
  await audit?.close()
})

describe('a worker that paces its runs', () => {
  it('holds model turns while a run waits for its workflow task, every run ends, and no run is left counted', async () => {
    const read = { name: 'read_file', args: { path: 'package.json' } }
    const turns = [{ toolCalls: [read] }, { toolCalls: [read] }, { toolCalls: [read] }, { text: 'done' }]
    const runs = await Promise.all(
      Array.from({ length: 4 }, () =>
        startScriptedRun({ client: client.client, taskQueue: worker.taskQueue }, turns),
      ),
    )
    try {
      const results = await Promise.all(runs.map(({ handle }) => handle.result()))
      for (const result of results) expect(result).toMatchObject({ steps: 4 })
      expect(pacer.held).toBeGreaterThan(0)
      // Each activity's end was matched by its workflow's word: nothing waits out the 30 s of a lost one.
      await expect.poll(() => pacer.load, { timeout: 10_000 }).toBe(0)
      expect(pacer.waiting).toBe(0)
    } finally {
      for (const { ws } of runs) await ws.cleanup()
    }
  }, 120_000)
})
