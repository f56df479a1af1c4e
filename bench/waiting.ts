/**
 * bench/waiting: many runs waiting for a person at once (`npx tsx bench/waiting.ts [N]`, default 1,000).
 * Each run asks to run one command and waits on the approval. Measured in one process (the worker is in
 * it): the worker's RSS per waiting run (target ≤ 50 KB amortised), the time to list every pending
 * approval page by page (as `tether approvals` does), the time to approve them all, and the time until
 * every run has finished; and the CPU the worker, Temporal and PostgreSQL spend while they all wait and
 * nothing happens (target: next to nothing, whatever the number of runs) — right after they all wait, and
 * again once they are old enough for the worker's look for runs Temporal no longer has. The figure for
 * 10,000 runs is extrapolated from the measured per-run costs.
 */
import { mkdir } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { ApprovalRow } from '../src/audit/index.js'
import { answerApproval, newRunId, startAgentRun } from '../src/embed/client.js'
import { workflowCacheSize } from '../src/embed/worker.js'
import { Policy } from '../src/policy/index.js'
import { workflowCacheSetting } from '../src/stack/index.js'
import { cpuSpent, POSTGRES, readCpu, startBenchStack, TEMPORAL, WORKER } from './support.js'

const runs = Number(process.argv[2] ?? 1_000)
// A full collection before each reading, so the heap figure is what is live, not garbage not yet collected.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const PAGE = 500
/** How long the idle reading lasts: several of the worker's 5 s sweeps of its runs. */
const IDLE_MS = 20_000
/**
 * The second idle reading: once every run is old enough for the sweep's once-a-minute look for runs Temporal
 * no longer has (src/embed/reconcile.ts: two minutes), over a minute and a bit, so that it holds one look.
 */
const LOST_AGE_MS = 120_000
const LOST_IDLE_MS = 65_000
/** The worker's workflow cache (the bench's worker runs in this process, sized as it is here). */
const CACHE = workflowCacheSetting() ?? workflowCacheSize()
const stack = await startBenchStack()
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`

async function allPending(): Promise<ApprovalRow[]> {
  const all: ApprovalRow[] = []
  for (;;) {
    const last = all.at(-1)
    const page = await stack.audit.pendingApprovals({ limit: PAGE, ...(last ? { after: last } : {}) })
    all.push(...page)
    if (page.length < PAGE) return all
  }
}

async function inBatches<T>(items: T[], width: number, work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let i = next++; i < items.length; i = next++) await work(items[i] as T)
    }),
  )
}

try {
  const ws = await stack.workspace({
    turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['true'] } }] }, { text: 'done' }],
  })
  // One run works in a folder at a time: each waits in an empty one of its own, beside the script's.
  let folders = 0
  const start = async () => {
    const workspace = join(dirname(ws.path), `waiting-${folders++}`)
    await mkdir(workspace)
    return startAgentRun(stack.client, {
      contract: { goal: 'wait for a person', workspace, model: ws.model, verification: null },
      policy: Policy.tiered(),
      taskQueue: stack.taskQueue,
      runId: newRunId(),
    })
  }
  const approveAll = async (pending: ApprovalRow[]) =>
    inBatches(pending, 16, (a) =>
      answerApproval(stack.client, a.runId, {
        approvalId: a.approvalId,
        decision: 'approve',
        approver: 'bench',
      }),
    )
  const pendingCount = async () =>
    Number(
      (
        await stack.audit.pool.query<{ n: string }>(
          'select count(*) as n from approvals where decision is null',
        )
      ).rows[0]?.n,
    )
  const waitUntil = async (check: () => Promise<boolean>) => {
    while (!(await check())) await sleep(200)
  }

  // Warm up (code loaded, pools filled), so the baseline is a worker that has already run some.
  const warm = await Promise.all(Array.from({ length: 10 }, start))
  await waitUntil(async () => (await pendingCount()) === warm.length)
  await approveAll(await allPending())
  await Promise.all(warm.map((handle) => handle.result()))
  gc()
  const baseline = process.memoryUsage().rss
  const heapBaseline = process.memoryUsage().heapUsed

  // Started in two halves with a reading after each, so the growth per run (the slope between the two
  // readings) is told apart from the one-off cost of the first runs (a cache filling, a thread's heap).
  const handles: Awaited<ReturnType<typeof start>>[] = []
  let peak = baseline
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss)
  }, 100)
  let startingMs = 0
  let lastStarted = 0
  const startUntilWaiting = async (count: number) => {
    const began = performance.now()
    await inBatches(
      Array.from({ length: count }, (_, i) => i),
      16,
      async () => {
        handles.push(await start())
        lastStarted = Date.now()
      },
    )
    await waitUntil(async () => (await pendingCount()) >= handles.length)
    startingMs += performance.now() - began
    await sleep(3_000)
    gc()
    return process.memoryUsage()
  }
  const half = Math.floor(runs / 2)
  const halfWaiting = (await startUntilWaiting(half)).rss
  const { rss: waiting, heapUsed: heapWaiting } = await startUntilWaiting(runs - half)
  clearInterval(sampler)

  // Nothing is answered for a while: what waiting costs each process tree, per second.
  const idleFrom = readCpu(stack.roots)
  await sleep(IDLE_MS)
  const idle = cpuSpent(idleFrom, readCpu(stack.roots))
  await sleep(Math.max(0, lastStarted + LOST_AGE_MS - Date.now()))
  const oldFrom = readCpu(stack.roots)
  await sleep(LOST_IDLE_MS)
  const idleOld = cpuSpent(oldFrom, readCpu(stack.roots))

  const listed = performance.now()
  const pending = await allPending()
  const listMs = performance.now() - listed

  const approving = performance.now()
  await approveAll(pending)
  const approveMs = performance.now() - approving
  await Promise.all(handles.map((handle) => handle.result()))
  const finishMs = performance.now() - approving

  const perRun = (waiting - baseline) / runs
  const peakPerRun = (peak - baseline) / runs
  console.log(
    `${runs} runs waiting on an approval each, one worker (workflow cache: ${CACHE} runs, from TETHER_WORKFLOW_CACHE or the worker's memory)`,
  )
  const marginal = (waiting - halfWaiting) / (runs - half)
  console.log(`  starting them until all wait          ${(startingMs / 1000).toFixed(1)} s`)
  console.log(
    `  worker RSS: baseline ${mib(baseline)}, half waiting ${mib(halfWaiting)}, all waiting ${mib(waiting)}, peak ${mib(peak)}`,
  )
  console.log(
    `  RSS per waiting run                   ${(perRun / 1024).toFixed(1)} KB amortised (peak ${(peakPerRun / 1024).toFixed(1)} KB; target ≤ 50 KB)`,
  )
  console.log(
    `  RSS per further waiting run           ${(marginal / 1024).toFixed(1)} KB (from half to all waiting: what each run adds)`,
  )
  console.log(
    `  worker heap per waiting run            ${((heapWaiting - heapBaseline) / runs / 1024).toFixed(1)} KB (live objects after a full collection)`,
  )
  const perSecond = (spent: typeof idle, ms: number) => {
    const rate = (role: string) => {
      const seconds = spent.roles.get(role)
      return seconds === undefined ? 'not measured' : `${((seconds * 1000) / (ms / 1000)).toFixed(1)} ms/s`
    }
    return `worker ${rate(WORKER)}, Temporal ${rate(TEMPORAL)}, PostgreSQL ${rate(POSTGRES)} (over ${ms / 1000} s`
  }
  console.log(
    `  CPU while all wait, nothing answered  ${perSecond(idle, IDLE_MS)}; 1,000 ms/s is a whole core)`,
  )
  console.log(
    `  …once all are ${LOST_AGE_MS / 60_000} minutes old             ${perSecond(idleOld, LOST_IDLE_MS)}, which holds the once-a-minute look for runs Temporal no longer has)`,
  )
  console.log(`  list every pending approval (pages)   ${listMs.toFixed(0)} ms for ${pending.length}`)
  console.log(`  approve them all (Update, 16 at once) ${(approveMs / 1000).toFixed(1)} s`)
  console.log(`  …until every run finished             ${(finishMs / 1000).toFixed(1)} s`)
  const scale = 10_000 / runs
  // Past the workflow cache a waiting run is evicted and holds nothing: the RSS grows only up to the cache.
  const further = Math.max(0, Math.min(10_000, CACHE) - runs)
  console.log(
    `  10,000 runs (extrapolated): RSS ${mib(waiting + Math.max(0, marginal) * further)} (all waiting + the growth per further run up to the cache of ${CACHE} runs), ` +
      `list ${((listMs * scale) / 1000).toFixed(1)} s, approve ${((approveMs * scale) / 1000).toFixed(0)} s, finish ${((finishMs * scale) / 1000).toFixed(0)} s`,
  )
} finally {
  await stack.stop()
}
