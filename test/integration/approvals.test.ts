/** Human approvals on a real dev server: Update with validator, Signal fallback, deadlines, reminders. */
import { existsSync } from 'node:fs'
import { mkdir, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { WorkflowUpdateFailedError } from '@temporalio/client'
import { describe, expect, it } from 'vitest'
import { verifyRunHistory } from '../../src/audit/index.js'
import { Policy } from '../../src/policy/index.js'
import {
  decideSignal,
  decideUpdate,
  PENDING_APPROVAL,
  pendingApprovalsQuery,
} from '../../src/workflows/index.js'
import { startAgentWorker, startScriptedRun, useAgentHarness } from '../support/agent.js'
import { recordHistory, uniqueTaskQueue } from '../support/temporal.js'

const harness = useAgentHarness()

/**
 * Exec asks by default; alice and bob may answer, by name (`identity: unsigned`: signed decisions are
 * tested in identity.test.ts); `rm` is denied in an operator layer.
 */
const policy = () =>
  Policy.fromSpec({
    ...Policy.tiered().layer('ops').denyExec('rm*').toSpec(),
    identity: 'unsigned',
    approvers: ['alice', 'bob'],
  })
const touch = (file: string) => ({ name: 'exec', args: { argv: ['touch', file] } })

function run(turns: unknown[], contract: Record<string, unknown> = {}, taskQueue = harness.taskQueue) {
  return startScriptedRun(harness, turns, {
    contract: { goal: 'touch files', ...contract },
    policy: policy(),
    taskQueue,
  })
}

async function waitForPending(handle: Awaited<ReturnType<typeof run>>['handle'], count = 1) {
  await expect
    .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
    .toBe(count)
  return handle.query(pendingApprovalsQuery)
}

describe('approvals', () => {
  it('runs an approved command and records who approved it, when, why and how', async () => {
    const { ws, handle } = await run([{ toolCalls: [touch('approved.txt')] }, { text: 'done' }])
    try {
      const [pending] = await waitForPending(handle)
      expect(pending).toMatchObject({
        act: 'exec',
        target: 'touch approved.txt',
        approvers: ['alice', 'bob'],
      })
      expect(pending?.tree).toContain('touch')
      const mine = await harness.audit.pendingApprovals({ approver: 'alice' })
      expect(mine.map((a) => a.approvalId)).toContain(pending?.approvalId)
      expect(
        (await harness.audit.pendingApprovals({ approver: 'mallory' })).map((a) => a.approvalId),
      ).not.toContain(pending?.approvalId)
      // The search attribute lists the waiting run (visibility lags: poll).
      await expect
        .poll(
          async () => {
            const ids: string[] = []
            for await (const wf of harness.client.workflow.list({
              query: `${PENDING_APPROVAL.name} = 'true'`,
            })) {
              ids.push(wf.workflowId)
            }
            return ids.includes(handle.workflowId)
          },
          { timeout: 30_000 },
        )
        .toBe(true)

      const answer = await handle.executeUpdate(decideUpdate, {
        args: [
          { approvalId: pending!.approvalId, decision: 'approve', approver: 'alice', reason: 'harmless' },
        ],
      })
      expect(answer).toMatchObject({ approvalId: pending!.approvalId, decision: 'approved' })
      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      expect(existsSync(join(ws.path, 'approved.txt'))).toBe(true)
      await recordHistory(handle, 'approval-approved')

      const [row] = (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'approval')
      expect(row).toMatchObject({
        decision: 'approved',
        decidedBy: 'alice',
        channel: 'update',
        reason: 'harmless',
      })
      const decisions = (await harness.audit.runTimeline(handle.workflowId)).filter(
        (e) => e.type === 'policy',
      )
      expect(decisions).toEqual([
        expect.objectContaining({ kind: 'decision', source: 'update', decidedBy: 'alice', effect: 'allow' }),
      ])
      await expect
        .poll(async () => {
          const ids: string[] = []
          for await (const wf of harness.client.workflow.list({
            query: `${PENDING_APPROVAL.name} = 'true'`,
          })) {
            ids.push(wf.workflowId)
          }
          return ids.includes(handle.workflowId)
        })
        .toBe(false)
    } finally {
      await ws.cleanup()
    }
  })

  it('feeds a denial and its reason to the model, and rejects a second answer', async () => {
    const { ws, handle } = await run([{ toolCalls: [touch('denied.txt')] }, { text: 'ok' }])
    try {
      const [pending] = await waitForPending(handle)
      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: pending!.approvalId, decision: 'deny', approver: 'bob', reason: 'not in prod' }],
      })
      const second = await handle
        .executeUpdate(decideUpdate, {
          args: [{ approvalId: pending!.approvalId, decision: 'approve', approver: 'alice' }],
        })
        .catch((error: unknown) => error)
      expect(second).toBeInstanceOf(WorkflowUpdateFailedError)
      expect((second as Error).cause).toMatchObject({
        type: 'AlreadyDecided',
        nonRetryable: true,
        message: expect.stringContaining('already denied by bob'),
      })
      await handle.result()
      expect(existsSync(join(ws.path, 'denied.txt'))).toBe(false)
      const transcript = (await harness.audit.loadMessages(handle.workflowId)).map((m) =>
        JSON.stringify(m.content),
      )
      expect(transcript.some((m) => m.includes('denied by bob: not in prod'))).toBe(true)
    } finally {
      await ws.cleanup()
    }
  })

  it('rejects unknown ids, unlisted approvers and malformed answers without a trace in history', async () => {
    const { ws, handle } = await run([{ toolCalls: [touch('x.txt')] }, { text: 'ok' }])
    try {
      const [pending] = await waitForPending(handle)
      const attempts = [
        { approvalId: 'no-such-id', decision: 'approve', approver: 'alice' },
        { approvalId: pending!.approvalId, decision: 'approve', approver: 'mallory' },
        { approvalId: pending!.approvalId, decision: 'yes please', approver: 'alice' },
      ]
      const errors: unknown[] = []
      for (const attempt of attempts) {
        const error = await handle
          .executeUpdate(decideUpdate, { args: [attempt as never] })
          .catch((e: unknown) => e)
        expect(error).toBeInstanceOf(WorkflowUpdateFailedError)
        errors.push((error as Error).cause)
      }
      // Typed and non-retryable, so a client in any SDK can branch on the type.
      expect(errors).toEqual([
        expect.objectContaining({
          type: 'UnknownApproval',
          nonRetryable: true,
          message: 'no approval no-such-id in this run',
        }),
        expect.objectContaining({
          type: 'NotAnApprover',
          message: expect.stringContaining('mallory may not answer'),
        }),
        expect.objectContaining({
          type: 'InvalidDecision',
          message: expect.stringContaining('malformed decision'),
        }),
      ])
      const history = await handle.fetchHistory()
      const updates = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)
      expect(updates).toHaveLength(0)
      expect(await handle.query(pendingApprovalsQuery)).toHaveLength(1)
      await handle.cancel()
    } finally {
      await ws.cleanup()
    }
  })

  it('denies with reason timeout when nobody answers, after reminding on the interval', async () => {
    const received: Array<Record<string, unknown>> = []
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (chunk) => {
        body += chunk
      })
      req.on('end', () => {
        received.push(JSON.parse(body))
        res.end('ok')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    const { ws, handle } = await run([{ toolCalls: [touch('late.txt')] }, { text: 'ok' }], {
      approvals: {
        timeout: '5s',
        reminderEvery: '1500ms',
        webhook: { url: `http://127.0.0.1:${port}/hook` },
      },
    })
    try {
      await handle.result()
      expect(existsSync(join(ws.path, 'late.txt'))).toBe(false)
      const [row] = (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'approval')
      expect(row).toMatchObject({ decision: 'timeout', channel: 'timeout', reason: 'timeout' })
      const steps = (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'step')
      expect(steps[0]).toMatchObject({ decision: 'exec timed out unanswered: touch late.txt' })
      expect(received[0]).toMatchObject({ type: 'approval.requested', runId: handle.workflowId })
      const reminders = received.filter((r) => r.type === 'approval.reminder')
      expect(reminders.length).toBeGreaterThanOrEqual(2)
      await recordHistory(handle, 'approval-timeout-reminders')
      expect(JSON.stringify(received[0])).toContain('tether approve')
    } finally {
      server.close()
      await ws.cleanup()
    }
  })

  it('applies a signal sent while no worker runs once a worker is back', async () => {
    const taskQueue = uniqueTaskQueue('offline')
    const offline = await startAgentWorker(harness.audit, { taskQueue })
    const { ws, handle } = await run([{ toolCalls: [touch('later.txt')] }, { text: 'ok' }], {}, taskQueue)
    try {
      const [pending] = await waitForPending(handle)
      await offline.stop()
      await handle.signal(decideSignal, {
        approvalId: pending!.approvalId,
        decision: 'approve',
        approver: 'bob',
      })
      const back = await startAgentWorker(harness.audit, { taskQueue })
      try {
        await handle.result()
      } finally {
        await back.stop()
      }
      expect(existsSync(join(ws.path, 'later.txt'))).toBe(true)
      const [row] = (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'approval')
      expect(row).toMatchObject({ decision: 'approved', decidedBy: 'bob', channel: 'signal' })
      await recordHistory(handle, 'approval-signal-offline')
    } finally {
      await ws.cleanup()
    }
  })

  it('remembers an approved rule for later steps, but never for a shell', async () => {
    const { ws, handle } = await run([
      { toolCalls: [touch('one.txt')] },
      { toolCalls: [touch('one.txt')] },
      { toolCalls: [{ name: 'exec', args: { argv: ['bash', '-c', 'touch three.txt'] } }] },
      { toolCalls: [{ name: 'exec', args: { argv: ['bash', '-c', 'touch four.txt'] } }] },
      { text: 'ok' },
    ])
    try {
      const [first] = await waitForPending(handle)
      expect(first?.remember).toEqual({ exact: 'touch one.txt' })
      const remembered = await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: first!.approvalId, decision: 'approve', approver: 'alice', remember: true }],
      })
      expect(remembered.remember).toBe('touch one.txt')
      // The same command in the next step runs on the remembered rule; the next ask is the shell.
      const [shell] = await waitForPending(handle)
      expect(shell?.target).toContain('bash')
      expect(shell?.remember).toEqual({
        refused: 'bash runs whatever program text it is given, so it is approved one call at a time',
      })
      const refused = await handle
        .executeUpdate(decideUpdate, {
          args: [{ approvalId: shell!.approvalId, decision: 'approve', approver: 'alice', remember: true }],
        })
        .catch((error: unknown) => error)
      expect((refused as Error).cause).toMatchObject({
        type: 'InvalidDecision',
        message: expect.stringContaining('offers no rule to remember'),
      })
      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: shell!.approvalId, decision: 'approve', approver: 'alice' }],
      })
      const [again] = await waitForPending(handle)
      expect(again?.target).toContain('touch four.txt')
      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: again!.approvalId, decision: 'approve', approver: 'bob' }],
      })
      await handle.result()
      for (const file of ['one.txt', 'three.txt', 'four.txt'])
        expect(existsSync(join(ws.path, file))).toBe(true)
      expect(
        (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'approval'),
      ).toHaveLength(3)
    } finally {
      await ws.cleanup()
    }
  })

  it('keeps refusing an approved action that a layered deny forbids by the time it would run', async () => {
    // The write asks; while it waits, its target is swapped for a link to a secret the builtin layer denies.
    const { ws, handle } = await run([
      { toolCalls: [{ name: 'write_file', args: { path: 'notes/out.txt', content: 'x' } }] },
      { text: 'ok' },
    ])
    try {
      await mkdir(join(ws.path, 'notes'), { recursive: true })
      const [pending] = await waitForPending(handle)
      expect(pending?.act).toBe('write')
      await writeFile(join(ws.path, '.env'), 'SECRET=1\n')
      await rm(join(ws.path, 'notes/out.txt'), { force: true })
      await symlink(join(ws.path, '.env'), join(ws.path, 'notes/out.txt'))
      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: pending!.approvalId, decision: 'approve', approver: 'alice' }],
      })
      await handle.result()
      const refusals = (await harness.audit.refusedActions({ runId: handle.workflowId, limit: 10 })).items
      expect(refusals).toHaveLength(1)
      expect(refusals[0]?.reason).toContain('an approval never crosses a deny')
      const { readFile } = await import('node:fs/promises')
      expect(await readFile(join(ws.path, '.env'), 'utf8')).toBe('SECRET=1\n')
      // The file tool's own activity judged it again and recorded the decision: the audit matches history.
      expect(await harness.audit.approval(pending!.approvalId)).toMatchObject({ decision: 'approved' })
      const verified = await verifyRunHistory(harness.client, harness.audit, handle.workflowId)
      expect(verified.findings).toEqual([])
      await recordHistory(handle, 'approval-file-refused')
    } finally {
      await ws.cleanup()
    }
  })

  it('judges an approved command again in its own activity: a deny by then stops it, and the audit still matches history', async () => {
    // `npm run site` asks; while it waits, the script it runs becomes a server that never exits (denied).
    const site = { name: 'exec', args: { argv: ['npm', 'run', 'site'] } }
    const script = (site: string) => JSON.stringify({ name: 'p', scripts: { site } })
    const { ws, handle } = await startScriptedRun(harness, [{ toolCalls: [site] }, { text: 'ok' }], {
      policy: policy(),
      files: { 'package.json': script('echo built') },
    })
    try {
      const [pending] = await waitForPending(handle)
      expect(pending).toMatchObject({ act: 'exec', target: 'npm run site' })
      await writeFile(join(ws.path, 'package.json'), script('vite'))
      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: pending!.approvalId, decision: 'approve', approver: 'alice' }],
      })
      await handle.result()
      const runId = handle.workflowId
      expect(await harness.audit.executedCommands({ runId })).toEqual([])
      const refusals = (await harness.audit.refusedActions({ runId, limit: 10 })).items
      expect(refusals.map((r) => r.reason)).toContainEqual(
        expect.stringContaining('an approval never crosses a deny'),
      )
      expect(await harness.audit.approval(pending!.approvalId)).toMatchObject({
        decision: 'approved',
        decidedBy: 'alice',
      })
      expect(JSON.stringify(await harness.audit.loadMessages(runId))).toContain('[exec refused] npm run site')
      const verified = await verifyRunHistory(harness.client, harness.audit, runId)
      expect(verified.findings).toEqual([])
    } finally {
      await ws.cleanup()
    }
  })

  it('resolves pending approvals as cancelled when the run is cancelled', async () => {
    const { ws, handle } = await run([{ toolCalls: [touch('never.txt')] }])
    try {
      const [pending] = await waitForPending(handle)
      await handle.cancel()
      await handle.result().catch(() => undefined)
      const approvals = await harness.audit.pendingApprovals({})
      expect(approvals.map((a) => a.approvalId)).not.toContain(pending!.approvalId)
      const [row] = (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'approval')
      expect(row).toMatchObject({ decision: 'cancelled', channel: 'cancel' })
    } finally {
      await ws.cleanup()
    }
  })
})
