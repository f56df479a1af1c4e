/** tether as a plugin on someone else's Worker: their workflow starts agentRun as a child. */
import { fileURLToPath } from 'node:url'
import { NativeConnection, Worker } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { stepPacer } from '../../src/activities/index.js'
import type { AuditStore } from '../../src/audit/index.js'
import { tetherPlugin } from '../../src/embed/plugin.js'
import { FIX_ADD, npmWorkspace, openTestAudit, testPolicy, writeScript } from '../support/agent.js'
import { connectClient, uniqueTaskQueue } from '../support/temporal.js'

let audit: AuditStore
let client: Awaited<ReturnType<typeof connectClient>>

beforeAll(async () => {
  audit = await openTestAudit()
  client = await connectClient()
})

afterAll(async () => {
  await client?.close()
  await audit?.close()
})

describe('tether plugin', () => {
  it("adds agentRun to a user's Worker, and the user's workflow gets the child's outcome", async () => {
    const ws = await npmWorkspace()
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') })
    try {
      const taskQueue = uniqueTaskQueue('embed')
      const worker = await Worker.create({
        connection,
        namespace: inject('namespace'),
        taskQueue,
        workflowsPath: fileURLToPath(new URL('../fixtures/embedding/workflows.ts', import.meta.url)),
        plugins: [tetherPlugin({ audit })],
      })
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          {
            toolCalls: [FIX_ADD],
          },
          { text: 'fixed' },
        ],
      })}`
      const workflowId = `nightly-${taskQueue}`
      const outcome = await worker.runUntil(
        client.client.workflow.execute('nightlyFix', {
          taskQueue,
          workflowId,
          args: [
            {
              contract: {
                goal: 'fix add',
                workspace: ws.path,
                verification: { command: ['npm', 'test'] },
                model,
              },
              policy: testPolicy().toSpec(),
            },
          ],
        }),
      )
      expect(outcome).toBe(`agent run ${workflowId}-agent ended verified after 2 steps`)
      const summary = await audit.runSummary(`${workflowId}-agent`)
      expect(summary?.outcome).toBe('verified')
      expect(
        (await audit.listRuns({ limit: 50 })).items.find((r) => r.runId === `${workflowId}-agent`)
          ?.parentRunId,
      ).toBe(workflowId)
      // The plugin gave the Worker the pacing sink: every activity's end was matched by the run's word.
      await expect.poll(() => stepPacer.load, { timeout: 10_000 }).toBe(0)
    } finally {
      await connection.close()
      await ws.cleanup()
    }
  })
})
