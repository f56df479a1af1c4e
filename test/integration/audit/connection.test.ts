/**
 * Connection trouble on a real PostgreSQL: a server that is down, refused credentials, a missing database,
 * and a connection killed in the middle of a write, which the caller retries and which then lands once.
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { AuditConnectionError, type AuditStore, openAudit } from '../../../src/audit/index.js'
import { countRows, createTestDatabase, runStarted, stepRecord, type TestDatabase } from './support.js'

async function unusedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

async function openError(databaseUrl: string): Promise<AuditConnectionError> {
  const error = await openAudit({ databaseUrl }).then(
    async (store) => {
      await store.close()
      throw new Error(`expected ${databaseUrl} to fail`)
    },
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(AuditConnectionError)
  const message = (error as Error).message
  expect(message).not.toContain('\n')
  return error as AuditConnectionError
}

/** What an activity's retry policy does: try again while the failure is a retryable connection error. */
async function withRetries<T>(
  write: () => Promise<T>,
  attempts = 5,
): Promise<{ value: T; failures: number }> {
  for (let failures = 0; ; failures++) {
    try {
      return { value: await write(), failures }
    } catch (error) {
      if (!(error instanceof AuditConnectionError && error.retryable) || failures + 1 >= attempts) throw error
    }
  }
}

describe('audit connections', () => {
  let db: TestDatabase
  const server = new URL(inject('databaseUrl'))

  beforeAll(async () => {
    db = await createTestDatabase('connection')
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('name host:port and what to check when the server is down', async () => {
    const port = await unusedPort()
    const error = await openError(`postgres://tether:secret-pw@127.0.0.1:${port}/tether`)
    expect(error.message).toBe(
      `cannot connect to PostgreSQL at 127.0.0.1:${port}: connection refused; ` +
        'check that the server is running and that the host and port in DATABASE_URL are right',
    )
    expect(error.retryable).toBe(true)
  })

  it('name host:port and the user when the credentials are refused, never the password', async () => {
    const url = new URL(db.url)
    url.password = 'not-the-password'
    const error = await openError(url.toString())
    expect(error.message).toMatch(
      new RegExp(
        `^PostgreSQL at ${server.host} refused the credentials for user '${url.username}' .*check the user and password in DATABASE_URL$`,
      ),
    )
    expect(error.message).not.toContain('not-the-password')
    expect(error.retryable).toBe(false)
  })

  it('say which database is missing and how to fix it', async () => {
    const url = new URL(db.url)
    url.pathname = '/tether_no_such_db'
    const error = await openError(url.toString())
    expect(error.message).toBe(
      `database 'tether_no_such_db' does not exist on PostgreSQL at ${server.host}; ` +
        'create it (createdb tether_no_such_db) or fix the database name in DATABASE_URL',
    )
  })

  it('reject a connection string that is not a URL without echoing it', async () => {
    const error = await openError('host=localhost password=hunter2')
    expect(error.message).toMatch(/^DATABASE_URL is not a valid connection string/)
    expect(error.message).not.toContain('hunter2')
  })

  it('use DATABASE_URL when no URL is passed', async () => {
    const previous = process.env.DATABASE_URL
    process.env.DATABASE_URL = db.url
    try {
      const store = await openAudit({ stateDir: '/nonexistent/must-not-be-used' })
      try {
        expect(store.target).toBe(server.host)
        expect(store.embedded).toBeUndefined()
      } finally {
        await store.close()
      }
    } finally {
      if (previous === undefined) delete process.env.DATABASE_URL
      else process.env.DATABASE_URL = previous
    }
  })

  describe('a connection dropped during a write', () => {
    let store: AuditStore
    const applicationName = `tether-audit-drop-${randomUUID().slice(0, 8)}`
    const terminate = (where: string) =>
      db.admin<{ pid: number }>(
        `select pid, pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and ${where}`,
        [applicationName],
      )

    beforeAll(async () => {
      store = await openAudit({ databaseUrl: db.url, applicationName, maxConnections: 2 })
    })
    afterAll(async () => {
      await store?.close()
    })

    it('fails with a retryable one-line error, and the retried write lands once', async () => {
      const runId = `drop-${randomUUID()}`
      await store.recordRunStarted(runStarted(runId))
      // Hold the run's row so the step insert (its foreign-key check) waits, then kill the waiting backend.
      const locker = new pg.Client({ connectionString: db.url })
      await locker.connect()
      try {
        await locker.query('begin')
        await locker.query('select 1 from runs where run_id = $1 for update', [runId])
        const write = store.recordStep(stepRecord(runId, 0)).then(
          () => undefined,
          (e: unknown) => e,
        )
        await expect.poll(async () => (await terminate(`wait_event_type = 'Lock'`)).length).toBe(1)
        const error = await write
        expect(error).toBeInstanceOf(AuditConnectionError)
        expect((error as AuditConnectionError).retryable).toBe(true)
        expect((error as Error).message).toMatch(
          new RegExp(
            `^lost the connection to PostgreSQL at ${server.host} during recordStep \\(.*\\); audit writes are idempotent, so retrying is safe$`,
          ),
        )
        await locker.query('commit')
      } finally {
        await locker.end()
      }
      expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(0)

      const retried = await withRetries(() => store.recordStep(stepRecord(runId, 0)))
      expect(retried.value).toBe(true)
      expect(await store.recordStep(stepRecord(runId, 0))).toBe(false)
      expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(1)
    })

    it('recovers when the pool’s idle connections were killed', async () => {
      const runId = `idle-drop-${randomUUID()}`
      await store.recordRunStarted(runStarted(runId))
      expect((await terminate('true')).length).toBeGreaterThan(0)
      const { value } = await withRetries(() => store.recordStep(stepRecord(runId, 0)))
      expect(value).toBe(true)
      expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(1)
    })
  })
})
