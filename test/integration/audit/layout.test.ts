/**
 * Where a run's rows are stored: written a step at a time between other runs' rows, and rewritten together,
 * in timeline order, when the run finishes (migration 5). Moving them changes no answer of any query.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AuditStore, openAudit } from '../../../src/audit/index.js'
import {
  approvalRequest,
  at,
  createTestDatabase,
  execResult,
  refusal,
  runStarted,
  stepRecord,
  type TestDatabase,
} from './support.js'

const X = 'run-x'
const Y = 'run-y'
const STEPS = 30
// Rows this wide put a handful on each 8 KiB page, so two runs written together share every page.
const WIDE = 'o'.repeat(1500)

describe('audit row layout', () => {
  let db: TestDatabase
  let store: AuditStore

  /** The heap pages holding `runId`'s rows of `table`, in the order the rows are stored. */
  async function pages(table: string, runId: string): Promise<number[]> {
    const { rows } = await store.pool.query<{ page: number }>(
      `select (ctid::text::point)[0]::int as page from ${table} where run_id = $1 order by ctid`,
      [runId],
    )
    return rows.map((row) => row.page)
  }

  async function answers(runId: string) {
    const firstPage = await store.refusedActions({ runId, limit: 7 })
    return {
      timeline: await store.runTimeline(runId),
      commands: await store.executedCommands({ runId }),
      refused: firstPage,
      // A cursor handed out before the move still continues where it stopped.
      refusedNext: await store.refusedActions({ runId, limit: 100, before: firstPage.next! }),
      messages: await store.loadMessages(runId),
      messageCount: await store.messageCount(runId),
      // Answers refer to their approval; moving rows must not cascade into them.
      answers: (
        await store.pool.query(
          'select a.* from approval_answers a join approvals p using (approval_id) where p.run_id = $1',
          [runId],
        )
      ).rows,
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase('layout')
    store = await openAudit({ databaseUrl: db.url })
    for (const run of [X, Y]) await store.recordRunStarted(runStarted(run))
    // Two runs at the same time: each step of one lands between steps of the other.
    for (let step = 0; step < STEPS; step++) {
      for (const run of [X, Y]) {
        await store.recordStep(stepRecord(run, step, { observation: `${step} ${WIDE}` }))
        await store.recordPolicyEvents([refusal(run, step, 0, { reason: `${step} ${WIDE}` })])
        await store.recordExecResult(execResult(run, step, 1))
        await store.appendMessages(run, step, [{ role: 'tool', content: `${step} ${WIDE}` }])
      }
    }
    await store.recordApprovalRequested(approvalRequest('approval-x', X, { step: 3, call: 2 }))
    await store.recordApprovalDecision({
      approvalId: 'approval-x',
      decision: 'approved',
      decidedBy: 'ana',
      channel: 'update',
      decidedAt: at(40),
      answers: [{ approver: 'ana', decision: 'approve', channel: 'update', answeredAt: at(40) }],
    })
    await store.recordGateEvent({ runId: X, step: STEPS - 1, kind: 'gate_passed', detail: 'ok', at: at(400) })
  })
  afterAll(async () => {
    await store?.close()
    await db?.drop()
  })

  it('rewrites a finished run’s rows together and in order, and every query answers as before', async () => {
    const before = { x: await answers(X), y: await answers(Y) }
    expect(before.x.answers).toHaveLength(1)
    const yPages = { steps: await pages('steps', Y), policy: await pages('policy_events', Y) }
    // Written interleaved: the run's rows share their pages with the other run's.
    const shared = (xs: number[], ys: number[]) => xs.filter((page) => ys.includes(page))
    expect(shared(await pages('steps', X), yPages.steps)).not.toEqual([])

    const finish = { runId: X, outcome: 'verified', steps: STEPS, inputTokens: 1, outputTokens: 1 }
    expect(await store.recordRunFinished({ ...finish, finishedAt: at(500) })).toBe(true)

    for (const table of ['steps', 'policy_events', 'messages']) {
      const stored = await pages(table, X)
      // Contiguous pages, in timeline order (the stored order equals step order).
      expect(stored).toEqual([...stored].sort((a, b) => a - b))
      expect(new Set(stored).size).toBe(Math.max(...stored) - Math.min(...stored) + 1)
      expect(new Set(stored).size).toBeLessThan(new Set(await pages(table, Y)).size)
      expect(shared(stored, await pages(table, Y))).toEqual([])
    }
    const { rows } = await store.pool.query<{ step: number }>(
      'select step from steps where run_id = $1 order by ctid',
      [X],
    )
    expect(rows.map((row) => row.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i))

    expect(await answers(X)).toEqual(before.x)
    // The other run, still going, is left where it is.
    expect(await answers(Y)).toEqual(before.y)
    expect({ steps: await pages('steps', Y), policy: await pages('policy_events', Y) }).toEqual(yPages)

    // A retry of the finish moves the rows again and changes nothing either.
    expect(await store.recordRunFinished({ ...finish, finishedAt: at(500) })).toBe(true)
    expect(await answers(X)).toEqual(before.x)
    expect((await store.runSummary(X))?.status).toBe('finished')
  })
})
