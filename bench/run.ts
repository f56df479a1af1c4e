/**
 * bench/run: the cost of durability per step, against the floor measured on the same server.
 * (a) the floor: ms per activity of a 50-activity no-op workflow, remote and local activities;
 *     tether's ms/step (agentRun, scripted model, command `true`); the same activities called in-process
 *     (no Temporal) as the step's own work; the activities and workflow tasks a step costs, counted in its
 *     history; and the ratio of tether's ms/step to (floor × activities per step + in-process work);
 * (b) Temporal history bytes per step at 10, 100 and 1,000 steps (summed over continue-as-new runs);
 * (c) steps/s for 20 concurrent runs on one worker, the CPU each step cost where, and p50 and p99 of the time
 *     a step takes, without and with fairness keys side by side (`--concurrent [N]`: only this, N runs).
 * Rounds interleave the floor, tether and the in-process run, so machine noise hits them alike.
 */
import { availableParallelism } from 'node:os'
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js'
import { MockActivityEnvironment } from '@temporalio/testing'
import { createActivities } from '../src/activities/index.js'
import { newRunId, type StartRunOptions, startAgentRun } from '../src/embed/client.js'
import { Policy } from '../src/policy/index.js'
import { parseContract } from '../src/run/contract.js'
import { type BenchStack, median, percentile, readCpu, startBenchStack, startFloorProbe } from './support.js'

const policy = Policy.tiered().layer('bench').allowExec('true')
const turns = (steps: number) => ({
  turns: [
    ...Array.from({ length: steps }, () => ({ toolCalls: [{ name: 'exec', args: { argv: ['true'] } }] })),
    { text: 'done' },
  ],
})

async function durableRun(stack: BenchStack, steps: number, scheduling?: StartRunOptions['scheduling']) {
  const ws = await stack.workspace(turns(steps))
  const started = performance.now()
  const startedAt = Date.now()
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
    ...(scheduling ? { scheduling } : {}),
  })
  const result = await handle.result()
  if (result.outcome !== 'finished') throw new Error(`bench run ended ${result.outcome}: ${result.reason}`)
  return { ms: performance.now() - started, startedAt, runId: handle.workflowId, steps: result.steps }
}

/** How long each step of a run took, from the run's start: the time between its steps' ends (ms). */
async function stepTimes(stack: BenchStack, run: { runId: string; startedAt: number }) {
  const times: number[] = []
  let last = run.startedAt
  for (const entry of await stack.audit.runTimeline(run.runId)) {
    if (entry.type !== 'step') continue
    const finished = (entry as { finishedAt: Date }).finishedAt.getTime()
    times.push(finished - last)
    last = finished
  }
  return times
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

/** Every event of a run, over all its continue-as-new runs. */
async function runHistories(stack: BenchStack, runId: string) {
  const histories = []
  for await (const execution of stack.client.workflow.list({ query: `WorkflowId = '${runId}'` })) {
    histories.push(await stack.client.workflow.getHandle(runId, execution.runId).fetchHistory())
  }
  return histories
}

/**
 * A run's history size: as the server stores and counts it (`historySizeBytes`, the figure Temporal's
 * limits apply to), and as JSON (`temporal workflow show --output json`, base64 payloads: about twice that).
 */
async function historyBytes(
  stack: BenchStack,
  runId: string,
): Promise<{ bytes: number; json: number; runs: number }> {
  let bytes = 0
  let json = 0
  let runs = 0
  for await (const execution of stack.client.workflow.list({ query: `WorkflowId = '${runId}'` })) {
    const handle = stack.client.workflow.getHandle(runId, execution.runId)
    const info = (await handle.describe()).raw.workflowExecutionInfo
    bytes += Number(info?.historySizeBytes ?? 0)
    json += historyToJSON(await handle.fetchHistory()).length
    runs += 1
  }
  return { bytes, json, runs }
}

/** Remote activities, local activities and workflow tasks per step, as the run's history records them. */
async function costPerStep(stack: BenchStack, runId: string, steps: number) {
  let remote = 0
  let local = 0
  let workflowTasks = 0
  for (const history of await runHistories(stack, runId)) {
    for (const event of history.events ?? []) {
      if (event.activityTaskScheduledEventAttributes) remote++
      if (event.markerRecordedEventAttributes?.markerName === 'core_local_activity') local++
      if (event.workflowTaskCompletedEventAttributes) workflowTasks++
    }
  }
  return { remote: remote / steps, local: local / steps, workflowTasks: workflowTasks / steps }
}

const stack = await startBenchStack()
const floor = await startFloorProbe(stack.temporalAddress)
/** (a) and (b): one run's cost per step against the floor, and its history per step. */
async function perStep() {
  const steps = 50
  const floorActivities = 50
  await durableRun(stack, 5) // warm-up: bundle, connections, caches
  await inProcessRun(stack, 5)
  await floor.remote(5)
  await floor.local(5)
  const rounds = 5
  const series = {
    remote: [] as number[],
    local: [] as number[],
    durable: [] as number[],
    inProcess: [] as number[],
  }
  let lastRun = { runId: '', steps: 0 }
  for (let round = 0; round < rounds; round++) {
    series.remote.push(await floor.remote(floorActivities))
    series.local.push(await floor.local(floorActivities))
    const run = await durableRun(stack, steps)
    series.durable.push(run.ms / run.steps)
    lastRun = run
    series.inProcess.push((await inProcessRun(stack, steps)) / (steps + 1))
  }
  const per = await costPerStep(stack, lastRun.runId, lastRun.steps)
  const [remote, local, durable, inProcess] = [
    series.remote,
    series.local,
    series.durable,
    series.inProcess,
  ].map(median) as [number, number, number, number]
  const expected = remote * per.remote + local * per.local + inProcess
  console.log(`(a) per step, medians of ${rounds} interleaved rounds on one tuned dev server`)
  console.log(
    `    floor: ${remote.toFixed(2)} ms per remote activity, ${local.toFixed(2)} ms per local activity ` +
      `(${floorActivities}-activity no-op workflows)`,
  )
  console.log(
    `    a step costs ${per.remote.toFixed(2)} remote + ${per.local.toFixed(2)} local activities, ` +
      `${per.workflowTasks.toFixed(2)} workflow tasks (counted in a ${steps}-step run's history)`,
  )
  console.log(`    in-process work (same activities, no Temporal): ${inProcess.toFixed(1)} ms/step`)
  console.log(`    tether (agentRun, ${steps} steps, command \`true\`): ${durable.toFixed(1)} ms/step`)
  console.log(
    `    floor × activities + in-process = ${remote.toFixed(2)} × ${per.remote.toFixed(2)} + ` +
      `${local.toFixed(2)} × ${per.local.toFixed(2)} + ${inProcess.toFixed(1)} = ${expected.toFixed(1)} ms/step`,
  )
  console.log(`    ratio tether / (floor × activities + in-process): ${(durable / expected).toFixed(2)}`)
  console.log(`    ratio tether / in-process: ${(durable / inProcess).toFixed(2)}`)

  console.log('(b) Temporal history per step (all continue-as-new runs summed; target ≤ 4 KB as stored)')
  for (const n of [10, 100, 1000]) {
    const run = await durableRun(stack, n)
    const { bytes, json, runs } = await historyBytes(stack, run.runId)
    console.log(
      `    ${String(n).padStart(4)} steps: ${(bytes / run.steps).toFixed(0)} bytes/step as the server stores it ` +
        `(${(json / run.steps).toFixed(0)} as JSON) over ${runs} run(s), ${(run.ms / run.steps).toFixed(1)} ms/step`,
    )
  }
}

/**
 * (c): steps per second for many runs at once, where the machine's CPU went, and how evenly the runs were
 * served: p50 and p99 of a step's time, without fairness keys (first come, first served) and with one key
 * per run (each run in turn), one after the other on the same stack.
 */
async function concurrentRuns(concurrent: number) {
  const each = concurrent > 50 ? 5 : 20
  const latency: string[] = []
  for (const fair of [false, true]) {
    const cpuBefore = readCpu()
    const started = performance.now()
    const runs = await Promise.all(
      Array.from({ length: concurrent }, () => durableRun(stack, each, { fair })),
    )
    const seconds = (performance.now() - started) / 1000
    const cpuAfter = readCpu()
    const stepsDone = concurrent * (each + 1)
    const label = fair ? 'with fairness keys' : 'without fairness'
    console.log(
      `(c) ${concurrent} concurrent runs × ${each + 1} steps on one worker, ${label}: ${(stepsDone / seconds).toFixed(1)} steps/s`,
    )
    // Where the machine's CPU went, per step: many concurrent steps are bound by it.
    const perStep = (cpuSeconds: number) => `${((cpuSeconds * 1000) / stepsDone).toFixed(1)} ms`
    const program = (name: string) => (cpuAfter.programs.get(name) ?? 0) - (cpuBefore.programs.get(name) ?? 0)
    const machine = cpuAfter.machine - cpuBefore.machine
    const worker = cpuAfter.self - cpuBefore.self
    const known = worker + program('node') + program('temporal') + program('postgres')
    const cores = availableParallelism()
    console.log(
      `    CPU per step: worker ${perStep(worker)}, its launcher and guard ${perStep(program('node'))}, ` +
        `Temporal ${perStep(program('temporal'))}, PostgreSQL ${perStep(program('postgres'))}, ` +
        `the rest (sandboxes, commands, kernel) ${perStep(machine - known)}; all ${perStep(machine)} ` +
        `on ${cores} cores, ${((machine / seconds / cores) * 100).toFixed(0)}% busy`,
    )
    const times = (await Promise.all(runs.map((run) => stepTimes(stack, run)))).flat().sort((a, b) => a - b)
    const [p50, p99] = [percentile(times, 50), percentile(times, 99)]
    latency.push(
      `    ${label.padEnd(20)} p50 ${p50} ms, p99 ${p99} ms, max ${times.at(-1)} ms: p99 / p50 ${(p99 / p50).toFixed(1)}`,
    )
  }
  console.log(`(c) a step's time under ${concurrent} concurrent runs (target p99 ≤ 3 × p50)`)
  for (const line of latency) console.log(line)
}

try {
  // `--concurrent [N]`: only (c), with N runs (default 20).
  const onlyConcurrent = process.argv[2] === '--concurrent'
  if (!onlyConcurrent) await perStep()
  else await durableRun(stack, 5) // warm-up
  await concurrentRuns(onlyConcurrent ? Number(process.argv[3] ?? 20) : 20)
} finally {
  await floor.stop()
  await stack.stop()
}
