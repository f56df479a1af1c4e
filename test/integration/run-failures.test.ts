/**
 * How runs that do not succeed end, as Temporal and the audit tell it: a run rejected at its first step and
 * a run that fails later both fail their workflow with a typed failure carrying the run's result, and the
 * audit says why. (Budget outcomes stay results: see agent-lifecycle.test.ts.)
 */
import { join } from 'node:path'
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActivities } from '../../src/activities/index.js'
import type { AuditStore } from '../../src/audit/index.js'
import { startAgentRun } from '../../src/embed/client.js'
import { ModelError, type ModelProvider } from '../../src/model/index.js'
import { npmWorkspace, openTestAudit, testPolicy } from '../support/agent.js'
import { connectClient, createWorker, recordHistory, uniqueTaskQueue } from '../support/temporal.js'

let audit: AuditStore
let client: Awaited<ReturnType<typeof connectClient>>
let stopWorker: () => Promise<void>
const taskQueue = uniqueTaskQueue('failures')

// A provider whose key the service refuses: the kind of failure no retry can mend.
const refusingProvider: ModelProvider = {
  id: 'refusing:model',
  contextTokens: 100_000,
  async generate() {
    throw new ModelError('auth', 'the provider refused the API key (HTTP 401)', { status: 401 })
  },
}

beforeAll(async () => {
  audit = await openTestAudit()
  client = await connectClient()
  const { worker, connection } = await createWorker({
    taskQueue,
    activities: createActivities({
      audit,
      provider: (choice) => {
        if (choice === 'refusing:model') return refusingProvider
        throw new Error(`no model ${choice} on this worker`)
      },
    }),
  })
  const running = worker.run()
  stopWorker = async () => {
    worker.shutdown()
    await running
    await connection.close()
  }
})

afterAll(async () => {
  await stopWorker?.()
  await client?.close()
  await audit?.close()
})

async function failure(handle: { result(): Promise<unknown> }): Promise<ApplicationFailure> {
  const error = await handle.result().then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(WorkflowFailedError)
  const cause = (error as WorkflowFailedError).cause
  expect(cause).toBeInstanceOf(ApplicationFailure)
  return cause as ApplicationFailure
}

describe('runs that do not succeed', () => {
  it('a run whose model fails for good fails its workflow with RunFailed and the result in the details', async () => {
    const ws = await npmWorkspace()
    try {
      const handle = await startAgentRun(client.client, {
        contract: { goal: 'g', workspace: ws.path, model: 'refusing:model' },
        policy: testPolicy(),
        taskQueue,
        runId: `failed-${taskQueue}`,
      })
      const cause = await failure(handle)
      expect(cause.type).toBe('RunFailed')
      expect(cause.nonRetryable).toBe(true)
      expect(cause.message).toContain('refused the API key')
      expect(cause.details?.[0]).toMatchObject({
        runId: handle.workflowId,
        outcome: 'failed',
        reason: expect.stringContaining('refused the API key'),
        steps: 1,
      })
      expect((await handle.describe()).status.name).toBe('FAILED')
      expect(await audit.runSummary(handle.workflowId)).toMatchObject({
        outcome: 'failed',
        reason: expect.stringContaining('refused the API key'),
      })
      await recordHistory(handle, 'agent-run-failed')
    } finally {
      await ws.cleanup()
    }
  })

  it('a run that cannot work is rejected at its first step, recorded, and fails with ContractRejected', async () => {
    const ws = await npmWorkspace()
    try {
      const missing = join(ws.path, 'gone')
      const handle = await startAgentRun(client.client, {
        contract: {
          goal: 'g',
          workspace: missing,
          verification: { command: ['npm', 'test'] },
          model: 'other:model',
        },
        policy: testPolicy(),
        taskQueue,
        runId: `rejected-${taskQueue}`,
      })
      const cause = await failure(handle)
      expect(cause.type).toBe('ContractRejected')
      expect(cause.message).toBe(
        `the workspace ${missing} does not exist on the worker; the worker cannot use the model "other:model": ` +
          'no model other:model on this worker (model settings are read where the worker runs, not where the run is started)',
      )
      expect(cause.details?.[0]).toMatchObject({ outcome: 'failed', reason: cause.message, steps: 0 })
      expect(await audit.runSummary(handle.workflowId)).toMatchObject({
        outcome: 'failed',
        reason: cause.message,
        steps: 0,
      })
      await recordHistory(handle, 'agent-run-rejected')

      // An invalid policy is one more reason, found by the same first step.
      const badPolicy = await client.client.workflow.start('agentRun', {
        taskQueue,
        workflowId: `bad-policy-${taskQueue}`,
        args: [
          {
            contract: { goal: 'g', workspace: ws.path, model: 'refusing:model' },
            policy: { defaults: { exec: 'maybe' } },
          },
        ],
      })
      const policyCause = await failure(badPolicy)
      expect(policyCause.type).toBe('ContractRejected')
      expect(policyCause.message).toMatch(/^the run's policy is invalid: .*defaults\.exec/)
    } finally {
      await ws.cleanup()
    }
  })

  it('a contract that is not valid fails with ContractError, and a bare number shows the fix', async () => {
    const handle = await client.client.workflow.start('agentRun', {
      taskQueue,
      workflowId: `invalid-${taskQueue}`,
      args: [
        {
          contract: { goal: 'g', workspace: '/tmp', budgets: { maxWallTime: 1800 } },
          policy: testPolicy().toSpec(),
        },
      ],
    })
    const cause = await failure(handle)
    expect(cause.type).toBe('ContractError')
    expect(cause.message).toBe(
      'invalid task contract: budgets.maxWallTime: 1800 is a number; write a duration with a unit, e.g. "30m" or "1800s"',
    )
  })
})
