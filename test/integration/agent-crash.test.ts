/**
 * Crash-resume: a worker process is SIGKILLed mid-command, mid-model-call and mid-file-tool, and a new one
 * takes the run over. Each test prints its time to resume (from the kill to the retry starting on the new
 * worker); docs/durability.md lists them per activity kind. The tests run side by side, each on a task
 * queue and workers of its own: most of their time is Temporal's heartbeat timeout, waited once for all.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { WorkflowHandle } from '@temporalio/client'
import { tsToMs } from '@temporalio/common/lib/time.js'
import { temporal } from '@temporalio/proto'
import { afterAll, beforeAll, describe, type ExpectStatic, it } from 'vitest'
import { type AuditStore, verifyRunHistory } from '../../src/audit/index.js'
import type { agentRun } from '../../src/workflows/index.js'
import {
  approveTheAsk,
  npmWorkspace,
  openTestAudit,
  startRun,
  testPolicy,
  writeScript,
} from '../support/agent.js'
import { tether } from '../support/cli.js'
import { type LlmServer, openAiChat, startLlmServer } from '../support/llm-server.js'
import { connectClient, pendingActivity, uniqueTaskQueue } from '../support/temporal.js'
import { workerProcesses } from '../support/worker-processes.js'

let audit: AuditStore
let client: Awaited<ReturnType<typeof connectClient>>
const workers = workerProcesses()

beforeAll(async () => {
  audit = await openTestAudit()
  client = await connectClient()
})

afterAll(async () => {
  workers.killAll()
  await client?.close()
  await audit?.close()
})

const startWorkerProcess = (taskQueue: string, env?: Record<string, string>) => workers.start(taskQueue, env)

// Records each start, then works for a few seconds.
const SLOW = `require('node:fs').appendFileSync('starts.log', Date.now() + '\\n'); setTimeout(() => console.log('slow done'), 4000)`

async function starts(dir: string): Promise<number[]> {
  try {
    return (await readFile(join(dir, 'starts.log'), 'utf8')).trim().split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

describe.concurrent('crash-resume', () => {
  it.for([
    { name: 'reruns an interrupted command on the new worker', noRetry: [] as string[], runs: 2 },
    {
      name: 'does not rerun a command on the noRetry list, and says so',
      noRetry: ['node slow.cjs'],
      runs: 1,
    },
    {
      // Its own activity judged it again and recorded the decision: the retry judges again, and says so.
      name: 'does not rerun an approved command on the noRetry list; its decision is recorded once',
      noRetry: ['node slow.cjs'],
      runs: 1,
      approved: true,
    },
  ])('$name', async ({ noRetry, runs, approved }, { expect }) => {
    const taskQueue = uniqueTaskQueue('crash')
    const ws = await npmWorkspace()
    try {
      await writeFile(join(ws.path, 'slow.cjs'), SLOW)
      const model = `scripted:${await writeScript(ws.path, {
        turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['node', 'slow.cjs'] } }] }, { text: 'done' }],
      })}`
      const first = await startWorkerProcess(taskQueue)
      const handle = await startRun(
        client.client,
        taskQueue,
        { goal: 'survive a crash', workspace: ws.path, model, noRetry },
        // Exec asks by default.
        approved ? testPolicy() : testPolicy().allowExec('node slow.cjs'),
      )
      if (approved) await approveTheAsk(handle)
      await expect.poll(() => starts(ws.path), { timeout: 60_000 }).toHaveLength(1)
      first.kill('SIGKILL')
      const killedAt = Date.now()
      await startWorkerProcess(taskQueue)
      const result = await handle.result()
      const resumedAt = Date.now()
      expect(result).toMatchObject({ outcome: 'finished', steps: 2 })
      expect(await starts(ws.path)).toHaveLength(runs)
      const timeToResume =
        runs === 2 ? ((await starts(ws.path))[1] as number) - killedAt : resumedAt - killedAt
      console.log(`crash-resume (${runs === 2 ? 'rerun' : 'noRetry'}): time to resume ${timeToResume} ms`)

      const commands = await audit.executedCommands({ runId: handle.workflowId })
      const transcript = await audit.loadMessages(handle.workflowId)
      expect(transcript.map((m) => m.seq)).toEqual(transcript.map((_, i) => i))
      const timeline = await audit.runTimeline(handle.workflowId)
      expect(timeline.filter((e) => e.type === 'step').map((e) => e.step)).toEqual([1, 2])
      if (runs === 2) {
        expect(commands.map((c) => [c.step, c.call, c.attempt, c.status, c.exitCode])).toEqual([
          [1, 0, 2, 'exited', 0],
        ])
        // What the cut-off attempt wrote is told as its doing, not as an edit from outside the run.
        const observation = JSON.stringify(transcript[2]?.content)
        expect(observation).toContain('An earlier attempt of this call was cut off')
        expect(observation).toContain('A starts.log')
        expect(observation).not.toContain('changed outside the run')
      } else {
        const observation = JSON.stringify(transcript[2]?.content)
        expect(observation).toContain('[exec interrupted]')
        expect(observation).toContain('outcome is unknown')
        // What ran shows it, from the start of the attempt that ran it.
        const [first] = await audit.execAttempts(handle.workflowId)
        expect(commands.map((c) => [c.step, c.call, c.attempt, c.status, c.argv.join(' ')])).toEqual([
          [1, 0, 2, 'unknown', 'node slow.cjs'],
        ])
        expect(commands[0]?.startedAt).toEqual(first?.startedAt)
        const ran = await tether(['audit', 'ran', '--run', handle.workflowId])
        expect(ran.stdout).toMatch(/ 1 +node slow\.cjs +unknown \(worker lost\) /)
        // The audit still agrees with the run's history, the cut-off row included.
        const report = await verifyRunHistory(client.client, audit, handle.workflowId)
        expect(report.findings).toEqual([])
        expect(report.checked.exec_results).toBe(1)
        if (approved) {
          expect(report.checked.approvals).toBe(1)
          const decisions = timeline.filter((e) => e.type === 'policy' && e.kind === 'decision')
          expect(decisions).toEqual([expect.objectContaining({ decidedBy: 'alice', effect: 'allow' })])
        }
      }
    } finally {
      await ws.cleanup()
    }
  })
})

// Records each start; works until it is cut off, except on its seventh start, when it finishes in a second
// (a fixed duration would race a loaded machine's worker start-up, and could finish before it is cut off).
const LONG = [
  "const fs = require('node:fs')",
  "fs.appendFileSync('starts.log', Date.now() + '\\n')",
  "const n = fs.readFileSync('starts.log', 'utf8').trim().split('\\n').length",
  "setTimeout(() => console.log('long done'), n < 7 ? 600000 : 1000)",
].join('; ')

describe.concurrent('rolling restarts', () => {
  it('finish a command cut off by three SIGKILLs and three SIGTERMs: six attempts cut off, one that ended', async ({
    expect,
  }) => {
    const taskQueue = uniqueTaskQueue('rolling')
    const ws = await npmWorkspace()
    // A stopping worker gives its command a grace time before handing it over: 30 s in production.
    const env = { SHUTDOWN_GRACE: '1 second' }
    try {
      await writeFile(join(ws.path, 'long.cjs'), LONG)
      const model = `scripted:${await writeScript(ws.path, {
        turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['node', 'long.cjs'] } }] }, { text: 'done' }],
      })}`
      let worker = await startWorkerProcess(taskQueue, env)
      const handle = await startRun(
        client.client,
        taskQueue,
        { goal: 'survive a rolling restart', workspace: ws.path, model },
        testPolicy().allowExec('node long.cjs'),
      )
      const signals = ['SIGKILL', 'SIGKILL', 'SIGKILL', 'SIGTERM', 'SIGTERM', 'SIGTERM'] as const
      for (const [i, signal] of signals.entries()) {
        await expect.poll(() => starts(ws.path), { timeout: 120_000, interval: 200 }).toHaveLength(i + 1)
        // As a rolling restart does it: the next worker is up before this one goes.
        const next = await startWorkerProcess(taskQueue, env)
        const gone = new Promise((resolve) => worker.once('exit', resolve))
        worker.kill(signal)
        await gone
        worker = next
      }
      const result = await handle.result()
      expect(result).toMatchObject({ outcome: 'finished', steps: 2 })
      expect(await starts(ws.path)).toHaveLength(7)

      const attempts = await audit.execAttempts(handle.workflowId)
      expect(attempts.map((a) => [a.step, a.call, a.attempt, a.outcome])).toEqual([
        [1, 0, 1, 'lost'],
        [1, 0, 2, 'lost'],
        [1, 0, 3, 'lost'],
        [1, 0, 4, 'handed over'],
        [1, 0, 5, 'handed over'],
        [1, 0, 6, 'handed over'],
        [1, 0, 7, 'exited'],
      ])
      expect(attempts.every((a) => a.endedAt !== undefined)).toBe(true)
      const commands = await audit.executedCommands({ runId: handle.workflowId })
      expect(commands.map((c) => [c.step, c.call, c.attempt, c.status, c.exitCode])).toEqual([
        [1, 0, 7, 'exited', 0],
      ])
    } finally {
      await ws.cleanup()
    }
  }, 600_000)
})

/** The attempt of `activity` running now and when it started, if one is. */
async function runningAttempt(
  handle: WorkflowHandle<typeof agentRun>,
  activity: string,
): Promise<{ attempt: number; startedAt: number } | undefined> {
  const pending = await pendingActivity(handle, activity)
  return pending?.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
    ? { attempt: pending.attempt ?? 0, startedAt: tsToMs(pending.lastStartedTime) }
    : undefined
}

/**
 * Waits until attempt `attempt` (or a later one) of `activity` runs; returns when it started (epoch ms).
 * Takes the test's own `expect`: the tests run side by side.
 */
async function attemptStarted(
  expect: ExpectStatic,
  handle: WorkflowHandle<typeof agentRun>,
  activity: string,
  attempt: number,
): Promise<number> {
  let startedAt: number | undefined
  await expect
    .poll(
      async () => {
        const running = await runningAttempt(handle, activity)
        if (running && running.attempt >= attempt) startedAt = running.startedAt
        return startedAt !== undefined
      },
      { timeout: 60_000, interval: 50 },
    )
    .toBe(true)
  return startedAt as number
}

describe.concurrent('crash-resume of the other long activities', () => {
  let llm: LlmServer
  beforeAll(async () => {
    llm = await startLlmServer()
  })
  afterAll(async () => {
    await llm?.close()
  })

  it('retries a model call cut off by the crash on the new worker', async ({ expect }) => {
    const taskQueue = uniqueTaskQueue('crash-model')
    const ws = await npmWorkspace()
    // The first call never answers (a slow model); the retry's call gets the answer.
    llm.reset()
    llm.reply('hang', openAiChat({ text: 'Done.' }))
    const env = { TETHER_OPENAI_BASE_URL: llm.baseUrl }
    try {
      const first = await startWorkerProcess(taskQueue, env)
      const handle = await startRun(
        client.client,
        taskQueue,
        { goal: 'survive a crash', workspace: ws.path, model: 'openai-compatible:slow-model' },
        testPolicy(),
      )
      await llm.received(1)
      first.kill('SIGKILL')
      const killedAt = Date.now()
      await startWorkerProcess(taskQueue, env)
      const result = await handle.result()
      const finishedAt = Date.now()
      expect(result).toMatchObject({ outcome: 'finished', steps: 1, reason: 'Done.' })
      expect(llm.requests).toHaveLength(2)
      const resumedAt = llm.requests[1]?.receivedAt as number
      console.log(
        `crash-resume (model call): time to resume ${resumedAt - killedAt} ms, run finished ${finishedAt - killedAt} ms after the kill`,
      )
      const transcript = await audit.loadMessages(handle.workflowId)
      expect(transcript.map((m) => m.content)).toMatchObject([
        { role: 'user' },
        { role: 'assistant', text: 'Done.' },
      ])
    } finally {
      await ws.cleanup()
    }
  })

  it('retries a file tool cut off by the crash on the new worker', async ({ expect }) => {
    const taskQueue = uniqueTaskQueue('crash-files')
    const ws = await npmWorkspace()
    try {
      // Enough files that a search takes a few seconds.
      for (let folder = 0; folder < 100; folder++) {
        const dir = join(ws.path, 'many', `d${folder}`)
        await mkdir(dir, { recursive: true })
        await Promise.all(
          Array.from({ length: 200 }, (_, file) =>
            writeFile(join(dir, `f${file}.txt`), folder === 99 && file === 199 ? 'a needle\n' : 'hay\n'),
          ),
        )
      }
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          { toolCalls: [{ name: 'search', args: { pattern: 'needle', glob: 'many/**' } }] },
          { text: 'Found.' },
        ],
      })}`
      const first = await startWorkerProcess(taskQueue)
      const handle = await startRun(
        client.client,
        taskQueue,
        { goal: 'survive a crash', workspace: ws.path, model },
        testPolicy(),
      )
      await attemptStarted(expect, handle, 'tetherFileTool', 1)
      first.kill('SIGKILL')
      const killedAt = Date.now()
      await startWorkerProcess(taskQueue)
      const resumedAt = await attemptStarted(expect, handle, 'tetherFileTool', 2)
      const result = await handle.result()
      const finishedAt = Date.now()
      expect(result).toMatchObject({ outcome: 'finished', steps: 2, reason: 'Found.' })
      console.log(
        `crash-resume (file tool): time to resume ${resumedAt - killedAt} ms, run finished ${finishedAt - killedAt} ms after the kill`,
      )
      const transcript = await audit.loadMessages(handle.workflowId)
      expect(JSON.stringify(transcript[2]?.content)).toContain('many/d99/f199.txt:1: a needle')
    } finally {
      await ws.cleanup()
    }
  })
})
