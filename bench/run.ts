/**
 * bench/run: the cost of durability per step, and whether history stays flat.
 * (a) per-step time of agentRun on the dev server (scripted model, command `true`) vs the same activities
 *     called in-process without Temporal (MockActivityEnvironment), side by side → ratio;
 * (b) Temporal history bytes per step at 10, 100 and 1,000 steps (summed over continue-as-new runs);
 * (c) steps/s for 20 concurrent runs on one worker.
 */
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js'
import { MockActivityEnvironment } from '@temporalio/testing'
import { createActivities } from '../src/activities/index.js'
import { newRunId, startAgentRun } from '../src/client.js'
import { parseContract } from '../src/contract.js'
import { Policy } from '../src/policy/index.js'
import { type BenchStack, startBenchStack } from './support.js'

const policy = Policy.tiered().layer('bench').allowExec('true')
const turns = (steps: number) => ({
  turns: [
    ...Array.from({ length: steps }, () => ({ toolCalls: [{ name: 'exec', args: { argv: ['true'] } }] })),
    { text: 'done' },
  ],
})

async function durableRun(stack: BenchStack, steps: number) {
  const ws = await stack.workspace(turns(steps))
  const started = performance.now()
  const handle = await startAgentRun(stack.client, {
    contract: {
      goal: 'bench',
      workspace: ws.path,
      model: ws.model,
      budgets: { maxSteps: steps + 5, maxTokens: 1_000_000_000 },
    },
    policy,
    taskQueue: stack.taskQueue,
    runId: newRunId(),
  })
  const result = await handle.result()
  if (result.outcome !== 'finished') throw new Error(`bench run ended ${result.outcome}: ${result.reason}`)
  return { ms: performance.now() - started, runId: handle.workflowId, steps: result.steps }
}

/** The same steps, the same activities and the same Postgres writes, with no Temporal in between. */
async function inProcessRun(stack: BenchStack, steps: number) {
  const ws = await stack.workspace(turns(steps))
  const activities = createActivities({ audit: stack.audit })
  const env = new MockActivityEnvironment()
  const contract = parseContract({
    goal: 'bench',
    workspace: ws.path,
    model: ws.model,
    budgets: { maxSteps: steps + 5, maxTokens: 1_000_000_000 },
  })
  const runId = newRunId()
  const spec = policy.toSpec()
  const started = performance.now()
  await env.run(activities.tetherStartRun, {
    runId,
    contract,
    policy: spec,
    taskQueue: 'none',
    startedAt: Date.now(),
  })
  let seq = 1
  for (let step = 1; step <= steps + 1; step++) {
    const replySeq = seq
    const turn = (await env.run(activities.tetherModelTurn, {
      runId,
      step,
      replySeq,
      pending: [],
      contract,
    })) as Awaited<ReturnType<typeof activities.tetherModelTurn>>
    seq += 1 + turn.toolCalls.length
    for (const [index, call] of turn.toolCalls.entries()) {
      const verdict = (await env.run(activities.tetherCheckAction, {
        policy: spec,
        remembered: [],
        workspace: ws.path,
        call: call as never,
        noRetry: contract.noRetry,
      })) as Awaited<ReturnType<typeof activities.tetherCheckAction>>
      if (verdict.effect !== 'allow') throw new Error('bench command not allowed')
      await env.run(activities.tetherExec, {
        runId,
        step,
        pending: [],
        call: index,
        seq: replySeq + 1 + index,
        callId: call.id,
        argv: (call.args as { argv: string[] }).argv,
        workspace: ws.path,
        timeoutMs: 60_000,
        outputCeiling: contract.outputCeiling,
        noRetry: false,
      })
    }
    await env.run(activities.tetherRecordStep, {
      runId,
      step,
      toolCalls: turn.toolCalls,
      decision: 'bench',
      observation: '',
      inputTokens: 0,
      outputTokens: 0,
      startedAt: Date.now(),
      finishedAt: Date.now(),
      refusals: [],
    })
  }
  return performance.now() - started
}

async function historyBytes(stack: BenchStack, runId: string): Promise<{ bytes: number; runs: number }> {
  let bytes = 0
  let runs = 0
  for await (const execution of stack.client.workflow.list({ query: `WorkflowId = '${runId}'` })) {
    const history = await stack.client.workflow.getHandle(runId, execution.runId).fetchHistory()
    bytes += historyToJSON(history).length
    runs++
  }
  return { bytes, runs }
}

const stack = await startBenchStack()
try {
  const steps = 50
  await durableRun(stack, 5) // warm-up: bundle, connections, caches
  await inProcessRun(stack, 5)
  const durable: number[] = []
  const local: number[] = []
  for (let round = 0; round < 3; round++) {
    durable.push((await durableRun(stack, steps)).ms / (steps + 1))
    local.push((await inProcessRun(stack, steps)) / (steps + 1))
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
  console.log('(a) per-step time, scripted model, command `true` (median of 3 rounds of 50 steps)')
  console.log(`    durable (agentRun on the dev server): ${median(durable).toFixed(1)} ms/step`)
  console.log(`    in-process (same activities, no Temporal): ${median(local).toFixed(1)} ms/step`)
  console.log(`    ratio durable / in-process: ${(median(durable) / median(local)).toFixed(2)}`)

  console.log('(b) Temporal history per step (all continue-as-new runs summed)')
  for (const n of [10, 100, 1000]) {
    const run = await durableRun(stack, n)
    const { bytes, runs } = await historyBytes(stack, run.runId)
    console.log(
      `    ${String(n).padStart(4)} steps: ${(bytes / run.steps).toFixed(0)} bytes/step over ${runs} run(s), ${(run.ms / run.steps).toFixed(1)} ms/step`,
    )
  }

  const concurrent = 20
  const each = 20
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrent }, () => durableRun(stack, each)))
  const seconds = (performance.now() - started) / 1000
  console.log(
    `(c) ${concurrent} concurrent runs × ${each + 1} steps on one worker: ${((concurrent * (each + 1)) / seconds).toFixed(1)} steps/s`,
  )
} finally {
  await stack.stop()
}
