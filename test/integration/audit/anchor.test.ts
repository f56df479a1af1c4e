import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type ApprovalRow,
  type Finding,
  HistoryUnavailableError,
  verifyRecordedAnswer,
  verifyRunHistory,
} from '../../../src/audit/index.js'
import { draftAnswer } from '../../../src/embed/client.js'
import type { DecisionStatement } from '../../../src/identity/index.js'
import { type ApproverKey, createKey, loadKey } from '../../../src/identity/keyring.js'
import { Policy } from '../../../src/policy/index.js'
import { decideUpdate } from '../../../src/workflows/index.js'
import { startScriptedRun, useAgentHarness } from '../../support/agent.js'
import { tether } from '../../support/cli.js'

const harness = useAgentHarness()

let dir: string
let alice: ApproverKey
let mallory: ApproverKey
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-anchor-'))
  for (const name of ['alice', 'mallory']) createKey(name, dir)
  alice = loadKey('alice', dir)
  mallory = loadKey('mallory', dir)
})
afterAll(() => rm(dir, { recursive: true, force: true }))

function policy(): Policy {
  return Policy.tiered()
    .withApprovers([{ name: 'alice', keys: [alice.publicKey] }])
    .layer('project')
    .denyExec('rm*')
    .allowExec('echo *')
    .allowExec('true')
}
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

/** A finished run: echo, a refused rm, a signed approval of touch, then the gate. */
async function signedRun() {
  const { ws, handle } = await startScriptedRun(
    harness,
    [
      { toolCalls: [exec('echo', 'hello'), exec('rm', '-rf', 'src'), exec('touch', 'signed.txt')] },
      { text: 'done' },
    ],
    { policy: policy(), contract: { verification: { command: ['true'] } } },
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
  const approval = row as ApprovalRow
  await handle.executeUpdate(decideUpdate, {
    args: [draftAnswer(approval, { decision: 'approve', approver: 'alice', reason: 'fine' }, alice)],
  })
  expect(await handle.result()).toMatchObject({ outcome: 'verified' })
  await ws.cleanup()
  return { runId: handle.workflowId, approval }
}

const brief = (findings: Finding[]) =>
  findings.map((f) => [f.table, f.key, f.problem, ...(f.column ? [f.column] : [])].join(' ')).sort()

describe('tether audit verify', () => {
  it('finds a run matching its history, then names every forged, deleted and edited row', async () => {
    const { runId, approval } = await signedRun()
    const clean = await verifyRunHistory(harness.client, harness.audit, runId)
    expect(clean.findings).toEqual([])
    expect(clean.running).toBe(false)
    expect(clean.checked).toMatchObject({
      runs: 1,
      policies: 1,
      steps: 2,
      exec_results: 3,
      approvals: 1,
      approval_answers: 1,
    })
    // The refusal of rm and the decision on touch.
    expect(clean.checked.policy_events).toBe(2)
    expect(clean.answers).toEqual([
      {
        approvalId: approval.approvalId,
        approver: 'alice',
        check: expect.objectContaining({ status: 'verified' }),
      },
    ])
    const cli = await tether(['audit', 'verify', runId])
    expect(cli.code, cli.stderr).toBe(0)
    expect(cli.stdout).toMatch(
      new RegExp(`^run ${runId} matches its Temporal history \\(1 execution; checked`),
    )

    const sql = (text: string, values: unknown[]) => harness.audit.pool.query(text, values)
    // (a) A forged answer: mallory's key, a valid signature over this very approval.
    const issuedAt = approval.requestedAt.getTime() + 1
    const statement: DecisionStatement = {
      run: runId,
      approval: approval.approvalId,
      action: approval.actionDigest as string,
      decision: 'approve',
      remember: null,
      reason: null,
      replacement: null,
      issuedAt,
    }
    await sql(
      `insert into approval_answers (approval_id, approver, decision, channel, answered_at, public_key,
                                     key_fingerprint, signature, statement)
       values ($1, 'mallory', 'approve', 'update', now(), $2, 'x', $3, $4)`,
      [approval.approvalId, mallory.publicKey, mallory.sign(statement), JSON.stringify(statement)],
    )
    // (b) Deleted rows: the approved command's result.
    await sql('delete from exec_results where run_id = $1 and step = 1 and call = 2', [runId])
    // (c) Edited rows: a step's decision and who decided the approval.
    await sql(`update steps set decision = 'nothing happened' where run_id = $1 and step = 1`, [runId])
    await sql(`update approvals set decided_by = 'bob' where approval_id = $1`, [approval.approvalId])

    const tampered = await verifyRunHistory(harness.client, harness.audit, runId)
    const forged = `${approval.approvalId} mallory`
    expect(brief(tampered.findings)).toEqual(
      [
        `approval_answers ${forged} added`,
        `approval_answers ${forged} failed`,
        'exec_results step 1 call 2 deleted',
        'steps step 1 edited decision',
        `approvals ${approval.approvalId} edited decided_by`,
      ].sort(),
    )
    expect(tampered.findings).toContainEqual(
      expect.objectContaining({
        table: 'approval_answers',
        problem: 'failed',
        detail: "the key is not on the approver list of the run's policy",
      }),
    )
    expect(tampered.findings).toContainEqual(
      expect.objectContaining({ column: 'decided_by', database: 'bob', history: 'alice' }),
    )

    const failing = await tether(['audit', 'verify', runId])
    expect(failing.code).toBe(1)
    const lines = failing.stdout.trim().split('\n')
    expect(lines).toHaveLength(6)
    expect(lines).toContain(`FAILED exec_results step 1 call 2: deleted: in history, not in the database`)
    expect(lines).toContain(
      `FAILED approvals ${approval.approvalId}: edited decided_by: database "bob", history "alice"`,
    )
    expect(lines).toContain(`FAILED approval_answers ${forged}: added: in the database, not in history`)
    expect(lines.at(-1)).toMatch(new RegExp(`^run ${runId} does NOT match its Temporal history: 5 FAILED`))
    const json = JSON.parse((await tether(['audit', 'verify', runId, '--json'])).stdout) as {
      findings: Finding[]
    }
    expect(brief(json.findings)).toEqual(brief(tampered.findings))

    // The answers, with history: the forged one fails, and so does the real one's edited approval.
    const answers = await tether(['audit', 'approvals', '--run', runId, '--verify'])
    expect(answers.code).toBe(1)
    expect(answers.stdout).toMatch(
      /mallory\s+approve\s+update\s+FAILED: added: in the database, not in history/,
    )
    expect(answers.stdout).toContain('1 of 2 answers check out; 1 FAILED')
    expect(answers.stdout).toContain('checked against Temporal history for 1 run(s)')
    expect(answers.stdout).toContain(`run ${runId} has other rows that do not match its history`)
    // Without Temporal, the database alone still refuses mallory's key.
    const offline = await tether(['audit', 'approvals', '--run', runId, '--verify'], {
      TEMPORAL_ADDRESS: '127.0.0.1:9',
    })
    expect(offline.code).toBe(1)
    expect(offline.stdout).toMatch(/mallory\s+approve\s+update\s+FAILED: the key is not on the approver list/)
    expect(offline.stdout).toContain('checked from the database alone')

    // A deleted answer is named too.
    await sql(`delete from approval_answers where approval_id = $1 and approver = 'alice'`, [
      approval.approvalId,
    ])
    const lost = await verifyRunHistory(harness.client, harness.audit, runId)
    expect(brief(lost.findings)).toContain(`approval_answers ${approval.approvalId} alice deleted`)
  }, 240_000)

  it('catches a swapped policy that the database alone would believe', async () => {
    const { runId, approval } = await signedRun()
    // Mallory's key in alice's place, stored under its own (valid) digest and named by the run's row; the
    // answer re-signed by mallory as alice.
    const swapped = Policy.fromSpec(
      (await harness.audit.policyByDigest(
        (
          await harness.audit.runSummary(runId)
        )?.policyDigest as string,
      )) as object,
    ).withApprovers([{ name: 'alice', keys: [mallory.publicKey] }])
    const [record] = await harness.audit.approvalAnswers({ runId })
    const statement = { ...(record?.answer.statement as DecisionStatement) }
    await harness.audit.pool.query(
      'insert into policies (digest, spec) values ($1, $2) on conflict do nothing',
      [swapped.digest, JSON.stringify(swapped.toSpec())],
    )
    await harness.audit.pool.query('update runs set policy_digest = $2 where run_id = $1', [
      runId,
      swapped.digest,
    ])
    await harness.audit.pool.query(
      `update approval_answers set public_key = $2, signature = $3 where approval_id = $1`,
      [approval.approvalId, mallory.publicKey, mallory.sign(statement)],
    )
    const [forged] = await harness.audit.approvalAnswers({ runId })
    expect(forged && verifyRecordedAnswer(forged)).toMatchObject({ status: 'verified' })

    const report = await verifyRunHistory(harness.client, harness.audit, runId)
    expect(brief(report.findings)).toEqual(
      [
        `approval_answers ${approval.approvalId} alice edited public_key`,
        `approval_answers ${approval.approvalId} alice edited signature`,
        `approval_answers ${approval.approvalId} alice failed`,
        `runs ${runId} edited policy_digest`,
      ].sort(),
    )
  }, 180_000)

  it('follows a run across continue-as-new', async () => {
    // The test server suggests continue-as-new after 200 history events; 30 steps is well past that.
    const steps = 30
    const turns = [...Array.from({ length: steps }, () => ({ toolCalls: [exec('true')] })), { text: 'done' }]
    const { ws, handle } = await startScriptedRun(harness, turns, {
      policy: policy(),
      contract: { budgets: { maxSteps: 100 } },
    })
    try {
      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      const report = await verifyRunHistory(harness.client, harness.audit, handle.workflowId)
      expect(report.findings).toEqual([])
      expect(report.executions.length).toBeGreaterThan(1)
      expect(report.checked).toMatchObject({ steps: steps + 1, exec_results: steps })
      await harness.audit.pool.query('delete from exec_results where run_id = $1 and step = $2', [
        handle.workflowId,
        steps,
      ])
      const lost = await verifyRunHistory(harness.client, harness.audit, handle.workflowId)
      expect(brief(lost.findings)).toEqual([`exec_results step ${steps} call 0 deleted`])
    } finally {
      await ws.cleanup()
    }
  }, 180_000)

  it('refuses to vouch for a run Temporal has no history of', async () => {
    await expect(verifyRunHistory(harness.client, harness.audit, 'no-such-run')).rejects.toThrow(
      HistoryUnavailableError,
    )
    const cli = await tether(['audit', 'verify', 'no-such-run'])
    expect(cli.code).toBe(1)
    expect(cli.stderr).toBe(
      "error: cannot verify run no-such-run: Temporal has no history of run no-such-run (never started here, or removed after the namespace's retention period)\n",
    )
  }, 120_000)
})
