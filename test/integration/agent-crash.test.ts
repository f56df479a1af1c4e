/** Crash-resume: a worker process is SIGKILLed mid-command and a new one takes the run over. */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { npmWorkspace, openTestAudit, startRun, testPolicy, writeScript } from '../support/agent.js'
import { connectClient, uniqueTaskQueue } from '../support/temporal.js'

let audit: AuditStore
let client: Awaited<ReturnType<typeof connectClient>>
const workers: ChildProcess[] = []

beforeAll(async () => {
  audit = await openTestAudit()
  client = await connectClient()
})

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL')
  await client?.close()
  await audit?.close()
})

function startWorkerProcess(taskQueue: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('../support/worker-process.ts', import.meta.url))],
    {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('namespace'),
        DATABASE_URL: inject('databaseUrl'),
        TETHER_TASK_QUEUE: taskQueue,
        WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  workers.push(child)
  return new Promise((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('worker ready')) resolve(child)
    })
    child.on('exit', (code) => reject(new Error(`worker process exited with ${code} before it was ready`)))
  })
}

// Records each start, then works for a few seconds.
const SLOW = `require('node:fs').appendFileSync('starts.log', Date.now() + '\\n'); setTimeout(() => console.log('slow done'), 4000)`

async function starts(dir: string): Promise<number[]> {
  try {
    return (await readFile(join(dir, 'starts.log'), 'utf8')).trim().split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

describe('crash-resume', () => {
  it.each([
    { name: 'reruns an interrupted command on the new worker', noRetry: [] as string[], runs: 2 },
    {
      name: 'does not rerun a command on the noRetry list, and says so',
      noRetry: ['node slow.cjs'],
      runs: 1,
    },
  ])('$name', async ({ noRetry, runs }) => {
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
        testPolicy().allowExec('node slow.cjs'),
      )
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
      } else {
        expect(commands).toEqual([])
        const observation = JSON.stringify(transcript[2]?.content)
        expect(observation).toContain('[exec interrupted]')
        expect(observation).toContain('outcome is unknown')
      }
    } finally {
      await ws.cleanup()
    }
  })
})
