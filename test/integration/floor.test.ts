/**
 * The operator's floor on real workers: a run's policy stacks on it and can only tighten it, the effective
 * policy is recorded by its digest, and the digest in history outranks the database.
 */
import { generateKeyPairSync } from 'node:crypto'
import { WorkflowFailedError } from '@temporalio/client'
import { describe, expect, it } from 'vitest'
import { formatPublicKey, fromBase64 } from '../../src/identity/index.js'
import { Policy } from '../../src/policy/index.js'
import { decideUpdate, pendingApprovalsQuery } from '../../src/workflows/index.js'
import {
  startAgentWorker,
  startScriptedRun,
  testPolicy,
  useAgentHarness,
  useAgentWorker,
} from '../support/agent.js'
import { uniqueTaskQueue } from '../support/temporal.js'

const harness = useAgentHarness()
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

function publicKey(): string {
  const { publicKey: key } = generateKeyPairSync('ed25519')
  return formatPublicKey(fromBase64((key.export({ format: 'jwk' }) as { x: string }).x) as Uint8Array)
}

/** An operator's floor: alice answers, signed; `rm` is denied and `kubectl` asked, whatever a run says. */
const alice = publicKey()
const floor = Policy.fromSpec({
  defaults: { read: 'allow', write: 'allow', exec: 'allow', net: 'deny' },
  layers: [
    {
      name: 'operator',
      sandbox: 'enforce',
      rules: [
        { act: 'exec', effect: 'deny', pattern: 'rm*' },
        { act: 'exec', effect: 'ask', pattern: 'kubectl*' },
      ],
    },
  ],
  approvers: [{ name: 'alice', keys: [alice] }],
})

async function rejection(handle: { result(): Promise<unknown> }): Promise<string> {
  const failure = await handle.result().then(
    () => undefined,
    (error: unknown) => error,
  )
  expect(failure).toBeInstanceOf(WorkflowFailedError)
  return String((failure as WorkflowFailedError).cause?.message)
}

describe('a worker with an operator’s floor', () => {
  const worker = useAgentWorker({}, floor)
  const start = (policy: Policy, turns: unknown[] = [{ text: 'done' }]) =>
    startScriptedRun({ client: harness.client, taskQueue: worker.taskQueue }, turns, {
      policy,
      contract: { verification: null },
    })

  it('rejects at the first step, in one line naming the floor and the field, a run that would loosen it', async () => {
    const cases: Array<[Policy, RegExp]> = [
      [
        Policy.permissive().layer('mine').withSandbox('off'),
        /layer "mine" turns the sandbox off \(sandbox\.mode\); only the worker's floor may loosen the sandbox/,
      ],
      [
        Policy.tiered().withApprovers(['alice'], 'unsigned'),
        /the run's policy identity: asks for unsigned answers, but the floor requires signed ones/,
      ],
      [
        Policy.tiered().withApprovers([{ name: 'mallory', keys: [publicKey()] }]),
        /the run's policy approvers\[0\]: "mallory" is not an approver on the floor/,
      ],
    ]
    for (const [policy, expected] of cases) {
      const { ws, handle } = await start(policy)
      try {
        const message = await rejection(handle)
        expect(message).toMatch(expected)
        expect(message).toContain("(the worker's floor: the worker configuration)")
        expect(message).not.toContain('\n')
        const summary = await worker.audit.runSummary(handle.workflowId)
        expect(summary).toMatchObject({ outcome: 'failed' })
        expect(summary?.reason).toMatch(expected)
        expect(await worker.audit.executedCommands({ runId: handle.workflowId })).toEqual([])
      } finally {
        await ws.cleanup()
      }
    }
  })

  it('keeps the floor’s denies whatever the run allows, adds the run’s own, and records the effective policy', async () => {
    const policy = Policy.permissive().layer('project').allowExec('rm*').denyExec('cat*')
    const { ws, handle } = await start(policy, [
      { toolCalls: [exec('rm', '-rf', 'src'), exec('cat', 'package.json'), exec('true')] },
      { text: 'done' },
    ])
    try {
      expect((await handle.result()).outcome).toBe('finished')
      const runId = handle.workflowId
      const refused = (await worker.audit.refusedActions({ runId })).items
      const byCall = [...refused].sort((a, b) => a.call - b.call)
      expect(byCall.map((event) => [event.target, event.rule, event.layer])).toEqual([
        ['rm -rf src', 'rm*', 'operator'],
        ['cat package.json', 'cat*', 'project'],
      ])
      expect(byCall[0]?.reason).toContain("(the worker's floor)")
      expect((await worker.audit.executedCommands({ runId })).map((c) => c.argv[0])).toEqual(['true'])

      const summary = await worker.audit.runSummary(runId)
      expect(summary).toMatchObject({ floor: 'the worker configuration', sandbox: 'enforce' })
      const { rows } = await worker.audit.pool.query<{ spec: unknown }>(
        'select spec from policies where digest = $1',
        [summary?.policyDigest],
      )
      const effective = Policy.fromSpec(rows[0]?.spec)
      expect(effective.digest).toBe(summary?.policyDigest)
      expect(effective.layers.map((layer) => [layer.name, layer.origin])).toEqual([
        ['operator', 'floor'],
        ['project', 'run'],
      ])
      // The run's own policy stays as its starter gave it.
      const config = await worker.audit.runConfig(runId)
      expect(Policy.fromSpec(config?.policy).digest).toBe(policy.digest)
    } finally {
      await ws.cleanup()
    }
  })
})

describe('the digest in history outranks the database', () => {
  it('stops a run whose recorded effective policy was edited, on the next worker that loads it', async () => {
    const taskQueue = uniqueTaskQueue('floor-tamper')
    const first = await startAgentWorker(harness.audit, { taskQueue })
    const { ws, handle } = await startScriptedRun(
      { client: harness.client, taskQueue },
      [{ toolCalls: [exec('touch', 'asked.txt')] }, { text: 'done' }],
      {
        policy: Policy.fromSpec({ ...testPolicy().toSpec(), identity: 'unsigned' }),
        contract: { verification: null },
      },
    )
    let second: Awaited<ReturnType<typeof startAgentWorker>> | undefined
    try {
      await expect
        .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)
      await first.stop()
      const summary = await harness.audit.runSummary(handle.workflowId)
      // Someone with write access to the audit database makes `touch` allowed for this run.
      await harness.audit.pool.query(
        `update policies set spec = jsonb_set(spec, '{defaults,exec}', '"allow"') where digest = $1`,
        [summary?.policyDigest],
      )
      second = await startAgentWorker(harness.audit, { taskQueue })
      const [pending] = await handle.query(pendingApprovalsQuery)
      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: pending?.approvalId as string, approver: 'ops', decision: 'approve' }],
      })
      const message = await rejection(handle)
      expect(message).toMatch(
        /the audit's policy [0-9a-f]{12}… no longer matches its digest: the policies table was edited/,
      )
      expect(await harness.audit.executedCommands({ runId: handle.workflowId })).toEqual([])
    } finally {
      await second?.stop()
      await ws.cleanup()
    }
  })
})
