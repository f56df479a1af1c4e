/**
 * Approvals bound to identity, on a real dev server: signed answers through the Update and the Signal,
 * every way a forged or misused answer is refused, two-person rules, remember no broader than what was
 * approved, and notifications that cannot be used to inject formatting.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WorkflowUpdateFailedError } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ApprovalRow, verifyRecordedAnswer } from '../../src/audit/index.js'
import { draftAnswer } from '../../src/embed/client.js'
import { actionDigest, type DecisionStatement } from '../../src/identity/index.js'
import { type ApproverKey, createKey, loadKey } from '../../src/identity/keyring.js'
import { Policy } from '../../src/policy/index.js'
import {
  type DecisionInput,
  decideSignal,
  decideUpdate,
  pendingApprovalsQuery,
} from '../../src/workflows/index.js'
import { startAgentWorker, startScriptedRun, useAgentHarness } from '../support/agent.js'
import { uniqueTaskQueue } from '../support/temporal.js'

const harness = useAgentHarness()
let dir: string
let alice: ApproverKey
let bob: ApproverKey
let mallory: ApproverKey
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-identity-'))
  const made = (name: string) => {
    createKey(name, dir)
    return loadKey(name, dir)
  }
  alice = made('alice')
  bob = made('bob')
  mallory = made('mallory')
})
afterAll(() => rm(dir, { recursive: true, force: true }))

/** Exec asks; alice and bob answer with their keys; a release needs both of them. */
function policy(): Policy {
  return Policy.tiered()
    .withApprovers([
      { name: 'alice', keys: [alice.publicKey] },
      { name: 'bob', keys: [bob.publicKey] },
    ])
    .layer('ops')
    .askExec('touch release*', { approvals: 2 })
}
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

function run(turns: unknown[], contract: Record<string, unknown> = {}, taskQueue = harness.taskQueue) {
  return startScriptedRun(harness, turns, { contract, policy: policy(), taskQueue })
}

/** The next approval of a run, as the audit records it (what an approver's tool reads and signs). */
async function nextApproval(runId: string, after: string[] = []): Promise<ApprovalRow> {
  let found: ApprovalRow | undefined
  await expect
    .poll(
      async () => {
        found = (await harness.audit.pendingApprovals({ runId })).find((a) => !after.includes(a.approvalId))
        return found !== undefined
      },
      { timeout: 60_000 },
    )
    .toBe(true)
  return found as ApprovalRow
}

function sign(
  key: ApproverKey,
  row: ApprovalRow,
  answer: Omit<DecisionInput, 'signature' | 'approvalId'>,
  statement: Partial<DecisionStatement> = {},
): DecisionInput {
  const issuedAt = statement.issuedAt ?? Date.now()
  const full: DecisionStatement = {
    run: row.runId,
    approval: row.approvalId,
    action: row.actionDigest as string,
    decision: answer.decision,
    remember: null,
    reason: answer.reason ?? null,
    replacement: null,
    issuedAt,
    ...statement,
  }
  return {
    ...answer,
    approvalId: row.approvalId,
    signature: { key: key.publicKey, value: key.sign(full), issuedAt },
  }
}

async function updateError(handle: Awaited<ReturnType<typeof run>>['handle'], input: unknown) {
  const error = await handle
    .executeUpdate(decideUpdate, { args: [input as DecisionInput] })
    .catch((e: unknown) => e)
  expect(error).toBeInstanceOf(WorkflowUpdateFailedError)
  return (error as WorkflowUpdateFailedError).cause as {
    type?: string
    message: string
    nonRetryable?: boolean
  }
}

describe('signed decisions', () => {
  it('accepts a signed approval through the Update, records the proof, and it re-verifies offline', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'signed.txt')] }, { text: 'done' }])
    try {
      const row = await nextApproval(handle.workflowId)
      expect(row).toMatchObject({
        identity: 'signed',
        approvalsRequired: 1,
        rememberOffer: { exact: 'touch signed.txt' },
      })
      expect(row.actionDigest).toBe(
        actionDigest({ act: row.act, target: row.target, tree: row.tree as string }),
      )
      const answer = draftAnswer(row, { decision: 'approve', approver: 'alice', reason: 'looks fine' }, alice)
      expect(await handle.executeUpdate(decideUpdate, { args: [answer] })).toMatchObject({
        decision: 'approved',
      })
      await handle.result()
      expect(existsSync(join(ws.path, 'signed.txt'))).toBe(true)

      const [record] = await harness.audit.approvalAnswers({ runId: handle.workflowId })
      expect(record?.approval).toMatchObject({ decision: 'approved', decidedBy: 'alice', identity: 'signed' })
      expect(record?.answer).toMatchObject({
        approver: 'alice',
        decision: 'approve',
        channel: 'update',
        publicKey: alice.publicKey,
      })
      expect(record && verifyRecordedAnswer(record)).toMatchObject({ status: 'verified' })
      // Tampering with the record afterwards is caught: the statement no longer says what the row says.
      await harness.audit.pool.query(
        `update approvals set target = 'touch other.txt' where approval_id = $1`,
        [row.approvalId],
      )
      const [tampered] = await harness.audit.approvalAnswers({ runId: handle.workflowId })
      expect(tampered && verifyRecordedAnswer(tampered)).toMatchObject({
        status: 'failed',
        reason: expect.stringContaining('action'),
      })
    } finally {
      await ws.cleanup()
    }
  })

  it('refuses unsigned, forged, wrong-key, non-approver, replayed, tampered and expired answers, leaving no history', async () => {
    const first = await run([
      { toolCalls: [exec('touch', 'one.txt')] },
      { toolCalls: [exec('touch', 'two.txt')] },
      { text: 'ok' },
    ])
    try {
      const row = await nextApproval(first.handle.workflowId)
      const valid = sign(alice, row, { decision: 'approve', approver: 'alice' })
      const forgedValue = sign(alice, row, { decision: 'deny', approver: 'alice' }).signature?.value as string
      const attempts: Array<[string, unknown, string]> = [
        ['unsigned', { approvalId: row.approvalId, decision: 'approve', approver: 'alice' }, 'Unsigned'],
        ['forged', { ...valid, signature: { ...valid.signature, value: forgedValue } }, 'BadSignature'],
        ['wrong key', sign(bob, row, { decision: 'approve', approver: 'alice' }), 'UnknownKey'],
        ['non-approver', sign(mallory, row, { decision: 'approve', approver: 'mallory' }), 'UnknownKey'],
        [
          'for another run',
          sign(alice, row, { decision: 'approve', approver: 'alice' }, { run: 'run-elsewhere' }),
          'BadSignature',
        ],
        [
          'for another approval',
          sign(alice, row, { decision: 'approve', approver: 'alice' }, { approval: 'a-previous' }),
          'BadSignature',
        ],
        [
          'tampered action digest',
          sign(
            alice,
            row,
            { decision: 'approve', approver: 'alice' },
            { action: actionDigest({ act: 'exec', target: 'rm -rf /' }) },
          ),
          'BadSignature',
        ],
        [
          'expired',
          sign(
            alice,
            row,
            { decision: 'approve', approver: 'alice' },
            { issuedAt: row.deadline.getTime() + 1 },
          ),
          'OutsideValidity',
        ],
        [
          'issued before the request',
          sign(
            alice,
            row,
            { decision: 'approve', approver: 'alice' },
            { issuedAt: row.requestedAt.getTime() - 3_600_000 },
          ),
          'OutsideValidity',
        ],
      ]
      for (const [what, input, type] of attempts) {
        const cause = await updateError(first.handle, input)
        expect(cause, what).toMatchObject({ type, nonRetryable: true })
      }
      const history = await first.handle.fetchHistory()
      expect(
        (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes),
      ).toHaveLength(0)
      expect(await first.handle.query(pendingApprovalsQuery)).toHaveLength(1)

      // A signature made for this approval is refused for the next one: replay across approvals.
      await first.handle.executeUpdate(decideUpdate, { args: [valid] })
      const next = await nextApproval(first.handle.workflowId, [row.approvalId])
      const replayed = { ...valid, approvalId: next.approvalId }
      expect(await updateError(first.handle, replayed)).toMatchObject({ type: 'BadSignature' })
      // The same bad answers as Signals are recorded as rejected, never applied.
      await first.handle.signal(decideSignal, replayed)
      await first.handle.signal(decideSignal, {
        approvalId: next.approvalId,
        decision: 'approve',
        approver: 'alice',
      })
      await first.handle.executeUpdate(decideUpdate, {
        args: [sign(bob, next, { decision: 'deny', approver: 'bob', reason: 'enough' })],
      })
      await first.handle.result()
      expect(existsSync(join(first.ws.path, 'two.txt'))).toBe(false)
      const events = (await harness.audit.runTimeline(first.handle.workflowId)).filter(
        (e) => e.type === 'policy' && e.source.startsWith('signal-rejected'),
      )
      expect(events.map((e) => (e.type === 'policy' ? e.reason : ''))).toEqual([
        expect.stringContaining('rejected signal answer: the signature does not match'),
        expect.stringContaining("rejected signal answer: this run's policy requires signed decisions"),
      ])
    } finally {
      await first.ws.cleanup()
    }
  })

  it('accepts a signed answer sent as a Signal while no worker runs', async () => {
    const taskQueue = uniqueTaskQueue('identity-offline')
    const offline = await startAgentWorker(harness.audit, { taskQueue })
    const { ws, handle } = await run(
      [{ toolCalls: [exec('touch', 'later.txt')] }, { text: 'ok' }],
      {},
      taskQueue,
    )
    try {
      const row = await nextApproval(handle.workflowId)
      await offline.stop()
      await handle.signal(decideSignal, draftAnswer(row, { decision: 'approve', approver: 'bob' }, bob))
      const back = await startAgentWorker(harness.audit, { taskQueue })
      try {
        await handle.result()
      } finally {
        await back.stop()
      }
      expect(existsSync(join(ws.path, 'later.txt'))).toBe(true)
      const [record] = await harness.audit.approvalAnswers({ runId: handle.workflowId })
      expect(record?.answer).toMatchObject({ approver: 'bob', channel: 'signal' })
      expect(record && verifyRecordedAnswer(record)).toMatchObject({ status: 'verified' })
    } finally {
      await ws.cleanup()
    }
  })
})

describe('two-person rules', () => {
  it('waits after one approval, refuses the same approver twice, runs after a second approver', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'release.txt')] }, { text: 'ok' }])
    try {
      const row = await nextApproval(handle.workflowId)
      expect(row.approvalsRequired).toBe(2)
      const one = await handle.executeUpdate(decideUpdate, {
        args: [draftAnswer(row, { decision: 'approve', approver: 'alice' }, alice)],
      })
      expect(one).toMatchObject({ decision: 'pending', approvals: 1, required: 2 })
      expect(await handle.query(pendingApprovalsQuery)).toHaveLength(1)
      expect(
        await updateError(handle, draftAnswer(row, { decision: 'approve', approver: 'alice' }, alice)),
      ).toMatchObject({
        type: 'DuplicateApprover',
      })
      const two = await handle.executeUpdate(decideUpdate, {
        args: [draftAnswer(row, { decision: 'approve', approver: 'bob' }, bob)],
      })
      expect(two).toMatchObject({ decision: 'approved', approvals: 2 })
      await handle.result()
      const commands = await harness.audit.executedCommands({ runId: handle.workflowId })
      expect(commands.map((c) => c.argv.join(' '))).toEqual(['touch release.txt'])
      expect(existsSync(join(ws.path, 'release.txt'))).toBe(true)
      const records = await harness.audit.approvalAnswers({ runId: handle.workflowId })
      expect(records.map((r) => [r.answer.approver, verifyRecordedAnswer(r).status])).toEqual([
        ['alice', 'verified'],
        ['bob', 'verified'],
      ])
    } finally {
      await ws.cleanup()
    }
  })

  it('ends with one denial, by either approver', async () => {
    const { ws, handle } = await run([{ toolCalls: [exec('touch', 'release.txt')] }, { text: 'ok' }])
    try {
      const row = await nextApproval(handle.workflowId)
      await handle.executeUpdate(decideUpdate, {
        args: [draftAnswer(row, { decision: 'approve', approver: 'alice' }, alice)],
      })
      const no = await handle.executeUpdate(decideUpdate, {
        args: [draftAnswer(row, { decision: 'deny', approver: 'bob', reason: 'not today' }, bob)],
      })
      expect(no).toMatchObject({ decision: 'denied' })
      await handle.result()
      expect(await harness.audit.executedCommands({ runId: handle.workflowId })).toEqual([])
      const [decided] = (await harness.audit.runTimeline(handle.workflowId)).filter(
        (e) => e.type === 'approval',
      )
      expect(decided).toMatchObject({ decision: 'denied', decidedBy: 'bob', reason: 'not today' })
    } finally {
      await ws.cleanup()
    }
  })
})

describe('remember', () => {
  it('remembers exactly the approved command: git push origin feature never allows git push --force origin main', async () => {
    const { ws, handle } = await run([
      { toolCalls: [exec('git', 'push', 'origin', 'feature')] },
      { toolCalls: [exec('git', 'push', 'origin', 'feature')] },
      { toolCalls: [exec('git', 'push', '--force', 'origin', 'main')] },
    ])
    try {
      const row = await nextApproval(handle.workflowId)
      // Shown before anyone answers: exactly this command, no wider rule for a push.
      expect(row.rememberOffer).toEqual({ exact: 'git push origin feature' })
      const [query] = await handle.query(pendingApprovalsQuery)
      expect(query?.remember).toEqual({ exact: 'git push origin feature' })
      const answer = draftAnswer(row, { decision: 'approve', approver: 'alice', remember: 'exact' }, alice)
      expect(() =>
        draftAnswer(row, { decision: 'approve', approver: 'alice', remember: 'wider' }, alice),
      ).toThrow(/offers no wider rule/)
      expect(await handle.executeUpdate(decideUpdate, { args: [answer] })).toMatchObject({
        remember: 'git push origin feature',
      })
      // The same push ran again on the remembered rule; the forced push to main asks anew.
      const next = await nextApproval(handle.workflowId, [row.approvalId])
      expect(next.target).toBe('git push --force origin main')
      expect(
        (await harness.audit.executedCommands({ runId: handle.workflowId })).map((c) => c.argv.join(' ')),
      ).toEqual(['git push origin feature', 'git push origin feature'])
      await handle.cancel()
    } finally {
      await ws.cleanup()
    }
  })
})

describe('notifications', () => {
  it('delivers a Slack reminder with every model-chosen text escaped: no formatting, mention or link', async () => {
    const received: string[] = []
    const server = createServer((req, res) => {
      let body = ''
      req.on('data', (chunk) => {
        body += chunk
      })
      req.on('end', () => {
        received.push(body)
        res.end('ok')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    const nasty = ['echo', '*bold*', '<!channel>', '<http://x|y>', '_it_', '`code`']
    const { ws, handle } = await run([{ toolCalls: [exec(...nasty)] }, { text: 'ok' }], {
      approvals: {
        timeout: '4s',
        reminderEvery: '1500ms',
        webhook: { url: `http://127.0.0.1:${port}/hook`, format: 'slack' },
      },
    })
    try {
      await handle.result()
      const reminders = received.map(
        (body) =>
          JSON.parse(body) as {
            text: string
            blocks: Array<{ type: string; text?: { type: string; text: string } }>
          },
      )
      expect(reminders.length).toBeGreaterThanOrEqual(2)
      for (const [i, message] of reminders.entries()) {
        const raw = received[i] as string
        expect(raw).not.toContain('<!channel>')
        expect(raw).not.toContain('<http://x|y>')
        const texts = [message.text, ...message.blocks.map((b) => b.text?.text ?? '')]
        // The command reaches Slack only in plain-text blocks, escaped.
        const carrying = message.blocks.filter((b) => b.text?.text.includes('*bold*'))
        expect(carrying.length).toBe(1)
        expect(carrying.every((b) => b.text?.type === 'plain_text')).toBe(true)
        expect(carrying[0]?.text?.text).toContain('&lt;!channel&gt;')
        expect(carrying[0]?.text?.text).toContain('&lt;http://x|y&gt;')
        for (const block of message.blocks.filter((b) => b.text?.type === 'mrkdwn')) {
          for (const word of nasty.slice(1)) expect(block.text?.text).not.toContain(word)
        }
        // Only tether's own date token may use Slack's <!…> syntax.
        expect(texts.join('\n')).not.toMatch(/<(?!!date\^\d+\^)[!@#]/)
      }
      expect(reminders.some((m) => m.blocks.some((b) => b.text?.text.startsWith('Reminder')))).toBe(true)
    } finally {
      server.close()
      await ws.cleanup()
    }
  })
})
