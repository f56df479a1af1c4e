/** Proves the test run's servers are real: a Worker on the dev server, a Postgres round trip. */
import { writeFile } from 'node:fs/promises'
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js'
import pg from 'pg'
import { describe, expect, inject, it } from 'vitest'
import { connectClient, createWorker, uniqueTaskQueue } from '../support/temporal.js'
import { proceed, smokeWorkflow } from '../support/workflows.js'

describe('Temporal dev server', () => {
  it('runs an activity, waits for a signal, and completes', async () => {
    const { client, close } = await connectClient()
    const taskQueue = uniqueTaskQueue('smoke')
    const calls: string[] = []
    const { worker, connection } = await createWorker({
      taskQueue,
      activities: {
        async greet(name: string) {
          calls.push(name)
          return `hello ${name}`
        },
      },
    })
    try {
      const result = await worker.runUntil(async () => {
        const handle = await client.workflow.start(smokeWorkflow, {
          taskQueue,
          workflowId: `smoke-${taskQueue}`,
          args: ['tether'],
        })
        // The workflow is parked on its condition until the signal arrives.
        await expect.poll(async () => (await handle.describe()).status.name).toBe('RUNNING')
        await expect.poll(() => calls.length).toBe(1)
        await handle.signal(proceed, 'signalled')
        const value = await handle.result()
        if (process.env.TETHER_RECORD_HISTORIES) {
          const history = await handle.fetchHistory()
          await writeFile(new URL('../histories/smoke.json', import.meta.url), `${historyToJSON(history)}\n`)
        }
        return value
      })
      expect(result).toBe('hello tether; signalled')
      expect(calls).toEqual(['tether'])
    } finally {
      await connection.close()
      await close()
    }
  })
})

describe('PostgreSQL', () => {
  it('round-trips a row through a real server', async () => {
    const client = new pg.Client({ connectionString: inject('databaseUrl') })
    await client.connect()
    try {
      await client.query('create temporary table probe (id int primary key, note text)')
      await client.query('insert into probe values ($1, $2)', [1, 'durable ✓'])
      const { rows } = await client.query('select id, note, version() as version from probe')
      expect(rows).toHaveLength(1)
      expect(rows[0].note).toBe('durable ✓')
      expect(rows[0].version).toMatch(/^PostgreSQL \d+/)
    } finally {
      await client.end()
    }
  })
})
