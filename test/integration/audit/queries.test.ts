/** The audit queries on a real PostgreSQL: each returns exactly what was written, in its documented order. */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type AuditStore, openAudit, type PolicyEventRow } from '../../../src/audit/index.js'
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

// Three runs: A finished (refusals, commands, a decided approval, a passing gate), B still running with
// approvals waiting, C just started.
const A = 'run-a'
const B = 'run-b'
const C = 'run-c'

describe('audit queries', () => {
  let db: TestDatabase
  let store: AuditStore

  beforeAll(async () => {
    db = await createTestDatabase('queries')
    store = await openAudit({ databaseUrl: db.url })
    await store.recordRunStarted(runStarted(A, { startedAt: at(0) }))
    await store.recordRunStarted(runStarted(B, { startedAt: at(5), parentRunId: 'parent-1' }))
    await store.recordRunStarted(runStarted(C, { startedAt: at(9) }))

    for (const step of [0, 1, 2]) await store.recordStep(stepRecord(A, step))
    await store.recordExecResult(execResult(A, 0, 0, { argv: ['npm', 'ci'] }))
    await store.recordExecResult(
      execResult(A, 2, 0, {
        status: 'timed-out',
        exitCode: undefined,
        signal: 'SIGKILL',
        durationMs: 900_000,
      }),
    )
    // Two refusals at the same instant: the cursor's tiebreak must still page through both.
    await store.recordPolicyEvents([
      refusal(A, 1, 0, { at: at(12) }),
      refusal(A, 1, 1, { at: at(12), act: 'read', target: '.env', rule: '.env', layer: 'builtin-secrets' }),
    ])
    await store.recordApprovalRequested(
      approvalRequest('approval-a', A, { step: 1, call: 2, requestedAt: at(13) }),
    )
    await store.recordApprovalDecision({
      approvalId: 'approval-a',
      decision: 'approved',
      decidedBy: 'ana',
      channel: 'update',
      decidedAt: at(14),
    })
    await store.recordPolicyEvents([
      refusal(A, 1, 2, {
        kind: 'decision',
        effect: 'allow',
        source: 'update',
        decidedBy: 'ana',
        reason: 'approved',
        target: 'npm publish',
        at: at(14),
      }),
    ])
    await store.recordExecResult(execResult(A, 1, 2, { argv: ['npm', 'publish'], startedAt: at(15) }))
    await store.recordGateEvent({ runId: A, step: 2, kind: 'gate_output', detail: '3 passing', at: at(26) })
    await store.recordGateEvent({
      runId: A,
      step: 2,
      kind: 'gate_passed',
      detail: 'npm test exited 0',
      at: at(27),
    })
    await store.recordRunFinished({
      runId: A,
      outcome: 'verified',
      steps: 3,
      inputTokens: 1000,
      outputTokens: 100,
      finishedAt: at(30),
    })

    for (const step of [0, 1]) await store.recordStep(stepRecord(B, step))
    await store.recordPolicyEvents([
      refusal(B, 0, 0, { at: at(20) }),
      // A person's denial counts as refused too.
      refusal(B, 1, 0, {
        kind: 'decision',
        source: 'signal',
        decidedBy: 'bob',
        reason: 'use pnpm',
        at: at(21),
      }),
    ])
    await store.recordApprovalRequested(
      approvalRequest('wait-ana', B, { call: 1, requestedAt: at(22), approvers: ['ana'] }),
    )
    await store.recordApprovalRequested(approvalRequest('wait-anyone', B, { call: 2, requestedAt: at(23) }))
    await store.recordApprovalRequested(
      approvalRequest('wait-bob', B, { call: 3, requestedAt: at(24), approvers: ['bob', 'dee'] }),
    )
  })
  afterAll(async () => {
    await store?.close()
    await db?.drop()
  })

  const key = (e: PolicyEventRow) => `${e.runId}/${e.step}/${e.call}/${e.kind}`

  it('list refused actions newest first across runs, paging through ties', async () => {
    const expected = [`${B}/1/0/decision`, `${B}/0/0/refusal`, `${A}/1/1/refusal`, `${A}/1/0/refusal`]
    const all = await store.refusedActions({ limit: 10 })
    expect(all.items.map(key)).toEqual(expected)
    expect(all.next).toBeUndefined()

    const paged: string[] = []
    let before: string | undefined
    do {
      const page = await store.refusedActions({ limit: 1, ...(before ? { before } : {}) })
      paged.push(...page.items.map(key))
      before = page.next
    } while (before)
    expect(paged).toEqual(expected)

    const first = all.items[2]
    expect(first).toMatchObject({
      runId: A,
      act: 'read',
      target: '.env',
      effect: 'deny',
      rule: '.env',
      layer: 'builtin-secrets',
      source: 'policy',
      at: at(12),
    })
  })

  it('list one run’s refusals', async () => {
    const { items } = await store.refusedActions({ runId: A })
    expect(items.map(key)).toEqual([`${A}/1/1/refusal`, `${A}/1/0/refusal`])
  })

  it('list what actually ran in a run, in step and call order', async () => {
    const commands = await store.executedCommands({ runId: A })
    expect(commands.map((c) => [c.step, c.call, c.argv.join(' '), c.status])).toEqual([
      [0, 0, 'npm ci', 'exited'],
      [1, 2, 'npm publish', 'exited'],
      [2, 0, 'npm test', 'timed-out'],
    ])
    expect(commands[2]).toMatchObject({
      signal: 'SIGKILL',
      exitCode: undefined,
      durationMs: 900_000,
      attempt: 1,
    })
    expect(commands[0]?.stdout).toEqual(execResult(A, 0, 0).stdout)
    expect(await store.executedCommands({ runId: A, limit: 1 })).toHaveLength(1)
  })

  it('list what is waiting for an approver: their approvals and the ones anyone may answer', async () => {
    const ids = async (options?: Parameters<AuditStore['pendingApprovals']>[0]) =>
      (await store.pendingApprovals(options)).map((a) => a.approvalId)
    expect(await ids()).toEqual(['wait-ana', 'wait-anyone', 'wait-bob'])
    expect(await ids({ approver: 'ana' })).toEqual(['wait-ana', 'wait-anyone'])
    expect(await ids({ approver: 'dee' })).toEqual(['wait-anyone', 'wait-bob'])
    expect(await ids({ approver: 'zed' })).toEqual(['wait-anyone'])
    expect(await ids({ runId: A })).toEqual([])
    const [pending] = await store.pendingApprovals({ approver: 'ana' })
    expect(pending).toMatchObject({
      runId: B,
      act: 'exec',
      target: 'npm publish',
      approvers: ['ana'],
      requestedAt: at(22),
      deadline: at(3600),
      decision: undefined,
    })
    expect(pending?.tree).toEqual(approvalRequest('x', B).tree)
  })

  it('give a run’s timeline in order: turn, per call approval → decision → command, then the gate', async () => {
    const timeline = await store.runTimeline(A)
    expect(timeline.map((e) => `${e.step}:${e.type}${'call' in e ? `#${e.call}` : ''}`)).toEqual([
      '0:step',
      '0:exec#0',
      '1:step',
      '1:policy#0',
      '1:policy#1',
      '1:approval#2',
      '1:policy#2',
      '1:exec#2',
      '2:step',
      '2:exec#0',
      '2:gate',
      '2:gate',
    ])
    const approval = timeline.find((e) => e.type === 'approval')
    expect(approval).toMatchObject({
      decision: 'approved',
      decidedBy: 'ana',
      channel: 'update',
      decidedAt: at(14),
    })
    const step = timeline[0]
    expect(step?.type === 'step' && step.toolCalls).toEqual(stepRecord(A, 0).toolCalls)
    expect(timeline.filter((e) => e.type === 'gate').map((e) => e.type === 'gate' && e.kind)).toEqual([
      'gate_output',
      'gate_passed',
    ])
    expect(await store.runTimeline('no-such-run')).toEqual([])
  })

  it('summarise a finished run from its final counts and a running one from its steps', async () => {
    expect(await store.runSummary(A)).toMatchObject({
      runId: A,
      status: 'finished',
      outcome: 'verified',
      steps: 3,
      inputTokens: 1000,
      outputTokens: 100,
      startedAt: at(0),
      finishedAt: at(30),
      durationMs: 30_000,
      refusals: 2,
      commands: 3,
      pendingApprovals: 0,
    })
    expect(await store.runSummary(B)).toMatchObject({
      runId: B,
      status: 'running',
      outcome: undefined,
      parentRunId: 'parent-1',
      steps: 2,
      inputTokens: 100 + 101,
      outputTokens: 10 + 11,
      durationMs: undefined,
      refusals: 2,
      commands: 0,
      pendingApprovals: 3,
    })
    expect(await store.runSummary('no-such-run')).toBeUndefined()
  })

  it('give tether’s own workspace commands in the order they ran: a clone before its checkout', async () => {
    const D = 'run-d'
    await store.recordRunStarted(runStarted(D, { startedAt: at(40) }))
    // The checkout is call -4 and the clone -3 (activities/snapshots.ts): their numbers are the other way round.
    await store.recordExecResult(
      execResult(D, 0, -3, { kind: 'workspace', argv: ['git', 'clone'], startedAt: at(41) }),
    )
    await store.recordExecResult(
      execResult(D, 0, -4, { kind: 'workspace', argv: ['git', 'checkout'], startedAt: at(42) }),
    )
    await store.recordExecResult(execResult(D, 0, 0, { argv: ['npm', 'ci'], startedAt: at(43) }))
    const timeline = await store.runTimeline(D)
    expect(timeline.flatMap((e) => (e.type === 'exec' ? [e.argv.join(' ')] : []))).toEqual([
      'git clone',
      'git checkout',
      'npm ci',
    ])
    await store.pool.query('delete from exec_results where run_id = $1', [D])
    await store.pool.query('delete from runs where run_id = $1', [D])
  })

  it('list runs newest first, by status, in pages', async () => {
    const ids = (page: { items: Array<{ runId: string }> }) => page.items.map((r) => r.runId)
    expect(ids(await store.listRuns())).toEqual([C, B, A])
    expect(ids(await store.listRuns({ status: 'running' }))).toEqual([C, B])
    expect(ids(await store.listRuns({ status: 'finished' }))).toEqual([A])
    const first = await store.listRuns({ limit: 2 })
    expect(ids(first)).toEqual([C, B])
    const second = await store.listRuns({ limit: 2, before: first.next! })
    expect(ids(second)).toEqual([A])
    expect(second.next).toBeUndefined()
  })

  it('read a timeline whose tool call holds a NUL character, with a step’s cost in micro-dollars', async () => {
    // Last: its run would count in the lists above. A model's arguments are JSON, where "\u0000" is valid
    // and stored as written; jsonb refuses it.
    const runId = `nul-${randomUUID()}`
    await store.recordRunStarted(runStarted(runId))
    const toolCalls = [{ id: 'c0', name: 'write_file', args: { path: 'a.txt', content: 'x\u0000y' } }]
    await store.recordStep(stepRecord(runId, 0, { toolCalls, cost: 1234 }))
    const [step] = await store.runTimeline(runId)
    expect(step?.type === 'step' && step.toolCalls).toEqual(toolCalls)
    expect(step).toMatchObject({ type: 'step', cost: 1234 })
    expect(step).not.toHaveProperty('costUsd')
  })
})
