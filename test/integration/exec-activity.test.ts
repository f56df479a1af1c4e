/** The exec activity on the real dev server: heartbeats reach the server, cancellation kills the tree. */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client'
import { ActivityFailure, ApplicationFailure, defaultPayloadConverter, RetryState } from '@temporalio/common'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { killLeftovers, survivors, treeArgv, treeStarted } from '../fixtures/exec/probes.js'
import { type ExecHeartbeat, execCommand } from '../support/exec-activity.js'
import { connectClient, createWorker, uniqueTaskQueue } from '../support/temporal.js'
import { execCommandWorkflow } from '../support/workflows.js'

let dir: string
const pidFile = () => join(dir, 'pids')
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-temporal-'))
})
afterAll(async () => {
  await killLeftovers([pidFile()])
  await rm(dir, { recursive: true, force: true })
})

/** The latest heartbeat details the server holds for the workflow's pending activity. */
async function serverHeartbeat(handle: WorkflowHandle): Promise<ExecHeartbeat | undefined> {
  const { raw } = await handle.describe()
  const payload = raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0]
  return payload ? defaultPayloadConverter.fromPayload<ExecHeartbeat>(payload) : undefined
}

async function withWorker<T>(run: (start: typeof startExec) => Promise<T>): Promise<T> {
  const { client, close } = await connectClient()
  const taskQueue = uniqueTaskQueue('exec')
  const { worker, connection } = await createWorker({ taskQueue, activities: { execCommand } })
  function startExec(...args: Parameters<typeof execCommandWorkflow>) {
    return client.workflow.start(execCommandWorkflow, { taskQueue, workflowId: `exec-${taskQueue}`, args })
  }
  try {
    return await worker.runUntil(() => run(startExec))
  } finally {
    await connection.close()
    await close()
  }
}

describe('exec activity on the Temporal dev server', () => {
  it('heartbeats while running, and cancelling the workflow kills the whole process tree', async () => {
    await withWorker(async (start) => {
      const handle = await start({ argv: treeArgv('wait', pidFile()), cwd: dir, killGraceMs: 500 }, 2_000)
      const { child, grandchild } = await treeStarted(pidFile(), 60_000)
      // The server has the activity's heartbeat, with the bytes both processes printed.
      await expect
        .poll(async () => (await serverHeartbeat(handle))?.bytes ?? 0, { timeout: 60_000, interval: 200 })
        .toBeGreaterThan(0)

      await handle.cancel()
      const outcome = await handle.result()
      expect(outcome.cancelled?.status).toBe('cancelled')
      expect(outcome.cancelled?.stdout.text).toContain(`grandchild ${grandchild}`)
      const left = survivors(child, [grandchild])
      expect(left, `still running after the workflow was cancelled: ${left.join(', ')}`).toEqual([])
    })
  })

  it('returns a non-zero exit to the workflow as a result', async () => {
    await withWorker(async (start) => {
      const handle = await start({ argv: ['/bin/sh', '-c', 'echo broken >&2; exit 7'], cwd: dir }, 10_000)
      expect(await handle.result()).toMatchObject({
        completed: { status: 'exited', exitCode: 7, stderr: { text: 'broken\n' } },
      })
    })
  })

  it('fails the workflow with a non-retryable ExecInputError for invalid input, after one attempt', async () => {
    await withWorker(async (start) => {
      const handle = await start({ argv: ['echo', 'a\0b'], cwd: dir }, 10_000)
      const error = await handle.result().then(
        () => undefined,
        (failure: unknown) => failure,
      )
      expect(error).toBeInstanceOf(WorkflowFailedError)
      const activityFailure = (error as WorkflowFailedError).cause
      expect(activityFailure).toBeInstanceOf(ActivityFailure)
      expect((activityFailure as ActivityFailure).retryState).toBe(RetryState.NON_RETRYABLE_FAILURE)
      expect(activityFailure?.cause).toBeInstanceOf(ApplicationFailure)
      expect(activityFailure?.cause).toMatchObject({ type: 'ExecInputError', nonRetryable: true })
      expect((activityFailure?.cause as Error | undefined)?.message).toMatch(
        /^argv\[1\]: contains a NUL byte/,
      )
    })
  })
})
