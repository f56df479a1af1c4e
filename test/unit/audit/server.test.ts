/** Where a connection string points, as connection errors name it: host:port, user, database, no password. */
import { describe, expect, it } from 'vitest'
import { AuditConnectionError, describeServer, migrations } from '../../../src/audit/index.js'

describe('describeServer', () => {
  it('name host:port, user and database, and never keep the password', () => {
    const server = describeServer('postgres://ana:s3cret@db.internal:6543/audit')
    expect(server).toEqual({
      host: 'db.internal',
      port: 6543,
      user: 'ana',
      database: 'audit',
      target: 'db.internal:6543',
    })
    expect(JSON.stringify(server)).not.toContain('s3cret')
  })

  it('fill in the PostgreSQL defaults', () => {
    expect(describeServer('postgresql://ana@localhost')).toMatchObject({
      port: 5432,
      database: 'ana',
      target: 'localhost:5432',
    })
    expect(describeServer('postgres:///tether?host=/var/run/postgresql')).toMatchObject({
      host: '/var/run/postgresql',
      user: 'postgres',
      database: 'tether',
    })
  })

  it('refuse what is not a postgres URL, without echoing it', () => {
    for (const bad of ['host=db password=hunter2', 'mysql://root:hunter2@db/app']) {
      const error = (() => {
        try {
          describeServer(bad)
        } catch (e) {
          return e
        }
      })()
      expect(error).toBeInstanceOf(AuditConnectionError)
      expect((error as Error).message).toMatch(
        /^DATABASE_URL .*expected postgres:\/\/user:password@host:port\/database$/,
      )
      expect((error as Error).message).not.toContain('hunter2')
    }
  })
})

describe('migrations', () => {
  it('are numbered 1, 2, … in order, so a new one can only be appended', () => {
    expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1))
    expect(new Set(migrations.map((m) => m.name)).size).toBe(migrations.length)
  })
})
