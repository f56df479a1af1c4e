/** Migrations on a real PostgreSQL: from an empty database, re-run, concurrent starts, drift detection. */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AuditMigrationError, migrate, migrations, openAudit } from '../../../src/audit/index.js'
import { createTestDatabase, type TestDatabase } from './support.js'

const TABLES = [
  'approval_answers',
  'approvals',
  'exec_attempts',
  'exec_results',
  'gate_events',
  'mcp_calls',
  'mcp_definitions',
  'mcp_tools',
  'messages',
  'policies',
  'policy_events',
  'provenance',
  'run_policies',
  'runs',
  'snapshot_collections',
  'snapshot_objects',
  'steps',
  'workspace_claims',
  'workspace_snapshots',
]

describe('audit migrations', () => {
  let db: TestDatabase

  beforeAll(async () => {
    db = await createTestDatabase('migrations')
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('create every table from an empty database, then re-running applies nothing', async () => {
    const store = await openAudit({ databaseUrl: db.url, migrate: false })
    try {
      const first = await store.migrate()
      expect(first.applied).toEqual(migrations.map(({ version, name }) => ({ version, name })))
      expect(first.version).toBe(migrations.length)

      const { rows } = await store.pool.query<{ table_name: string }>(
        `select table_name from information_schema.tables
          where table_schema = current_schema() and table_name <> 'tether_migrations' order by table_name`,
      )
      expect(rows.map((row) => row.table_name)).toEqual(TABLES)

      const again = await store.migrate()
      expect(again).toEqual({ applied: [], version: migrations.length, newer: [] })
      const ledger = await store.pool.query('select version from tether_migrations')
      expect(ledger.rowCount).toBe(migrations.length)
    } finally {
      await store.close()
    }
  })

  it('apply each migration once when several workers start at the same time', async () => {
    const fresh = await createTestDatabase('migrations_race')
    const pools = Array.from({ length: 5 }, () => new pg.Pool({ connectionString: fresh.url, max: 1 }))
    try {
      const reports = await Promise.all(pools.map((pool) => migrate(pool)))
      const applying = reports.filter((report) => report.applied.length > 0)
      expect(applying).toHaveLength(1)
      expect(reports.every((report) => report.version === migrations.length)).toBe(true)
      const ledger = await pools[0]!.query('select version from tether_migrations')
      expect(ledger.rowCount).toBe(migrations.length)
    } finally {
      await Promise.all(pools.map((pool) => pool.end()))
      await fresh.drop()
    }
  })

  it('check a database already at this schema without taking the migration lock', async () => {
    // Every CLI command opens the audit: one that is up to date is read, never queued behind the lock. The
    // server gives up on a lock after lock_timeout, so a check that took it fails here instead of waiting.
    const checker = new pg.Pool({ connectionString: db.url, max: 1, options: '-c lock_timeout=2000' })
    const holder = new pg.Client({ connectionString: db.url })
    await migrate(checker)
    const ledger = 'select checksum from tether_migrations where version = 1'
    const original = (await checker.query<{ checksum: string }>(ledger)).rows[0]?.checksum
    await holder.connect()
    try {
      // The lock the migrations take (LOCK_KEYS in src/audit/migrations.ts).
      await holder.query('select pg_advisory_lock(518119, 4)')
      expect(await migrate(checker)).toEqual({ applied: [], version: migrations.length, newer: [] })
      // What is not up to date still waits for the lock, and so is refused here while it is held.
      await holder.query(`update tether_migrations set checksum = 'edited' where version = 1`)
      await expect(migrate(checker)).rejects.toThrow(/lock timeout/)
    } finally {
      await holder.query('update tether_migrations set checksum = $1 where version = 1', [original])
      await holder.end()
      await checker.end()
    }
  })

  it('refuse a database whose applied migration differs from this build', async () => {
    const drifted = await createTestDatabase('migrations_drift')
    try {
      const store = await openAudit({ databaseUrl: drifted.url })
      try {
        await store.pool.query(`update tether_migrations set checksum = 'edited' where version = 1`)
        const error = await store.migrate().catch((e: unknown) => e)
        expect(error).toBeInstanceOf(AuditMigrationError)
        expect((error as Error).message).toMatch(/migration 1 .* differs from the one applied/)
      } finally {
        await store.close()
      }
    } finally {
      await drifted.drop()
    }
  })

  it('keep working against a schema a newer tether migrated further', async () => {
    const store = await openAudit({ databaseUrl: db.url })
    try {
      await store.pool.query(
        `insert into tether_migrations (version, name, checksum) values (999, 'from the future', 'x')`,
      )
      const report = await store.migrate()
      expect(report).toEqual({ applied: [], version: 999, newer: [999] })
    } finally {
      await store.pool.query('delete from tether_migrations where version = 999')
      await store.close()
    }
  })
})
