/**
 * tether embedded from Python, as docs/embedding.md describes it: a workflow written with the official
 * `temporalio` package starts `agentRun` as a child on tether's task queue, answers its ask through the
 * `decide` Update, and receives its result; refused answers and rejected runs arrive as typed failures.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import {
  FIX_ADD,
  npmWorkspace,
  openTestAudit,
  startAgentWorker,
  testPolicy,
  writeScript,
} from '../support/agent.js'
import { pythonVenv } from '../support/python.js'
import { uniqueTaskQueue } from '../support/temporal.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/embedding-python/', import.meta.url))
let python: string
let audit: AuditStore
let agent: Awaited<ReturnType<typeof startAgentWorker>>

beforeAll(async () => {
  python = await pythonVenv(join(FIXTURE, 'requirements.txt'))
  audit = await openTestAudit()
  agent = await startAgentWorker(audit)
})

afterAll(async () => {
  await agent?.stop()
  await audit?.close()
})

describe('tether from a Python workflow', () => {
  it('starts agentRun as a child, answers its ask through the Update, and gets its result', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'approved.txt'] } }] },
          {
            toolCalls: [FIX_ADD],
          },
          { text: 'fixed' },
        ],
      })}`
      const taskQueue = uniqueTaskQueue('python')
      const workflowId = `nightly-${taskQueue}`
      const config = join(ws.path, '.nightly.json')
      await writeFile(
        config,
        JSON.stringify({
          address: inject('temporalAddress'),
          namespace: inject('namespace'),
          taskQueue,
          workflowId,
          approver: 'release-bot',
          request: {
            tetherTaskQueue: agent.taskQueue,
            missingWorkspace: join(ws.path, 'gone'),
            contract: {
              goal: 'make npm test pass',
              workspace: ws.path,
              verification: { command: ['npm', 'test'] },
              budgets: { maxSteps: 10, maxWallTime: '30m' },
              approvals: { timeout: '1h' },
              model,
            },
            // Approvers by name (`identity: unsigned`); a policy with keys needs signed answers (docs/embedding.md).
            policy: { ...testPolicy().toSpec(), identity: 'unsigned', approvers: ['release-bot'] },
          },
        }),
      )
      const { stdout } = await promisify(execFile)(python, [join(FIXTURE, 'nightly.py'), config], {
        timeout: 150_000,
      })
      const output = JSON.parse(stdout)
      const agentId = `${workflowId}-agent`

      expect(output.answered.ask).toMatchObject({ act: 'exec', target: 'touch approved.txt' })
      expect(output.answered.refused).toEqual({
        type: 'NotAnApprover',
        nonRetryable: true,
        message: expect.stringContaining('mallory may not answer'),
      })
      expect(output.answered.decided).toMatchObject({ decision: 'approved' })
      expect(output.result).toMatchObject({ runId: agentId, outcome: 'verified', steps: 3 })
      expect(existsSync(join(ws.path, 'approved.txt'))).toBe(true)
      expect(await readFile(join(ws.path, 'src/math.js'), 'utf8')).toContain('a + b')

      expect(output.rejected).toMatchObject({
        type: 'ContractRejected',
        message: `the workspace ${join(ws.path, 'gone')} does not exist on the worker`,
        result: { runId: `${agentId}-rejected`, outcome: 'failed', steps: 0 },
      })

      // The audit knows the child's parent and who answered.
      expect((await audit.listRuns({ limit: 100 })).items.find((r) => r.runId === agentId)).toMatchObject({
        parentRunId: workflowId,
        outcome: 'verified',
      })
      const timeline = await audit.runTimeline(agentId)
      expect(timeline.find((entry) => entry.type === 'approval')).toMatchObject({
        decision: 'approved',
        decidedBy: 'release-bot',
        channel: 'update',
      })
    } finally {
      await ws.cleanup()
    }
  })
})
