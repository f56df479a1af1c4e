/**
 * "Approve with an edited command", on a real dev server: the approver signs a replacement argv, the run
 * judges it with the policy again, runs it in place of the asked command (or refuses it: an approval never
 * crosses a deny), tells the model, and the audit keeps both.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ApprovalRow, verifyRecordedAnswer } from '../../src/audit/index.js'
import { draftAnswer } from '../../src/embed/client.js'
import { type ApproverKey, createKey, loadKey } from '../../src/identity/keyring.js'
import { Policy } from '../../src/policy/index.js'
import { decideUpdate } from '../../src/workflows/index.js'
import { npmWorkspace, startRun, useAgentHarness, writeScript } from '../support/agent.js'
import { recordHistory } from '../support/temporal.js'

const harness = useAgentHarness()
let dir: string
let alice: ApproverKey
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-replacement-'))
  createKey('alice', dir)
  alice = loadKey('alice', dir)
})
afterAll(() => rm(dir, { recursive: true, force: true }))

const policy = () =>
  Policy.tiered()
    .withApprovers([{ name: 'alice', keys: [alice.publicKey] }])
    .layer('base')
    .denyExec('rm*')

/** `workflowId`: a recorded history replays under its file's name, and the signatures cover the run id. */
async function askedRun(workflowId?: string) {
  const ws = await npmWorkspace()
  const model = `scripted:${await writeScript(ws.path, {
    turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['touch', 'asked.txt'] } }] }, { text: 'done' }],
  } as never)}`
  const handle = await startRun(
    harness.client,
    harness.taskQueue,
    { goal: 'g', workspace: ws.path, model },
    policy(),
    workflowId,
  )
  let row: ApprovalRow | undefined
  await expect
    .poll(
      async () => {
        row = (await harness.audit.pendingApprovals({ runId: handle.workflowId }))[0]
        return row !== undefined
      },
      { timeout: 60_000 },
    )
    .toBe(true)
  return { ws, handle, row: row as ApprovalRow }
}

/** The observation the model read for the run's first call. */
async function observation(runId: string): Promise<string> {
  const messages = await harness.audit.loadMessages(runId)
  const tool = messages.find((m) => m.role === 'tool')?.content as { results: Array<{ output: string }> }
  return tool.results[0]?.output ?? ''
}

describe('approve with an edited command', () => {
  it('runs the signed replacement instead of the asked command; the audit keeps both and re-verifies', async () => {
    const { ws, handle, row } = await askedRun('approval-replacement')
    try {
      const replacement = ['touch', 'edited.txt']
      const answer = draftAnswer(row, { decision: 'approve', approver: 'alice', replacement }, alice)
      expect(answer.replacement).toEqual(replacement)
      await handle.executeUpdate(decideUpdate, { args: [answer] })
      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      await recordHistory(handle, 'approval-replacement')
      expect(existsSync(join(ws.path, 'edited.txt'))).toBe(true)
      expect(existsSync(join(ws.path, 'asked.txt'))).toBe(false)

      const runId = handle.workflowId
      expect(await harness.audit.approval(row.approvalId)).toMatchObject({
        decision: 'approved',
        target: 'touch asked.txt',
        replacement,
      })
      const [ran] = await harness.audit.executedCommands({ runId })
      expect(ran?.argv).toEqual(replacement)
      const [step] = (await harness.audit.runTimeline(runId)).filter((e) => e.type === 'step')
      expect(step && 'toolCalls' in step && step.toolCalls[0]?.args).toEqual({ argv: ['touch', 'asked.txt'] })
      expect(await observation(runId)).toMatch(
        /^\[approved with an edit\] alice approved `touch edited.txt` instead of the command you asked for \(`touch asked.txt`\)\.\n/,
      )

      const [record] = await harness.audit.approvalAnswers({ runId })
      expect(record && verifyRecordedAnswer(record)).toMatchObject({ status: 'verified' })
      // A record that claims another command ran than the one signed fails re-verification.
      await harness.audit.pool.query(
        `update approvals set replacement = '{touch,other.txt}' where approval_id = $1`,
        [row.approvalId],
      )
      const [tampered] = await harness.audit.approvalAnswers({ runId })
      expect(tampered && verifyRecordedAnswer(tampered)).toMatchObject({
        status: 'failed',
        reason: expect.stringContaining('replacement'),
      })
    } finally {
      await ws.cleanup()
    }
  })

  it('refuses a replacement the policy denies, even though it was approved, and says so to the model', async () => {
    const { ws, handle, row } = await askedRun()
    try {
      const answer = draftAnswer(
        row,
        { decision: 'approve', approver: 'alice', replacement: ['rm', '-rf', 'src'] },
        alice,
      )
      await handle.executeUpdate(decideUpdate, { args: [answer] })
      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      expect(existsSync(join(ws.path, 'src'))).toBe(true)
      const runId = handle.workflowId
      expect(await harness.audit.executedCommands({ runId })).toEqual([])
      const refused = (await harness.audit.refusedActions({ runId })).items
      expect(refused).toContainEqual(
        expect.objectContaining({
          kind: 'refusal',
          target: 'rm -rf src',
          rule: 'rm*',
          layer: 'base',
          reason: expect.stringContaining('an approval never crosses a deny'),
        }),
      )
      expect(await observation(runId)).toMatch(
        /^\[approved with an edit\].*\n\[exec refused\] rm -rf src — by rule `rm\*`/,
      )
    } finally {
      await ws.cleanup()
    }
  })
})
