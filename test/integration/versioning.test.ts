/**
 * Worker Versioning: two builds of a worker on one task queue. A run started on build 1 finishes on build
 * 1, pinned, while the deployment's current version moves to build 2 and new runs start there.
 */
import { randomUUID } from 'node:crypto'
import type { WorkflowHandle } from '@temporalio/client'
import { describe, expect, it } from 'vitest'
import { createActivities } from '../../src/activities/index.js'
import { Policy } from '../../src/policy/index.js'
import { decideUpdate, pendingApprovalsQuery } from '../../src/workflows/index.js'
import { npmWorkspace, useAgentHarness, writeScript } from '../support/agent.js'
import { createWorker, uniqueTaskQueue } from '../support/temporal.js'

const harness = useAgentHarness()

async function build(taskQueue: string, deploymentName: string, buildId: string) {
  const { worker, connection } = await createWorker({
    taskQueue,
    activities: createActivities({ audit: harness.audit }),
    workerDeploymentOptions: {
      version: { deploymentName, buildId },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    },
  })
  const running = worker.run()
  return {
    stop: async () => {
      worker.shutdown()
      await running
      await connection.close()
    },
  }
}

/** Makes `buildId` the deployment's current version, once its worker has polled (the version exists then). */
async function makeCurrent(deploymentName: string, buildId: string) {
  await expect
    .poll(
      async () =>
        harness.client.workflowService
          .setWorkerDeploymentCurrentVersion({
            namespace: harness.client.options.namespace,
            deploymentName,
            buildId,
            identity: 'versioning test',
          })
          .then(
            () => true,
            () => false,
          ),
      { timeout: 60_000, interval: 500 },
    )
    .toBe(true)
}

async function pinnedBuild(handle: WorkflowHandle): Promise<string | undefined> {
  const { raw } = await handle.describe()
  const info = raw.workflowExecutionInfo?.versioningInfo
  return info?.deploymentVersion?.buildId ?? undefined
}

describe('Worker Versioning', () => {
  it('keeps a run on the build that started it while new runs start on the current build', async () => {
    const taskQueue = uniqueTaskQueue('versioned')
    const deploymentName = `tether-${randomUUID().slice(0, 8)}`
    // One run works in a folder at a time: each run has its own.
    const ws = await npmWorkspace()
    const ws2 = await npmWorkspace()
    const model = `scripted:${await writeScript(ws.path, {
      turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['touch', 'asked.txt'] } }] }, { text: 'done' }],
    } as never)}`
    const input = {
      contract: { goal: 'pinned', workspace: ws.path, model, verification: null },
      policy: Policy.fromSpec({ ...Policy.tiered().toSpec(), identity: 'unsigned' }).toSpec(),
    }
    const one = await build(taskQueue, deploymentName, '1')
    let two: Awaited<ReturnType<typeof build>> | undefined
    try {
      await makeCurrent(deploymentName, '1')
      const first = await harness.client.workflow.start('agentRun', {
        taskQueue,
        workflowId: `versioned-1-${randomUUID()}`,
        args: [input],
      })
      await expect
        .poll(async () => (await first.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)

      two = await build(taskQueue, deploymentName, '2')
      await makeCurrent(deploymentName, '2')
      const second = await harness.client.workflow.start('agentRun', {
        taskQueue,
        workflowId: `versioned-2-${randomUUID()}`,
        args: [{ ...input, contract: { ...input.contract, workspace: ws2.path } }],
      })
      await expect
        .poll(async () => (await second.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)

      // The first run, answered now, goes on and finishes on build 1; the second lives on build 2.
      const [pending] = await first.query(pendingApprovalsQuery)
      await first.executeUpdate(decideUpdate, {
        args: [{ approvalId: pending?.approvalId as string, approver: 'ops', decision: 'approve' }],
      })
      expect((await first.result()).outcome).toBe('finished')
      expect(await pinnedBuild(first)).toBe('1')
      expect(await pinnedBuild(second)).toBe('2')
      expect((await harness.audit.runSummary(first.workflowId))?.buildId).toBe('1')
      expect((await harness.audit.runSummary(second.workflowId))?.buildId).toBe('2')
      await second.terminate('done with it')
    } finally {
      await two?.stop()
      await one.stop()
      await ws.cleanup()
      await ws2.cleanup()
    }
  })
})
