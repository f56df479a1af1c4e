/**
 * The run's own policy by reference: a client with the workers' audit stores the spec there and the run's
 * history carries its digest only — at the start, in the start record and at every continue-as-new — so a
 * 2,000-rule policy costs history nothing per step. A digest the workers cannot find, or a stored spec that
 * no longer hashes to it, refuses the run at its preparation; a spec passed inline still works.
 */
import type { Client, WorkflowHandle } from '@temporalio/client'
import { describe, expect, it } from 'vitest'
import { policyOfRules } from '../../bench/big-policy.js'
import { verifyRunHistory } from '../../src/audit/index.js'
import {
  newRunId,
  RunRejectedError,
  type StartRunOptions,
  startAgentRun,
  waitForStart,
} from '../../src/embed/index.js'
import { Policy } from '../../src/policy/index.js'
import { agentRun } from '../../src/workflows/index.js'
import { npmWorkspace, useAgentHarness, writeScript } from '../support/agent.js'
import { recordHistory } from '../support/temporal.js'

const harness = useAgentHarness()
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })

const big = policyOfRules(2_000)
/** A pattern only the big policy has: it appears in a history that holds a copy of the rules. */
const ruleText = big.toSpec().layers.find((layer) => layer.name === 'team')?.rules[1_990]?.pattern as string

/** A workspace whose scripted model runs `true` `steps` times, then stops. */
async function scripted(steps: number) {
  const ws = await npmWorkspace()
  const turns = [...Array.from({ length: steps }, () => ({ toolCalls: [exec('true')] })), { text: 'done' }]
  const model = `scripted:${await writeScript(ws.path, { turns } as never)}`
  return { ws, contract: { goal: 'g', workspace: ws.path, model, budgets: { maxSteps: 100 } } }
}

/**
 * A finished run of the big policy, long enough to continue as new: the test server suggests it after 200
 * history events, and 30 steps go past that.
 */
async function longRun(options: Pick<StartRunOptions, 'policyStore'>) {
  const steps = 30
  const { ws, contract } = await scripted(steps)
  const handle = await startAgentRun(harness.client, {
    contract,
    policy: big,
    taskQueue: harness.taskQueue,
    ...options,
  })
  const result = await handle.result()
  expect(result, result.reason).toMatchObject({ outcome: 'finished', steps: steps + 1 })
  return { ws, handle }
}

/**
 * Each execution of the run's chain, first to last (following continue-as-new), as text: every string and
 * every payload's bytes decoded, so a rule's pattern is found wherever history holds it. `record`: the name
 * the first execution's history is recorded under (TETHER_RECORD_HISTORIES=1).
 */
async function executions(client: Client, workflowId: string, record?: string): Promise<string[]> {
  const texts: string[] = []
  const latest = await client.workflow.getHandle(workflowId).fetchHistory()
  let runId = latest.events?.[0]?.workflowExecutionStartedEventAttributes?.firstExecutionRunId ?? undefined
  if (record) await recordHistory(client.workflow.getHandle(workflowId, runId), record)
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory()
    texts.push(textOf(history))
    const last = history.events?.at(-1)
    runId = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined
  }
  return texts
}

function textOf(value: unknown): string {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8')
  if (typeof value === 'string') return value
  if (Array.isArray(value)) return value.map(textOf).join('\n')
  if (value && typeof value === 'object') return Object.values(value).map(textOf).join('\n')
  return ''
}

describe('a run started with its policy by reference', () => {
  it('holds no copy of a 2,000-rule policy in any execution of its history, and its audit matches it', async () => {
    const { ws, handle } = await longRun({ policyStore: harness.audit })
    try {
      const texts = await executions(harness.client, handle.workflowId, 'policy-by-reference')
      expect(texts.length).toBeGreaterThan(1)
      for (const text of texts) {
        expect(text).toContain(big.digest)
        expect(text).not.toContain(ruleText)
      }
      // The row keeps the spec itself, and verification against history finds it the one history names.
      expect((await harness.audit.runConfig(handle.workflowId))?.policy).toEqual(big.toSpec())
      const report = await verifyRunHistory(harness.client, harness.audit, handle.workflowId)
      expect(report.findings).toEqual([])
    } finally {
      await ws.cleanup()
    }
  }, 300_000)

  it('is refused at preparation when the audit has no policy under its digest, naming it', async () => {
    const missing = Policy.tiered().layer('never-stored').denyExec(`rm -rf /${newRunId()}*`)
    const { ws, contract } = await scripted(1)
    try {
      const handle = await harness.client.workflow.start(agentRun, {
        taskQueue: harness.taskQueue,
        workflowId: newRunId(),
        args: [{ contract, policyRef: missing.digest }],
      })
      const error = await refusal(handle)
      expect(error.type).toBe('ContractRejected')
      expect(error.message).toContain(
        `the run's policy ${missing.digest} is not in the audit this worker reads`,
      )
      await recordHistory(handle, 'policy-by-reference-missing')
      // Recorded like any rejected run, under the reference it was given.
      expect((await harness.audit.runConfig(handle.workflowId))?.policy).toEqual({
        policyRef: missing.digest,
      })
      expect((await verifyRunHistory(harness.client, harness.audit, handle.workflowId)).findings).toEqual([])
    } finally {
      await ws.cleanup()
    }
  })

  it('is refused when the spec stored under its digest is another one (fails closed)', async () => {
    const named = Policy.tiered().layer('named').denyExec(`git push ${newRunId()}*`)
    const looser = Policy.tiered().layer('named').allowExec('true')
    // Another spec under the digest the run will name: as if the table had been edited.
    await harness.audit.storeRunPolicy(named.digest, looser.toSpec())
    const { ws, contract } = await scripted(1)
    try {
      const handle = await startAgentRun(harness.client, {
        contract,
        policy: named,
        taskQueue: harness.taskQueue,
        policyStore: harness.audit,
      })
      const error = await refusal(handle)
      expect(error.type).toBe('ContractRejected')
      expect(error.message).toContain(
        `the run's policy stored under ${named.digest} no longer matches its digest`,
      )
      expect(await harness.audit.executedCommands({ runId: handle.workflowId })).toEqual([])
    } finally {
      await ws.cleanup()
    }
  })
})

describe('a run started with its policy inline', () => {
  it('still works, and its later executions carry the policy by reference', async () => {
    const { ws, handle } = await longRun({})
    try {
      const [first, ...later] = await executions(harness.client, handle.workflowId)
      // The start carries the spec (the control: the search finds a copy where there is one) …
      expect(first).toContain(ruleText)
      // … and the worker stored it, so the next executions name it by its digest only.
      expect(later.length).toBeGreaterThan(0)
      for (const text of later) expect(text).not.toContain(ruleText)
      expect(await harness.audit.runPolicyByDigest(big.digest)).toBeDefined()
      expect((await verifyRunHistory(harness.client, harness.audit, handle.workflowId)).findings).toEqual([])
    } finally {
      await ws.cleanup()
    }
  }, 300_000)
})

async function refusal(handle: WorkflowHandle<typeof agentRun>): Promise<RunRejectedError> {
  const error = await waitForStart(handle).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(RunRejectedError)
  return error as RunRejectedError
}
