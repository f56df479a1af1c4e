/** `tether db migrate` as a person runs it: a real child process against a real PostgreSQL. */
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrations } from '../../../src/audit/index.js'
import { createTestDatabase, type TestDatabase } from './support.js'

const root = fileURLToPath(new URL('../../..', import.meta.url))

function tether(args: string[], env: Record<string, string>) {
  return execa('npx', ['tsx', 'src/cli/bin.ts', ...args], { cwd: root, env, reject: false })
}

describe('tether db migrate', () => {
  let db: TestDatabase

  beforeAll(async () => {
    db = await createTestDatabase('cli')
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('print what it applied, then that nothing is pending', async () => {
    const target = new URL(db.url).host
    const first = await tether(['db', 'migrate', '--json'], { DATABASE_URL: db.url })
    expect(first.exitCode).toBe(0)
    expect(JSON.parse(first.stdout)).toEqual({
      target,
      applied: migrations.map(({ version, name }) => ({ version, name })),
      version: migrations.length,
      newer: [],
    })

    const second = await tether(['db', 'migrate'], { DATABASE_URL: db.url })
    expect(second.exitCode).toBe(0)
    expect(second.stdout).toBe(
      `nothing to apply: the audit schema on ${target} is at version ${migrations.length}`,
    )
  })

  it('fail with one line naming the server when it cannot connect', async () => {
    const url = new URL(db.url)
    url.password = 'wrong'
    const result = await tether(['db', 'migrate', '--database-url', url.toString()], {})
    expect(result.exitCode).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^error: PostgreSQL at ${url.host} refused the credentials for user`)),
    ])
  })
})
