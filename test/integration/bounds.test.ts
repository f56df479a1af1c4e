/**
 * Nothing anyone sends can end a run: an answer of 1.5 MB by Signal and by Update, and a start that another
 * client sent past the limits, against a real server; and the inbox answers a bad address or body in words.
 */
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { startAgentRun, updateRejection } from '../../src/embed/index.js'
import { type Inbox, startInbox } from '../../src/inbox/index.js'
import { Policy } from '../../src/policy/index.js'
import type { PendingApproval } from '../../src/run/index.js'
import { agentRun, decideSignal, decideUpdate, pendingApprovalsQuery } from '../../src/workflows/index.js'
import { npmWorkspace, startScriptedRun, testPolicy, useAgentHarness, writeScript } from '../support/agent.js'
import { tether } from '../support/cli.js'

const harness = useAgentHarness()
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

async function waitForPending(handle: {
  query: (q: typeof pendingApprovalsQuery) => Promise<PendingApproval[]>
}) {
  await expect
    .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
    .toBe(1)
  const [pending] = await handle.query(pendingApprovalsQuery)
  return pending as PendingApproval
}

describe('an answer of 1.5 MB', () => {
  it('by Signal and by Update, is refused in bounded words and recorded bounded; the run goes on', async () => {
    const { ws, handle } = await startScriptedRun(harness, [
      { toolCalls: [exec('touch', 'one.txt')] },
      { text: 'done' },
    ])
    try {
      const { approvalId } = await waitForPending(handle)
      const huge = 'm'.repeat(1_500_000)
      await handle.signal(decideSignal, { approvalId, decision: 'approve', approver: huge })
      const refused = await handle
        .executeUpdate(decideUpdate, {
          args: [{ approvalId, decision: 'deny', approver: 'alice', reason: 'x', [huge]: 1 }],
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        )
      const rejection = updateRejection(refused)
      expect(rejection?.type).toBe('InvalidDecision')
      expect(rejection?.message.length).toBeLessThan(700)
      // The Signal was recorded as a refused answer (a bounded claim), and the approval still waits.
      await expect
        .poll(
          async () =>
            (await harness.audit.runTimeline(handle.workflowId)).filter(
              (e) => e.type === 'policy' && e.source.startsWith('signal-rejected:'),
            ),
          { timeout: 60_000 },
        )
        .toHaveLength(1)
      expect((await handle.describe()).status.name).toBe('RUNNING')
      expect(await handle.query(pendingApprovalsQuery)).toHaveLength(1)

      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId, decision: 'approve', approver: 'alice' }],
      })
      expect((await handle.result()).outcome).toBe('finished')
      const [event] = (await harness.audit.runTimeline(handle.workflowId)).filter(
        (e) => e.type === 'policy' && e.source.startsWith('signal-rejected:'),
      )
      expect(event).toMatchObject({
        decidedBy: expect.stringMatching(/^m{64}… \[1,499,936 more characters not kept\]$/),
        reason: expect.stringMatching(/^rejected signal answer: malformed decision: approver: /),
      })
      expect(JSON.stringify(event).length).toBeLessThan(3_000)
    } finally {
      await ws.cleanup()
    }
  })
})

describe('a start another client sent past the limits', () => {
  it('fails the run in one line before it schedules anything', async () => {
    const handle = await harness.client.workflow.start(agentRun, {
      taskQueue: harness.taskQueue,
      workflowId: `run-oversized-${Date.now()}`,
      args: [
        { contract: { goal: 'g'.repeat(1_500_000), workspace: '/tmp' }, policy: Policy.tiered().toSpec() },
      ],
    })
    const error = await handle.result().then(
      () => undefined,
      (caught: unknown) => caught,
    )
    expect(error).toBeInstanceOf(WorkflowFailedError)
    const cause = (error as WorkflowFailedError).cause
    expect(cause).toBeInstanceOf(ApplicationFailure)
    expect(cause).toMatchObject({
      type: 'ContractError',
      message: expect.stringMatching(/^the goal has 1,500,000 characters; the goal limit is 65,536; /),
    })
    const events = (await handle.fetchHistory()).events ?? []
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([])
  })
})

describe('a run sharing a worker', () => {
  it('carries its fairness key — its tenant, or itself — and goes first when a person waits on it', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, { turns: [{ text: 'done' }] } as never)}`
      const start = (scheduling?: { tenant?: string; interactive?: boolean; fair?: boolean }) =>
        startAgentRun(harness.client, {
          contract: { goal: 'g', workspace: ws.path, model },
          policy: testPolicy(),
          taskQueue: harness.taskQueue,
          runId: `run-fair-${Math.random().toString(36).slice(2)}`,
          ...(scheduling ? { scheduling } : {}),
        })
      const priority = async (handle: Awaited<ReturnType<typeof start>>) => {
        expect((await handle.result()).outcome).toBe('finished')
        const { priorityKey, fairnessKey } =
          (await handle.describe()).raw.workflowExecutionInfo?.priority ?? {}
        return { priorityKey, fairnessKey }
      }
      const batch = await start()
      expect(await priority(batch)).toEqual({ priorityKey: 3, fairnessKey: `run:${batch.workflowId}` })
      expect(await priority(await start({ tenant: 'acme', interactive: true }))).toEqual({
        priorityKey: 2,
        fairnessKey: 'tenant:acme',
      })
      // A tenant too long for a key is named by its digest, whole: no two share a turn by a common prefix.
      const long = await priority(await start({ tenant: 'a'.repeat(100) }))
      expect(long.fairnessKey).toMatch(/^sha256:[\w-]{43}$/)
    } finally {
      await ws.cleanup()
    }
  })
})

describe('the inbox, asked for what it has not', () => {
  let inbox: Inbox
  let cookie: string
  beforeAll(async () => {
    inbox = await startInbox({
      audit: harness.audit,
      client: harness.client,
      namespace: inject('namespace'),
      port: 0,
    })
    const login = await fetch(inbox.loginUrl, { redirect: 'manual' })
    cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] as string
  })
  afterAll(async () => {
    await inbox?.close()
  })
  const get = (path: string, init: RequestInit = {}) =>
    fetch(`${inbox.url}${path}`, { ...init, headers: { cookie, ...init.headers } })

  it('answers a broken %-escape and a cursor it never made with 400 and words, not 500', async () => {
    for (const path of ['/runs/%E0%A4%A', '/approvals/%zz', '/live/runs/%E0%A4%A', '/runs?before=nonsense']) {
      const response = await get(path)
      expect(response.status, path).toBe(400)
      const page = await response.text()
      expect(page).toContain('That address holds')
      expect(page).not.toMatch(/URIError|listRuns|at .*\.ts/)
    }
  })

  it('calls a body of 300 KB too large, not "not JSON"', async () => {
    const response = await get('/api/approvals/some-id/answer', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: new URL(inbox.url).origin },
      body: JSON.stringify({ approver: 'x'.repeat(300_000) }),
    })
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual({
      ok: false,
      type: 'InvalidDecision',
      message: 'the body is over 256 KiB; an answer is far smaller',
    })
  })
})

describe('the tether command, given what it must refuse', () => {
  it('refuses --max-tokens 0x10, --max-time "30 m" and a run id with a line break, each in one line', async () => {
    const ws = await npmWorkspace()
    try {
      const run = ['run', '--goal', 'g', '--workspace', ws.path, '--verify', 'none']
      for (const [flags, line] of [
        [
          ['--max-tokens', '0x10'],
          'error: --max-tokens must be a positive whole number (digits only), not "0x10"',
        ],
        [
          ['--max-time', '30 m'],
          'error: invalid task contract: budgets.maxWallTime: expected a duration such as "1500ms", "30s", "15m", "2h" or "1d", got "30 m"',
        ],
        [
          ['--id', 'run-1\nrun-2'],
          'error: the run id holds U+000A at character 6; write it without control, invisible, bidirectional or unusual space characters',
        ],
      ] as const) {
        const ran = await tether([...run, ...flags], { TETHER_TASK_QUEUE: harness.taskQueue })
        expect(ran.code, flags.join(' ')).toBe(1)
        expect(ran.stderr.trim().split('\n')).toEqual([line])
      }
    } finally {
      await ws.cleanup()
    }
  })

  it('exits 1 for a run the audit does not have, and names no function of its own', async () => {
    const missing = await tether(['audit', 'ran', '--run', 'no-such-run'])
    expect(missing.code).toBe(1)
    expect(missing.stderr.trim()).toBe('error: no run no-such-run in the audit; list runs with `tether ls`')
    const empty = await tether(['show', ''])
    expect(empty.code).toBe(1)
    expect(empty.stderr.trim()).toBe('error: the run id is empty; name a run (`tether ls` lists them)')
  })
})
