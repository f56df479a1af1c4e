/**
 * The audit's commits per step: a model turn and an allowed command write their rows in two transactions —
 * the turn (the step before, the reply, the begin of the command it allowed) and the command (its result,
 * its observation, its attempt's end, the workspace's snapshot). Each row's `xmin` names the transaction
 * that wrote it last, so this holds whatever else writes to the database at the same time.
 */
import { writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Policy } from '../../src/policy/index.js'
import { npmWorkspace, startRun, useAgentHarness, writeScript } from '../support/agent.js'

const harness = useAgentHarness()

/** The transaction that last wrote each of a run's rows, by table and key. */
async function writers(runId: string): Promise<Map<string, number>> {
  const { rows } = await harness.audit.pool.query<{ key: string; tx: string }>(
    `select 'step ' || step as key, xmin::text as tx from steps where run_id = $1
     union all select 'message ' || seq, xmin::text from messages where run_id = $1
     union all select 'result ' || step || ' ' || call, xmin::text from exec_results where run_id = $1
     union all select 'attempt ' || step || ' ' || call || ' ' || attempt, xmin::text from exec_attempts where run_id = $1
     union all select 'snapshot ' || step || ' ' || call || ' ' || kind, xmin::text from workspace_snapshots where run_id = $1`,
    [runId],
  )
  return new Map(rows.map((row) => [row.key, Number(row.tx)]))
}

describe('the audit per step', () => {
  it('writes a model turn and the command it allowed in two transactions', async () => {
    const ws = await npmWorkspace()
    try {
      // The last command waits for the test: a finished run's rows are rewritten together (clustered),
      // which gives them a transaction of their own, so they are read while it waits.
      await writeFile(
        join(ws.path, 'wait.cjs'),
        "setInterval(() => require('node:fs').existsSync('go') && process.exit(0), 50)",
      )
      const exec = (...argv: string[]) => ({ toolCalls: [{ name: 'exec', args: { argv } }] })
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          exec('true'),
          exec('touch', 'made.txt'),
          exec('true'),
          exec('node', 'wait.cjs'),
          { text: 'done' },
        ],
      })}`
      const policy = Policy.tiered()
        .layer('project')
        .allowExec('true')
        .allowExec('touch made.txt')
        .allowExec('node wait.cjs')
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'four commands', workspace: ws.path, model },
        policy,
      )
      // Step 3's row is written with the fourth turn.
      await expect
        .poll(async () => (await writers(handle.workflowId)).has('step 3'), {
          timeout: 60_000,
          interval: 100,
        })
        .toBe(true)
      const tx = await writers(handle.workflowId)
      await writeFile(join(ws.path, 'go'), '')
      expect(await handle.result()).toMatchObject({ outcome: 'finished', steps: 5 })
      // Steps 2 and 3 (step 1's turn also answers the run's start). Seq 0 is the goal; each step adds its
      // reply (2s − 1) and its command's observation (2s).
      for (const step of [2, 3]) {
        const turn = tx.get(`message ${2 * step - 1}`)
        const command = tx.get(`result ${step} 0`)
        expect(turn).toBeDefined()
        expect(command).toBeDefined()
        expect(turn).not.toBe(command)
        expect(tx.get(`step ${step - 1}`)).toBe(turn)
        expect([
          tx.get(`message ${2 * step}`),
          tx.get(`attempt ${step} 0 1`),
          tx.get(`snapshot ${step} 0 tool`),
        ]).toEqual([command, command, command])
      }
    } finally {
      await ws.cleanup()
    }
  })

  it('records when the command of an attempt its turn began actually started, and on which worker', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['true'] } }] }, { text: 'done' }],
      })}`
      const policy = Policy.tiered().layer('project').allowExec('true')
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'one command', workspace: ws.path, model },
        policy,
      )
      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      const [attempt] = await harness.audit.execAttempts(handle.workflowId)
      const [command] = await harness.audit.executedCommands({ runId: handle.workflowId })
      expect(attempt).toMatchObject({ step: 1, call: 0, attempt: 1, outcome: 'exited' })
      expect(attempt?.worker).toBe(`${hostname()}:${process.pid}`)
      expect(attempt?.startedAt).toEqual(command?.startedAt)
    } finally {
      await ws.cleanup()
    }
  })
})
