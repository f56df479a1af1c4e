/**
 * bench/run: the cost of durability per step, against the floor measured on the same server.
 * (a) the floor (`--step`: only this): ms per activity of a 50-activity no-op workflow, remote and local activities;
 *     tether's ms/step (agentRun, scripted model, command `true`); the same activities called in-process
 *     (no Temporal) as the step's own work; the activities and workflow tasks a step costs, counted in its
 *     history; and the ratio of tether's ms/step to (floor × activities per step + in-process work);
 * (b) Temporal history bytes per step at 10, 100 and 1,000 steps (summed over continue-as-new runs), with a
 *     small policy and a 2,000-rule one, by reference and inline (`--history`: only this);
 * (c) steps/s for 20 concurrent runs on one worker, and the CPU each step cost in each process tree the bench
 *     started (worker, launcher and sandboxes, Temporal, PostgreSQL: support.ts `readCpu`), against the
 *     machine's, and beside it the floor of a step's shape: as many workflows at once whose steps are two
 *     no-op remote activities (`--concurrent`: only this); with `--concurrent N`, p50 and p99 of a step's time under N runs
 *     at once, without and with fairness keys side by side (`--fairness [N]`: only that);
 * (d) ms/step with tracing on (a second worker on the same server exporting every span over OTLP/HTTP to a
 *     loopback receiver, metrics on a Prometheus endpoint) against tracing off (`--tracing [rounds]`: only this);
 * (e) the audit's write transactions per step (`--audit`: only this);
 * (f) one long run whose commands print, its step times from start to end, and a turn's read of its
 *     transcript whole against kept (`--long [steps]`: only this, not in the default set).
 * Rounds interleave the floor, tether and the in-process run, so machine noise hits them alike.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { availableParallelism, loadavg } from 'node:os'
import { MockActivityEnvironment } from '@temporalio/testing'
import { NativeConnection } from '@temporalio/worker'
import { createActivities, StepPacer, stepPacer } from '../src/activities/index.js'
import { KeptTranscripts } from '../src/activities/transcript.js'
import { newRunId, type StartRunOptions } from '../src/embed/client.js'
import { WorkerTelemetry } from '../src/embed/telemetry.js'
import { createTetherWorker, type TetherWorkerOptions } from '../src/embed/worker.js'
import { Policy } from '../src/policy/index.js'
import { parseContract } from '../src/run/contract.js'
import type { StepRecord } from '../src/run/index.js'
import { policyOfRules } from './big-policy.js'
import {
  type BenchStack,
  type CpuReading,
  cpuSpent,
  historyBytes,
  LAUNCHER,
  median,
  POSTGRES,
  percentile,
  readCpu,
  repeated,
  scriptedRun,
  scriptedTurns,
  startBenchStack,
  startFloorProbe,
  stepTimes,
  TEMPORAL,
  WORKER,
} from './support.js'

const policy = Policy.tiered().layer('bench').allowExec('true')
/** A scripted run of `steps` commands, on the stack's worker or the one serving `taskQueue`. */
const durableRun = (
  stack: BenchStack,
  steps: number,
  options: {
    taskQueue?: string
    scheduling?: StartRunOptions['scheduling']
    policy?: Policy
    byReference?: boolean
  } = {},
) =>
  scriptedRun(
    { ...stack, taskQueue: options.taskQueue ?? stack.taskQueue },
    repeated(['true'], steps),
    options.policy ?? policy,
    options.scheduling,
    options.byReference ? stack.audit : undefined,
  )

/**
 * The same steps, the same activity calls with the same inputs and the same Postgres writes as agentRun
 * makes them today, with no Temporal in between: the policy judged with the model turn, each step's row
 * handed to the next turn's commit, the workspace's tree carried from one command to the next.
 */
async function inProcessRun(stack: BenchStack, steps: number) {
  const ws = await stack.workspace(scriptedTurns(repeated(['true'], steps)))
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
  const preparation = (await env.run(activities.tetherPrepareRun, { contract, policy: spec })) as Awaited<
    ReturnType<typeof activities.tetherPrepareRun>
  >
  const digest = preparation.policyDigest ? { policyDigest: preparation.policyDigest } : {}
  const laid = (await env.run(activities.tetherBeginRun, {
    runId,
    contract,
    policy: spec,
    ...digest,
    taskQueue: 'none',
    startedAt: Date.now(),
  })) as Awaited<ReturnType<typeof activities.tetherBeginRun>>
  let tree = laid.tree
  const carried = () => (tree ? { tree } : {})
  let seq = laid.nextSeq ?? 1
  let previousStep: StepRecord | undefined
  for (let step = 1; step <= steps + 1; step++) {
    const startedAt = Date.now()
    const replySeq = seq
    const turn = (await env.run(activities.tetherModelTurn, {
      runId,
      step,
      replySeq,
      pending: [],
      judge: { ...digest, remembered: [], workspace: ws.path, noRetry: contract.noRetry, ...carried() },
      ...(previousStep ? { previousStep } : {}),
    })) as Awaited<ReturnType<typeof activities.tetherModelTurn>>
    previousStep = undefined
    seq += 1 + turn.toolCalls.length
    for (const [index, call] of turn.toolCalls.entries()) {
      if (turn.verdicts?.[index]?.effect !== 'allow') throw new Error('bench command not allowed')
      const summary = (await env.run(activities.tetherExec, {
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
        ...digest,
        ...carried(),
      })) as Awaited<ReturnType<typeof activities.tetherExec>>
      if (summary.tree) tree = summary.tree
    }
    const record: StepRecord = {
      runId,
      step,
      toolCalls: turn.toolCalls,
      decision: 'bench',
      observation: '',
      inputTokens: 0,
      outputTokens: 0,
      startedAt,
      finishedAt: Date.now(),
      refusals: [],
    }
    // As agentRun: a step with calls is recorded by the next turn's commit, the last one on its own.
    if (turn.toolCalls.length > 0) previousStep = record
    else await env.run(activities.tetherRecordStep, record)
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
}

/**
 * (b): history bytes per step at 10, 100 and 1,000 steps, with the bench's small policy and a 2,000-rule one,
 * each started by reference (as `tether run` starts runs) and, for the big one, inline as well (an embedder
 * without the audit).
 */
async function historyPerStep() {
  const big = policyOfRules(2_000)
  const policies = [
    { name: `small policy (${ruleCount(policy)} rules)`, policy, byReference: true },
    { name: `${ruleCount(big)}-rule policy`, policy: big, byReference: true },
    { name: `${ruleCount(big)}-rule policy inline`, policy: big, byReference: false },
  ]
  console.log('(b) Temporal history per step (all continue-as-new runs summed; target ≤ 4 KB as stored)')
  for (const n of [10, 100, 1000]) {
    for (const { name, policy, byReference } of policies) {
      const run = await durableRun(stack, n, { policy, byReference })
      const { bytes, json, runs } = await historyBytes(stack, run.runId)
      console.log(
        `    ${String(n).padStart(4)} steps, ${name.padEnd(26)} ${(bytes / run.steps).toFixed(0)} bytes/step as the ` +
          `server stores it (${(json / run.steps).toFixed(0)} as JSON) over ${runs} run(s), ` +
          `${(run.ms / run.steps).toFixed(1)} ms/step`,
      )
    }
  }
}

function ruleCount(policy: Policy): number {
  return policy.toSpec().layers.reduce((sum, layer) => sum + layer.rules.length, 0)
}

/**
 * (f) a long run (`--long [steps]`, 300 unless told) whose command prints about 2 KB a step: its steps' times
 * at the start, the middle and the end; and at its end, what a model turn reads of the transcript — the whole
 * of it, as every turn did before the worker kept transcripts, against what a kept one reads (the messages
 * since the turn before), interleaved.
 */
async function longRun(steps: number) {
  const printing = Policy.tiered().layer('bench').allowExec('seq *')
  const startedAt = Date.now()
  const run = await scriptedRun(stack, repeated(['seq', '1', '600'], steps), printing)
  const times = (await stepTimes(stack, { runId: run.runId, startedAt })).steps
  const window = (from: number) => median(times.slice(from, from + 30))
  const [first, middle, last] = [
    window(0),
    window(Math.floor(times.length / 2) - 15),
    window(times.length - 30),
  ]
  console.log(`(f) one run of ${run.steps} steps, each command printing about 2 KB (median of 30 steps)`)
  console.log(
    `    ms/step at the start ${first.toFixed(1)}, the middle ${middle.toFixed(1)}, the end ${last.toFixed(1)}: ` +
      `end / start ${(last / first).toFixed(2)}`,
  )
  const count = await stack.audit.messageCount(run.runId)
  const whole: number[] = []
  const kept: number[] = []
  let bytes = 0
  for (let round = 0; round < 11; round++) {
    let from = performance.now()
    const messages = await stack.audit.loadMessages(run.runId, { limit: count })
    whole.push(performance.now() - from)
    bytes = JSON.stringify(messages).length
    // A worker that kept the transcript at the turn before: the reply and the result since are new.
    const transcripts = new KeptTranscripts(stack.audit)
    await transcripts.read(run.runId, count - 2)
    from = performance.now()
    await transcripts.read(run.runId, count)
    kept.push(performance.now() - from)
  }
  console.log(
    `    a turn's read of the transcript at the end (${count} messages, ${(bytes / 1024).toFixed(0)} KB as JSON, ` +
      `median of 11): whole ${median(whole).toFixed(2)} ms, kept ${median(kept).toFixed(2)} ms: ` +
      `${(median(whole) / median(kept)).toFixed(1)}×`,
  )
}

/**
 * (e): the audit's write transactions per step (each takes a transaction id; reads take none): over a whole
 * run, its start and finish included, and per step alone — the difference between a short and a long run.
 */
async function auditCommitsPerStep(steps = 20) {
  const txid = async () =>
    Number((await stack.audit.pool.query<{ t: string }>('select txid_current() as t')).rows[0]?.t)
  const commitsOf = async (n: number) => {
    const before = await txid()
    const run = await durableRun(stack, n)
    // The reading itself takes one.
    return { commits: (await txid()) - before - 1, steps: run.steps }
  }
  const run = await commitsOf(steps)
  console.log(
    `(e) audit write transactions: ${(run.commits / run.steps).toFixed(2)} per step (${run.commits} over a ${run.steps}-step run, start and finish included)`,
  )
  const [short, long] = [await commitsOf(10), await commitsOf(30)]
  console.log(
    `    per step alone: ${((long.commits - short.commits) / (long.steps - short.steps)).toFixed(2)} ` +
      `(${short.commits} over ${short.steps} steps, ${long.commits} over ${long.steps}; target ≤ 2)`,
  )
}

/**
 * (c): steps per second for many runs at once, and the CPU each process tree of the bench spent per step;
 * on the stack's worker, or the one serving `taskQueue`.
 */
async function concurrentRuns(concurrent: number, taskQueue?: string, label = '') {
  const each = 20
  const rssBefore = process.memoryUsage().rss
  let rssPeak = rssBefore
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
  }, 200)
  const before = readCpu(stack.roots)
  const started = performance.now()
  const runs = await Promise.all(
    Array.from({ length: concurrent }, () => durableRun(stack, each, taskQueue ? { taskQueue } : {})),
  )
  const seconds = (performance.now() - started) / 1000
  const spent = cpuSpent(before, readCpu(stack.roots))
  clearInterval(sampler)
  const stepsDone = concurrent * (each + 1)
  const stepsPerSecond = stepsDone / seconds
  // A workflow task that times out is a run that stalled (and replays): the cliff's signature.
  // (A sticky task not taken within its schedule-to-start timeout is one too: it goes to the shared queue.)
  const timeoutKinds = new Map<string, number>()
  for (const run of runs) {
    const history = await stack.client.workflow.getHandle(run.runId).fetchHistory()
    for (const event of history.events ?? []) {
      const timedOut = event.workflowTaskTimedOutEventAttributes
      if (!timedOut) continue
      const kind = timedOut.timeoutType === 2 ? 'schedule-to-start' : 'start-to-close'
      timeoutKinds.set(kind, (timeoutKinds.get(kind) ?? 0) + 1)
    }
  }
  const timeouts =
    timeoutKinds.size === 0 ? '0' : [...timeoutKinds].map(([kind, count]) => `${count} ${kind}`).join(', ')
  console.log(
    `(c) ${concurrent} concurrent runs × ${each + 1} steps on one worker${label}: ${stepsPerSecond.toFixed(1)} steps/s, ` +
      `${timeouts} workflow-task timeouts, worker RSS +${((rssPeak - rssBefore) / concurrent / 2 ** 20).toFixed(2)} MiB per active run at the peak`,
  )
  // Many concurrent steps are bound by the CPU: per step, by process tree of this bench.
  return { stepsPerSecond, steps: each + 1, cpu: printCpu(spent, stepsDone, seconds) }
}

/** ms of CPU per step in each process tree of the bench (undefined: a server of the user's own), and in all. */
function cpuPerStep(spent: CpuReading, steps: number) {
  const per = (role: string) => {
    const seconds = spent.roles.get(role)
    return seconds === undefined ? undefined : (seconds * 1000) / steps
  }
  const all = ([...spent.roles.values()].reduce((sum, value) => sum + value, 0) * 1000) / steps
  return {
    worker: per(WORKER),
    launcher: per(LAUNCHER),
    temporal: per(TEMPORAL),
    postgres: per(POSTGRES),
    all,
  }
}

/** Prints the CPU per step of each process tree and of the machine; returns the trees' figures. */
function printCpu(spent: CpuReading, steps: number, seconds: number) {
  const cpu = cpuPerStep(spent, steps)
  const ms = (value: number | undefined) =>
    value === undefined ? 'not measured (a server of your own)' : `${value.toFixed(1)} ms`
  const cores = availableParallelism()
  const machine = (spent.machine * 1000) / steps
  console.log(
    `    CPU per step, by process tree: worker ${ms(cpu.worker)}, its launcher and sandboxes ${ms(cpu.launcher)}, ` +
      `Temporal ${ms(cpu.temporal)}, PostgreSQL ${ms(cpu.postgres)}; all ${ms(cpu.all)}`,
  )
  console.log(
    `    the machine: ${ms(machine)} per step on ${cores} cores, ` +
      `${((spent.machine / seconds / cores) * 100).toFixed(0)}% busy, ${ms(machine - cpu.all)} of it ` +
      'outside this bench (other tenants, and kernel work charged to no process)',
  )
  return cpu
}

/**
 * (c), the floor beside it: the same number of workflows at once on the same server, each step two no-op
 * remote activities (the target shape: one for the model turn, one for the tool call) and nothing else. What
 * Temporal and the SDK cost per step whatever the activities do; a CPU target below it cannot be met by work
 * in tether's own activities.
 */
async function floorAtOnce(
  concurrent: number,
  tether: { steps: number; cpu: ReturnType<typeof cpuPerStep> },
) {
  const { steps } = tether
  await floor.remoteAtOnce(concurrent, steps * 2) // warm-up: a round as large as the one measured
  const before = readCpu(stack.roots)
  const ms = await floor.remoteAtOnce(concurrent, steps * 2)
  const spent = cpuSpent(before, readCpu(stack.roots))
  const stepsDone = concurrent * steps
  console.log(
    `    the floor, ${concurrent} workflows × ${steps} steps of two no-op remote activities at once: ` +
      `${(stepsDone / (ms / 1000)).toFixed(1)} steps/s`,
  )
  const floorCpu = printCpu(spent, stepsDone, ms / 1000)
  const ratio = (ours: number | undefined, theirs: number | undefined) =>
    ours === undefined || theirs === undefined ? 'n/a' : (ours / theirs).toFixed(2)
  console.log(
    `    tether / floor, CPU per step: worker ${ratio(tether.cpu.worker, floorCpu.worker)}, Temporal ` +
      `${ratio(tether.cpu.temporal, floorCpu.temporal)}, all ${ratio(tether.cpu.all, floorCpu.all)}`,
  )
}

/**
 * (d): what tracing costs a step. A second worker on the same server and audit traces everything (spans
 * exported over OTLP/HTTP to a loopback receiver that reads and drops them; metrics on a Prometheus
 * endpoint); rounds interleave a run on it with one on the untraced worker. Beside the wall time, the CPU
 * this process (both workers, their workflow threads, the receiver) spent per step: on a loaded machine
 * every millisecond of CPU costs several of wall time, so the CPU figure is the steadier one.
 */
async function tracingOverhead(rounds = 7) {
  const spans = { requests: 0, bytes: 0 }
  const receiver = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => {
      spans.bytes += chunk.length
    })
    request.on('end', () => {
      spans.requests += 1
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  const telemetry = new WorkerTelemetry({
    traces: {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces`,
      protocol: 'http/protobuf',
    },
    prometheus: { host: '127.0.0.1', port: 0 },
    content: 'off',
    serviceName: 'tether-bench',
  })
  await telemetry.start()
  const traced = await secondWorker('traced', { telemetry })
  const { taskQueue } = traced
  try {
    const steps = 50
    await durableRun(stack, 5, { taskQueue }) // warm-up: the traced bundle, connections, caches
    const measured = {
      off: { ms: [] as number[], cpu: [] as number[] },
      on: { ms: [] as number[], cpu: [] as number[] },
    }
    const measure = async (into: (typeof measured)['on'], queue?: string) => {
      const before = process.cpuUsage()
      const run = await durableRun(stack, steps, queue ? { taskQueue: queue } : {})
      const cpu = process.cpuUsage(before)
      into.ms.push(run.ms / run.steps)
      into.cpu.push((cpu.user + cpu.system) / 1000 / run.steps)
    }
    const load = loadavg()[0] ?? 0
    for (let round = 0; round < rounds; round++) {
      // Alternating which goes first, so a trend in the machine's load falls on both alike.
      if (round % 2 === 0) {
        await measure(measured.off)
        await measure(measured.on, taskQueue)
      } else {
        await measure(measured.on, taskQueue)
        await measure(measured.off)
      }
    }
    const [offMs, onMs] = [median(measured.off.ms), median(measured.on.ms)]
    const [offCpu, onCpu] = [median(measured.off.cpu), median(measured.on.cpu)]
    const percent = (on: number, off: number) => `${(((on - off) / off) * 100).toFixed(1)}%`
    // The spread: each figure's range over the rounds, and the overhead of each round's pair.
    const range = (values: number[]) => `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`
    const pairs = (series: 'ms' | 'cpu') => {
      const overheads = measured.on[series].map((on, round) => {
        const off = measured.off[series][round] as number
        return ((on - off) / off) * 100
      })
      return `${range(overheads)}%`
    }
    console.log(
      `(d) tracing, medians of ${rounds} interleaved rounds of ${steps}-step runs on one server ` +
        `(load average ${load.toFixed(1)} → ${(loadavg()[0] ?? 0).toFixed(1)} on ${availableParallelism()} cores)`,
    )
    console.log(
      `    tracing off: ${offMs.toFixed(1)} ms/step (${range(measured.off.ms)}), ${offCpu.toFixed(1)} ms CPU/step ` +
        `(${range(measured.off.cpu)}) in the worker process`,
    )
    console.log(
      `    tracing on:  ${onMs.toFixed(1)} ms/step (${range(measured.on.ms)}), ${onCpu.toFixed(1)} ms CPU/step ` +
        `(${range(measured.on.cpu)}) (every span exported over OTLP/HTTP)`,
    )
    console.log(
      `    overhead: ${percent(onMs, offMs)} per durable step (target ≤ 5%), ratio on / off ${(onMs / offMs).toFixed(3)}; ` +
        `CPU ${percent(onCpu, offCpu)}; round by round: wall ${pairs('ms')}, CPU ${pairs('cpu')}`,
    )
  } finally {
    await traced.stop()
    await telemetry.shutdown()
    console.log(
      `    the receiver took ${spans.requests} OTLP requests, ${(spans.bytes / 1024).toFixed(0)} KiB`,
    )
    receiver.close()
  }
}

/** A second worker on the stack's server and audit, serving a queue of its own named after `suffix`. */
async function secondWorker(
  suffix: string,
  options: Pick<TetherWorkerOptions, 'telemetry' | 'pacer'>,
): Promise<{ taskQueue: string; stop: () => Promise<void> }> {
  const connection = await NativeConnection.connect({ address: stack.temporalAddress })
  const taskQueue = `${stack.taskQueue}-${suffix}`
  const worker = await createTetherWorker({
    connection,
    namespace: 'default',
    taskQueue,
    audit: stack.audit,
    ...options,
  })
  const running = worker.run()
  const stop = () => {
    worker.shutdown()
    return running.finally(() => connection.close())
  }
  return { taskQueue, stop }
}

/** A second worker whose model turns are never held back (pacing off), warmed up. */
async function unpacedWorker() {
  const unpaced = await secondWorker('unpaced', { pacer: new StepPacer({ least: Number.POSITIVE_INFINITY }) })
  await durableRun(stack, 2, { taskQueue: unpaced.taskQueue }) // its bundle, connections, caches
  return unpaced
}

/**
 * How evenly `concurrent` runs at once share the worker: p50 and p99 of a step's time (from the end of the
 * run's previous step, or the first step's beginning), without fairness keys (first come, first served) and
 * with one key per run (each in turn), one after the other on the same stack. Target: p99 within 3× p50.
 * A run's start (its audit row and its workspace: two more round trips) is printed apart, and the steps
 * counted from the run's start beside them.
 */
async function fairness(concurrent: number) {
  const each = 5
  console.log(
    `(c) a step's time under ${concurrent} concurrent runs of ${each + 1} steps (target p99 ≤ 3 × p50)`,
  )
  for (const fair of [false, true]) {
    const runs = await Promise.all(
      Array.from({ length: concurrent }, () => durableRun(stack, each, { scheduling: { fair } })),
    )
    const perRun = await Promise.all(runs.map((run) => stepTimes(stack, run)))
    const spread = (list: number[]) => {
      const sorted = [...list].sort((a, b) => a - b)
      const [p50, p99] = [percentile(sorted, 50), percentile(sorted, 99)]
      return `p50 ${p50} ms, p99 ${p99} ms, max ${sorted.at(-1)} ms: p99 / p50 ${(p99 / p50).toFixed(1)}`
    }
    const margin = ''.padEnd(24)
    console.log(
      `    ${(fair ? 'with fairness keys' : 'without fairness').padEnd(20)} steps ${spread(perRun.flatMap((run) => run.steps))}`,
    )
    console.log(
      `${margin}the runs' starts (before their first step): ${spread(perRun.map((run) => run.start))}`,
    )
    console.log(
      `${margin}steps, the first counted from the run's start: ` +
        spread(perRun.flatMap(({ start, steps: [first = 0, ...rest] }) => [start + first, ...rest])),
    )
    // The command's own share (sandbox built, command run, sandbox taken down), as "what ran" times it.
    const { rows } = await stack.audit.pool.query<{ ms: number }>(
      `select extract(epoch from finished_at - started_at) * 1000 as ms from exec_results
        where run_id = any($1::text[]) order by 1`,
      [runs.map((run) => run.runId)],
    )
    const commands = rows.map((row) => Math.round(Number(row.ms)))
    console.log(
      `${''.padEnd(24)}the command \`true\` alone: p50 ${percentile(commands, 50)} ms, ` +
        `p99 ${percentile(commands, 99)} ms, max ${commands.at(-1)} ms`,
    )
  }
}

try {
  // `--concurrent [N]`: only (c), at 20 runs and then at N beside it (the cliff test: target within 15%);
  // `--tracing [rounds]`: only (d), 7 rounds unless told; `--audit`: only (e); `--history`: only (b);
  // `--fairness [N]`: only the step times under N runs at once (200 unless told); `--step`: only (a);
  // `--long [steps]`: only (f).
  const only = process.argv[2]
  if (only === '--fairness') {
    await durableRun(stack, 5) // warm-up
    await fairness(Number(process.argv[3] ?? 200))
  } else if (only === '--history') {
    await durableRun(stack, 2) // warm-up
    await historyPerStep()
  } else if (only === '--audit') {
    await durableRun(stack, 2) // warm-up
    await auditCommitsPerStep()
    process.exit(0)
  } else if (only === '--tracing') await tracingOverhead(Number(process.argv[3] ?? 7))
  else if (only === '--step') await perStep()
  else if (only === '--long') await longRun(Number(process.argv[3] ?? 300))
  else {
    const many = Number(process.argv[3] ?? 20)
    if (only !== '--concurrent') {
      await perStep()
      await historyPerStep()
      await auditCommitsPerStep()
    } else await durableRun(stack, 5) // warm-up
    // A worker's first minute still compiles (V8's optimizing threads took 4–5 ms of CPU per step in a
    // first round, about 1 after two minutes): the first round is printed, the second is the one compared.
    await concurrentRuns(20, undefined, ', first round (the worker still compiling its code)')
    const twenty = await concurrentRuns(20, undefined, ', second round')
    await floorAtOnce(20, twenty)
    if (many !== 20) {
      // Side by side: the same runs on a worker that never holds a model turn back (pacing off).
      const unpaced = await unpacedWorker()
      const without = await concurrentRuns(many, unpaced.taskQueue, ' without pacing').finally(unpaced.stop)
      const wide = await concurrentRuns(many)
      const share = (of: { stepsPerSecond: number }) =>
        ((of.stepsPerSecond / twenty.stepsPerSecond) * 100).toFixed(0)
      console.log(
        `    ${many} runs against 20: ${share(wide)}% of the throughput (target ≥ 85%); ` +
          `${share(without)}% without pacing; ${stepPacer.held} model turns held back`,
      )
      await fairness(many)
    }
    if (only !== '--concurrent') await tracingOverhead()
  }
} finally {
  await floor.stop()
  await stack.stop()
}
