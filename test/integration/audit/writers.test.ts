/**
 * The writers on a real PostgreSQL: a retry or several workers racing the same write leave exactly one row;
 * the first approval decision wins; later exec attempts replace earlier ones; bad input is refused whole.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AuditConflictError,
  AuditInputError,
  type AuditStore,
  openAudit,
  PATH_TARGET_LIMIT,
  TEXT_LIMIT,
} from '../../../src/audit/index.js'
import {
  approvalRequest,
  at,
  countRows,
  createTestDatabase,
  execResult,
  refusal,
  runStarted,
  stepRecord,
  type TestDatabase,
} from './support.js'

const WORKERS = 4

describe('audit writers', () => {
  let db: TestDatabase
  let store: AuditStore
  /** Separate pools, as separate workers would have. */
  let workers: AuditStore[]

  beforeAll(async () => {
    db = await createTestDatabase('writers')
    store = await openAudit({ databaseUrl: db.url })
    workers = await Promise.all(
      Array.from({ length: WORKERS }, () => openAudit({ databaseUrl: db.url, maxConnections: 2 })),
    )
  })
  afterAll(async () => {
    await Promise.all([store, ...(workers ?? [])].map((s) => s?.close()))
    await db?.drop()
  })

  /** A run with one approval requested, and ana's answer approving it. */
  const requested = async (name: string) => {
    const runId = `${name}-${randomUUID()}`
    const approvalId = randomUUID()
    await store.recordRunStarted(runStarted(runId))
    await store.recordApprovalRequested(approvalRequest(approvalId, runId))
    const approve = {
      approvalId,
      decision: 'approved' as const,
      decidedBy: 'ana',
      channel: 'update' as const,
      decidedAt: at(60),
    }
    return { runId, approvalId, approve }
  }

  /** Every worker performs `write` at once; returns their results. */
  const race = <T>(write: (worker: AuditStore) => Promise<T>) => Promise.all(workers.map(write))

  it('write each row once when every worker repeats the same writes concurrently', async () => {
    const runId = `race-${randomUUID()}`
    const started = await race((w) => w.recordRunStarted(runStarted(runId)))
    expect(started.filter(Boolean)).toHaveLength(1)

    const steps = [0, 1, 2].map((step) => stepRecord(runId, step))
    const events = [refusal(runId, 1, 0), refusal(runId, 1, 1), refusal(runId, 2, 0)]
    const results = await race(async (w) => ({
      steps: await Promise.all(steps.map((s) => w.recordStep(s))),
      events: await w.recordPolicyEvents(events),
      exec: await w.recordExecResult(execResult(runId, 0, 0)),
      gate: await w.recordGateEvent({
        runId,
        step: 2,
        kind: 'gate_passed',
        detail: 'npm test exited 0',
        at: at(30),
      }),
      approval: await w.recordApprovalRequested(approvalRequest(`a-${runId}`, runId)),
      messages: await w.appendMessages(runId, 0, [{ role: 'user', content: 'hi' }, { role: 'assistant' }]),
    }))

    for (let step = 0; step < steps.length; step++) {
      expect(results.filter((r) => r.steps[step])).toHaveLength(1)
    }
    expect(results.reduce((sum, r) => sum + r.events, 0)).toBe(events.length)
    expect(results.filter((r) => r.exec)).toHaveLength(1)
    expect(results.filter((r) => r.gate)).toHaveLength(1)
    expect(results.filter((r) => r.approval)).toHaveLength(1)
    expect(results.reduce((sum, r) => sum + r.messages, 0)).toBe(2)

    const where = 'run_id = $1'
    expect(await countRows(db.url, 'runs', where, [runId])).toBe(1)
    expect(await countRows(db.url, 'steps', where, [runId])).toBe(3)
    expect(await countRows(db.url, 'policy_events', where, [runId])).toBe(3)
    expect(await countRows(db.url, 'exec_results', where, [runId])).toBe(1)
    expect(await countRows(db.url, 'gate_events', where, [runId])).toBe(1)
    expect(await countRows(db.url, 'approvals', where, [runId])).toBe(1)
    expect(await countRows(db.url, 'messages', where, [runId])).toBe(2)
  })

  it('commit writes made together all at once, or none of them', async () => {
    const runId = `together-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    const failed = store.together('test', async (writes) => {
      await writes.recordStep(stepRecord(runId, 0))
      await writes.recordExecResult(execResult(runId, 0, 0))
      throw new Error('the worker died before the commit')
    })
    await expect(failed).rejects.toThrow('the worker died before the commit')
    expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(0)
    expect(await countRows(db.url, 'exec_results', 'run_id = $1', [runId])).toBe(0)

    await store.together('test', async (writes) => {
      await writes.recordStep(stepRecord(runId, 0))
      await writes.recordExecResult(execResult(runId, 0, 0))
      await writes.appendMessages(runId, 0, [{ role: 'user', content: 'goal' }])
    })
    expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(1)
    expect(await countRows(db.url, 'exec_results', 'run_id = $1', [runId])).toBe(1)
    expect(await countRows(db.url, 'messages', 'run_id = $1', [runId])).toBe(1)
  })

  it('send writes made together without waiting for each other, and roll all back when one fails', async () => {
    const runId = `pipelined-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    // The second write names a run that does not exist: the server refuses it, the third then meets an
    // aborted transaction, and the error reported is the refused write's own.
    const failed = store.together('test', (writes) =>
      Promise.all([
        writes.recordStep(stepRecord(runId, 0)),
        writes.recordExecResult(execResult(`missing-${randomUUID()}`, 0, 0)),
        writes.appendMessages(runId, 0, [{ role: 'user', content: 'goal' }]),
      ]),
    )
    await expect(failed).rejects.toThrow(/has no row in runs/)
    expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(0)
    expect(await countRows(db.url, 'messages', 'run_id = $1', [runId])).toBe(0)

    const written = await store.together('test', (writes) =>
      Promise.all([
        writes.recordStep(stepRecord(runId, 0)),
        writes.recordExecResult(execResult(runId, 0, 0)),
        writes.appendMessages(runId, 0, [
          { role: 'user', content: 'goal' },
          { role: 'user', content: 'more' },
        ]),
      ]),
    )
    expect(written).toEqual([true, true, 2])
    expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(1)
    expect(await countRows(db.url, 'exec_results', 'run_id = $1', [runId])).toBe(1)
    expect(await countRows(db.url, 'messages', 'run_id = $1', [runId])).toBe(2)
    // The connection is fit for the next transaction (nothing left open on it).
    await store.together('test', (writes) => writes.recordStep(stepRecord(runId, 1)))
    expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(2)
  })

  it('treat a retried write as a no-op that reports the row as its own', async () => {
    const runId = `retry-${randomUUID()}`
    expect(await store.recordRunStarted(runStarted(runId))).toBe(true)
    expect(await store.recordRunStarted(runStarted(runId, { goal: 'a later, different goal' }))).toBe(false)
    expect(await store.recordStep(stepRecord(runId, 0))).toBe(true)
    expect(await store.recordStep(stepRecord(runId, 0))).toBe(false)
    expect(await store.recordPolicyEvents([refusal(runId, 0, 0), refusal(runId, 0, 0)])).toBe(1)
    expect(await store.recordPolicyEvents([refusal(runId, 0, 0), refusal(runId, 0, 1)])).toBe(1)
    expect(await store.recordPolicyEvents([])).toBe(0)
    const summary = await store.runSummary(runId)
    expect(summary?.goal).toBe('make the failing test pass')
  })

  it('move a run’s finish forward in workflow time only', async () => {
    const runId = `finish-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    const finish = { runId, steps: 3, inputTokens: 300, outputTokens: 30 }
    expect(await store.recordRunFinished({ ...finish, outcome: 'verified', finishedAt: at(100) })).toBe(true)
    expect(await store.recordRunFinished({ ...finish, outcome: 'verified', finishedAt: at(100) })).toBe(true)
    // A stale retry of an earlier finish (e.g. before a reset) cannot overwrite the later one.
    expect(await store.recordRunFinished({ ...finish, outcome: 'failed', finishedAt: at(50) })).toBe(false)
    expect((await store.runSummary(runId))?.outcome).toBe('verified')
    expect(await store.recordRunFinished({ ...finish, outcome: 'step-cap', finishedAt: at(200) })).toBe(true)
    expect((await store.runSummary(runId))?.outcome).toBe('step-cap')

    await expect(
      store.recordRunFinished({ ...finish, runId: 'never-started', outcome: 'verified', finishedAt: at(1) }),
    ).rejects.toThrow(/run 'never-started' was never recorded/)
  })

  it('give a folder to one running run of a queue at a time, even to runs asking at once', async () => {
    const folder = `/claims/${randomUUID()}`
    const runs = Array.from({ length: 12 }, (_, i) => `claim-${i}-${randomUUID()}`)
    await Promise.all(runs.map((runId, i) => store.recordRunStarted(runStarted(runId, { startedAt: at(i) }))))
    // Every worker's pool asks for the folder for several runs at once: exactly one gets it.
    const answers = await Promise.all(
      runs.map((runId, i) => (workers[i % WORKERS] as AuditStore).claimWorkspace(runId, folder)),
    )
    const granted = runs.filter((_, i) => answers[i] === undefined)
    expect(granted).toHaveLength(1)
    const [holder] = granted as [string]
    for (const answer of answers.filter((a) => a !== undefined)) {
      expect(answer).toMatchObject({ runId: holder, path: folder, goal: 'make the failing test pass' })
    }
    const other = runs.find((runId) => runId !== holder) as string
    // Asking again keeps it; a folder inside it, one around it, and one of the same queue named alike are
    // judged by the path's parts, not its text.
    expect(await store.claimWorkspace(holder, folder)).toBeUndefined()
    expect(await store.claimWorkspace(other, `${folder}/src/`)).toMatchObject({ runId: holder })
    expect(await store.claimWorkspace(other, '/claims')).toMatchObject({ runId: holder })
    expect(await store.claimWorkspace(other, '/')).toMatchObject({ runId: holder })
    expect(await store.claimWorkspace(other, `${folder}-2`)).toBeUndefined()
    // Another queue's run does not share the folder's claim.
    const elsewhere = `claim-elsewhere-${randomUUID()}`
    await store.recordRunStarted(runStarted(elsewhere, { taskQueue: 'other-queue' }))
    expect(await store.claimWorkspace(elsewhere, folder)).toBeUndefined()
    // Once the holder has finished, the next run takes the folder over.
    await store.recordRunFinished({
      runId: holder,
      steps: 1,
      inputTokens: 0,
      outputTokens: 0,
      outcome: 'verified',
      finishedAt: at(100),
    })
    const next = runs.find((runId) => runId !== holder && runId !== other) as string
    expect(await store.claimWorkspace(next, folder)).toBeUndefined()
    expect(await store.claimWorkspace(other, folder)).toMatchObject({ runId: next })
    // A holder passed over (Temporal knows it no more) does not count; the claim is then the asker's.
    expect(await store.claimWorkspace(other, folder, [next])).toBeUndefined()
    expect(await store.claimWorkspace(next, `${folder}/deeper`)).toMatchObject({ runId: other, path: folder })

    await expect(store.claimWorkspace(other, 'relative/path')).rejects.toThrow(/not an absolute path/)
    await expect(store.claimWorkspace('never-started', '/x')).rejects.toThrow(/record its start first/)
  })

  it('let a later exec attempt replace an earlier one, and never the reverse', async () => {
    const runId = `exec-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    const first = execResult(runId, 1, 0, { attempt: 1, exitCode: 1, status: 'exited' })
    const second = execResult(runId, 1, 0, { attempt: 2, exitCode: 0, status: 'exited' })
    expect(await store.recordExecResult(first)).toBe(true)
    expect(await store.recordExecResult(second)).toBe(true)
    expect(await store.recordExecResult(second)).toBe(false)
    expect(await store.recordExecResult(first)).toBe(false)
    const [command] = await store.executedCommands({ runId })
    expect(command).toMatchObject({ attempt: 2, exitCode: 0 })
    expect(await countRows(db.url, 'exec_results', 'run_id = $1', [runId])).toBe(1)
  })

  it('keep the first approval decision and report a different later one as lost', async () => {
    const { approvalId, approve: answered } = await requested('approval')
    const approve = { ...answered, remember: 'npm publish --dry-run*' }
    const { approvalId: _, ...decision } = approve
    expect(await store.recordApprovalDecision(approve)).toEqual({ won: true, stored: decision })
    // The activity retried: same decision, still reported as won.
    expect((await store.recordApprovalDecision(approve)).won).toBe(true)

    const timeout = await store.recordApprovalDecision({
      approvalId,
      decision: 'timeout',
      decidedBy: 'tether',
      channel: 'timeout',
      decidedAt: at(3600),
      reason: 'timeout',
    })
    expect(timeout.won).toBe(false)
    expect(timeout.stored).toMatchObject({ decision: 'approved', decidedBy: 'ana', channel: 'update' })

    await expect(
      store.recordApprovalDecision({ ...approve, approvalId: 'no-such-approval' }),
    ).rejects.toThrow(/approval 'no-such-approval' was never requested/)
  })

  it("commit a decision's events and its command's attempt with it, and a lost one's refusal only", async () => {
    const { runId, approvalId, approve: answered } = await requested('approval-rows')
    const decided = refusal(runId, 1, 0, { kind: 'decision', effect: 'allow', source: 'update' })
    const begin = { key: { runId, step: 1, call: 0, attempt: 1 }, worker: 'worker-a' }
    const approve = {
      ...answered,
      answers: [
        { approver: 'ana', decision: 'approve' as const, channel: 'update' as const, answeredAt: at(59) },
      ],
    }
    const won = await store.recordApprovalDecision(approve, { events: [decided], begin })
    expect(won.won).toBe(true)
    const rows = async () => ({
      answers: await countRows(db.url, 'approval_answers', 'approval_id = $1', [approvalId]),
      decisions: await countRows(db.url, 'policy_events', "run_id = $1 and kind = 'decision'", [runId]),
      refusals: await countRows(db.url, 'policy_events', "run_id = $1 and kind = 'refusal'", [runId]),
      attempts: await countRows(db.url, 'exec_attempts', 'run_id = $1 and ended_at is null', [runId]),
    })
    expect(await rows()).toEqual({ answers: 1, decisions: 1, refusals: 0, attempts: 1 })

    // A different decision loses: its decision event is dropped, the refusal its re-check met is kept.
    const lost = await store.recordApprovalDecision(
      { ...approve, decision: 'denied', decidedBy: 'bo', answers: [] },
      {
        events: [
          refusal(runId, 1, 0, { kind: 'decision', effect: 'deny', source: 'signal' }),
          refusal(runId, 1, 0),
        ],
      },
    )
    expect(lost).toMatchObject({ won: false, stored: { decision: 'approved', decidedBy: 'ana' } })
    expect(await rows()).toEqual({ answers: 1, decisions: 1, refusals: 1, attempts: 1 })

    // An approval never requested: refused, and nothing of it written.
    const other = `approval-none-${randomUUID()}`
    await store.recordRunStarted(runStarted(other))
    await expect(
      store.recordApprovalDecision(
        { ...approve, approvalId: 'no-such-approval' },
        { events: [refusal(other, 1, 0)], begin: { ...begin, key: { ...begin.key, runId: other } } },
      ),
    ).rejects.toThrow(/approval 'no-such-approval' was never requested/)
    expect(await countRows(db.url, 'policy_events', 'run_id = $1', [other])).toBe(0)
    expect(await countRows(db.url, 'exec_attempts', 'run_id = $1', [other])).toBe(0)
  })

  it('let exactly one of several racing different decisions win', async () => {
    const { approvalId } = await requested('approval-race')
    const outcomes = await Promise.all(
      workers.map((w, i) =>
        w.recordApprovalDecision({
          approvalId,
          decision: i % 2 ? 'denied' : 'approved',
          decidedBy: `approver-${i}`,
          channel: 'signal',
          decidedAt: at(100 + i),
        }),
      ),
    )
    const winners = outcomes.filter((o) => o.won)
    expect(winners).toHaveLength(1)
    expect(outcomes.every((o) => o.stored.decidedBy === winners[0]?.stored.decidedBy)).toBe(true)
  })

  it('store the transcript exactly, refuse gaps and a different message at a taken seq', async () => {
    const runId = `messages-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    const tricky = [
      { role: 'user', content: 'NUL \u0000 inside, a lone surrogate \ud800, emoji 🧵, quotes "\'\\' },
      {
        role: 'assistant',
        toolCalls: [{ id: 'c1', name: 'exec', args: { argv: ['sh', '-c', 'a && b; $(c)'] } }],
      },
      'a bare string message',
      null,
    ]
    expect(await store.appendMessages(runId, 0, tricky)).toBe(4)
    expect(await store.appendMessages(runId, 2, tricky.slice(2))).toBe(0)
    const stored = await store.loadMessages(runId)
    expect(stored.map((m) => m.content)).toEqual(tricky)
    expect(stored.map((m) => [m.seq, m.role])).toEqual([
      [0, 'user'],
      [1, 'assistant'],
      [2, undefined],
      [3, undefined],
    ])
    expect(await store.messageCount(runId)).toBe(4)
    expect((await store.loadMessages(runId, { fromSeq: 1, limit: 2 })).map((m) => m.seq)).toEqual([1, 2])

    await expect(store.appendMessages(runId, 6, [{ role: 'tool' }])).rejects.toThrow(AuditConflictError)
    await expect(store.appendMessages(runId, 6, [{ role: 'tool' }])).rejects.toThrow(
      /seq 6 would leave a gap/,
    )
    await expect(store.appendMessages(runId, 3, [{ role: 'other' }])).rejects.toThrow(
      /already has a different message at seq 3/,
    )
    expect((await store.loadMessages(runId, { fromSeq: 3 }))[0]?.content).toBeNull()
    expect(await store.messageCount(runId)).toBe(4)
  })

  it('replace a transcript message only from a later attempt of its writer', async () => {
    const runId = `messages-attempt-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    await store.appendMessages(runId, 0, [{ role: 'user', content: 'go' }])
    expect(
      await store.appendMessages(runId, 1, [{ role: 'tool', output: 'first run' }], { attempt: 1 }),
    ).toBe(1)
    expect(
      await store.appendMessages(runId, 1, [{ role: 'tool', output: 'second run' }], { attempt: 2 }),
    ).toBe(1)
    // A stale attempt arriving late changes nothing.
    expect(
      await store.appendMessages(runId, 1, [{ role: 'tool', output: 'first run' }], { attempt: 1 }),
    ).toBe(0)
    expect((await store.loadMessages(runId, { fromSeq: 1 }))[0]?.content).toEqual({
      role: 'tool',
      output: 'second run',
    })
  })

  it('refuse bad input with the field named, writing nothing', async () => {
    const runId = `input-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    const bad = [
      [() => store.recordStep(stepRecord(runId, -1)), /recordStep: step: /],
      [() => store.recordStep(stepRecord(runId, 1, { startedAt: 'yesterday' })), /recordStep: startedAt: /],
      [
        () =>
          store.recordPolicyEvents([refusal(runId, 0, 0), refusal(runId, 0, 1, { act: 'fly' as 'exec' })]),
        /recordPolicyEvents: 1\.act: /,
      ],
      [
        () =>
          store.recordExecResult(
            execResult(runId, 0, 0, { stdout: { ...execResult(runId, 0, 0).stdout, sha256: 'nope' } }),
          ),
        /recordExecResult: stdout\.sha256: /,
      ],
      [() => store.recordStep(stepRecord(`unknown-${runId}`, 0)), /recordStep: the run has no row in runs/],
      [() => store.refusedActions({ before: 'not-a-cursor' }), /refusedActions: before: not a cursor/],
      [() => store.listRuns({ limit: 0 }), /listRuns: limit must be an integer from 1 to 1000/],
    ] as const
    for (const [write, message] of bad) {
      const error = await write().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(error, String(message)).toBeInstanceOf(AuditInputError)
      expect((error as Error).message).toMatch(message)
    }
    expect(await countRows(db.url, 'policy_events', 'run_id = $1', [runId])).toBe(0)
    expect(await countRows(db.url, 'steps', 'run_id = $1', [runId])).toBe(0)
  })

  it('bound free text and keep NUL visible instead of failing the write', async () => {
    const runId = `text-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    const long = `${'h'.repeat(TEXT_LIMIT)}${'t'.repeat(TEXT_LIMIT)}`
    await store.recordStep(stepRecord(runId, 0, { observation: long }))
    await store.recordPolicyEvents([refusal(runId, 0, 0, { target: 'rm\u0000-rf' })])
    const [step] = (await store.runTimeline(runId)).filter((e) => e.type === 'step')
    expect(step?.type === 'step' && step.observation.length).toBeLessThan(TEXT_LIMIT + 100)
    expect(step?.type === 'step' && step.observation).toMatch(
      new RegExp(`^h+\\n\\[\\.\\.\\. ${TEXT_LIMIT} characters elided \\.\\.\\.\\]\\nt+$`),
    )
    const { items } = await store.refusedActions({ runId })
    expect(items[0]?.target).toBe('rm\u2400-rf')
  })

  it('record a refusal whose file target is far too long, bounded, instead of failing it', async () => {
    const runId = `long-target-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    await store.recordPolicyEvents([
      refusal(runId, 0, 0, { act: 'write', target: `a/${'x'.repeat(200_000)}` }),
    ])
    const { items } = await store.refusedActions({ runId })
    expect(items[0]?.target.length).toBeLessThan(PATH_TARGET_LIMIT + 100)
    expect(items[0]?.target).toMatch(/^a\/x+\n\[\.\.\. \d+ characters elided \.\.\.\]\nx+$/)
  })
})
