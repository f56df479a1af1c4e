/**
 * The local stack names the servers it started by pid, so a bench can read their CPU per process tree
 * (bench/support.ts `readCpu`) instead of by program name; and names none it did not start.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { describe, expect, inject, it } from 'vitest'
import { isAlive, startLocalStack } from '../../../src/stack/index.js'

const parentOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
}

describe('the local stack’s pids', () => {
  it('are those of the Temporal server and the PostgreSQL it started, and gone once it stops', async () => {
    const stack = await startLocalStack({
      stateDir: await mkdtemp(join(tmpdir(), 'tether-pids-')),
      ephemeral: true,
    })
    const { temporal, postgres } = stack.pids
    try {
      expect(temporal && isAlive(temporal)).toBe(true)
      // The postmaster is the parent of the backend serving this connection.
      const client = new pg.Client({ connectionString: stack.databaseUrl })
      await client.connect()
      const backend = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid
      await client.end()
      expect(parentOf(backend as number)).toBe(postgres)
    } finally {
      await stack.stop()
    }
    expect(isAlive(temporal as number)).toBe(false)
    expect(isAlive(postgres as number)).toBe(false)
  })

  it('name no server it was given', async () => {
    const stack = await startLocalStack({
      stateDir: await mkdtemp(join(tmpdir(), 'tether-pids-')),
      ephemeral: true,
      temporalAddress: inject('temporalAddress'),
      databaseUrl: inject('databaseUrl'),
    })
    expect(stack.pids).toEqual({})
    await stack.stop()
  })
})
