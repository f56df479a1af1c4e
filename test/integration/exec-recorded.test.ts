/**
 * The command activity on a real PostgreSQL with a real child process: an attempt that finds the command's
 * observation already stored (an earlier attempt committed it, then died before reporting) returns that
 * result and runs nothing a second time.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MockActivityEnvironment } from '@temporalio/testing'
import { DefaultLogger } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActivities } from '../../src/activities/index.js'
import type { AuditStore } from '../../src/audit/index.js'
import { Policy } from '../../src/policy/index.js'
import { parseContract } from '../../src/run/contract.js'
import { openTestAudit, startedOutsideTemporal } from '../support/agent.js'

let audit: AuditStore
let dir: string
beforeAll(async () => {
  audit = await openTestAudit()
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-recorded-'))
})
afterAll(async () => {
  await audit?.close()
  await rm(dir, { recursive: true, force: true })
})

describe('a command whose result is on record', () => {
  it('is not run again by a later attempt, which reports the recorded result', async () => {
    const workspace = join(dir, 'ws')
    await mkdir(workspace)
    const argv = ['sh', '-c', 'echo ran >> runs.txt; echo done']
    const script = join(dir, 'script.json')
    await writeFile(script, JSON.stringify({ turns: [{ toolCalls: [{ name: 'exec', args: { argv } }] }] }))
    const activities = createActivities({ audit, snapshots: { store: 'off' } })
    const logger = new DefaultLogger('ERROR')
    const contract = parseContract({ goal: 'run once', workspace, model: `scripted:${script}` })
    const env = new MockActivityEnvironment({}, { logger })
    const { runId, turn } = await startedOutsideTemporal(activities, env, contract, Policy.tiered())
    await turn()
    const exec = (attempt: number) =>
      new MockActivityEnvironment({ attempt }, { logger }).run(activities.tetherExec, {
        runId,
        step: 1,
        call: 0,
        seq: 2,
        callId: 'call-0',
        pending: [],
        argv,
        workspace,
        timeoutMs: 60_000,
        outputCeiling: 65_536,
        noRetry: false,
      } as never) as Promise<{ ok: boolean; summary: string }>

    const first = await exec(1)
    expect(first.ok).toBe(true)
    expect(first.summary).not.toContain('recorded by an earlier attempt')
    // The same call again, as a retry after the first committed its result, and as a first attempt again.
    for (const attempt of [2, 1]) {
      const again = await exec(attempt)
      expect(again).toMatchObject({ ok: true })
      expect(again.summary).toContain('recorded by an earlier attempt')
    }
    expect(await readFile(join(workspace, 'runs.txt'), 'utf8')).toBe('ran\n')
    expect((await audit.executedCommands({ runId })).map((c) => c.attempt)).toEqual([1])
  }, 120_000)
})
