/**
 * bench/peers: tether beside the peer a user would pick for the same job, LangGraph with its PostgreSQL
 * checkpointer, running the same scripted loop: a model that asks for `exec true` N times, then ends. tether
 * runs as it does by default (agentRun on a local Temporal dev server, the sandbox on, the audit in
 * PostgreSQL); LangGraph (bench/peers/langgraph_peer.py) runs a "model" node that returns the next scripted
 * tool call and a "tool" node that runs it with a subprocess, a thread per run, checkpointed into its own
 * database on the same PostgreSQL. One process drives both and interleaves their rounds, so machine noise
 * hits both alike. Printed side by side and as ratios (tether / LangGraph):
 *   - ms/step, one run at a time, and the CPU per step it took;
 *   - steps/s with 20 runs at once, and the CPU per step it took;
 *   - approval answer sent → command started, p50 (each command is `touch stamp-N`: its mtime marks the
 *     start; LangGraph's tool node calls interrupt() before running it and is resumed with Command(resume=…));
 *   - storage bytes per step of a 300-step run: tether's Temporal history (as the server counts it) and the
 *     growth of its audit tables; the growth of LangGraph's checkpoint tables (`pg_total_relation_size`),
 *     each database compacted (VACUUM FULL) before and after its run, so the growth is the run's live rows.
 * CPU is read per process tree of the bench (support.ts `readCpu`): tether's is the worker (this process),
 * its launcher and sandboxes, the Temporal server and PostgreSQL; LangGraph's is its Python process with its
 * commands, and PostgreSQL. The targets (tether ≤ 3× LangGraph's CPU per step, ≤ 0.3× its storage per
 * step at 300 steps) are printed as met or not; the bench does not fail on them.
 *
 *   npx tsx bench/peers.ts [--steps 30] [--rounds 3] [--concurrent 20] [--approvals 10]
 *                          [--storage-steps 300] [--durability sync|async|exit]
 *
 * LangGraph runs in a Python venv this bench builds from PyPI on first use (bench/peers/requirements.txt,
 * cached under ~/.cache/tether/bench-peers-venv): never in CI, never in `npm test`. `--durability` is
 * LangGraph's: `sync` (the default here) writes each step's checkpoint before the next step starts, as
 * tether records each step before going on; LangGraph's own default is `async`.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { stat } from 'node:fs/promises'
import { availableParallelism, loadavg } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { answerApproval, draftAnswer } from '../src/embed/client.js'
import { Policy } from '../src/policy/index.js'
import { pythonVenv } from '../test/support/python.js'
import {
  type BenchStack,
  type CpuReading,
  compactedBytes,
  cpuSpent,
  historyBytes,
  LAUNCHER,
  median,
  POSTGRES,
  percentile,
  readCpu,
  repeated,
  scriptedRun,
  startBenchStack,
  startScriptedRun,
  TEMPORAL,
  WORKER,
} from './support.js'

const { values: options } = parseArgs({
  options: {
    steps: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '3' },
    concurrent: { type: 'string', default: '20' },
    approvals: { type: 'string', default: '10' },
    'storage-steps': { type: 'string', default: '300' },
    durability: { type: 'string', default: 'sync' },
  },
})
const count = (name: keyof typeof options) => {
  const value = Number(options[name])
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number ≥ 1`)
  return value
}
const STEPS = count('steps')
const ROUNDS = count('rounds')
const CONCURRENT = count('concurrent')
const APPROVALS = count('approvals')
const STORAGE_STEPS = count('storage-steps')
const DURABILITY = options.durability as string
if (!['sync', 'async', 'exit'].includes(DURABILITY))
  throw new Error('--durability must be sync, async or exit')

/** The role of LangGraph's process tree in CPU readings. */
const LANGGRAPH = 'LangGraph (Python)'
const TETHER_ROLES = [WORKER, LAUNCHER, TEMPORAL, POSTGRES]
const LANGGRAPH_ROLES = [LANGGRAPH, POSTGRES]
const allow = Policy.tiered().layer('bench').allowExec('true')
/** The tiered preset asks before any command it does not know: every `touch` waits for an answer. */
const ask = Policy.tiered()

interface Reply {
  id: number
  status?: 'done' | 'waiting'
  turns?: number
  error?: string
}

/** The LangGraph side: one Python process that serves runs over its stdin and stdout, one JSON a line. */
class LangGraphPeer {
  private next = 0
  private readonly waiting = new Map<number, (reply: Reply) => void>()

  private constructor(
    private readonly child: ChildProcess,
    readonly version: string,
  ) {}

  static async start(python: string, url: string): Promise<LangGraphPeer> {
    const script = fileURLToPath(new URL('./peers/langgraph_peer.py', import.meta.url))
    const child = spawn(python, [script, url, DURABILITY], { stdio: ['pipe', 'pipe', 'inherit'] })
    const lines = createInterface({ input: child.stdout! })
    let peer: LangGraphPeer | undefined
    const ready = new Promise<LangGraphPeer>((resolve, reject) => {
      child.once('exit', (code) => {
        reject(new Error(`the LangGraph peer exited (${code}) before it was ready`))
        for (const id of peer?.waiting.keys() ?? []) peer?.settle({ id, error: `the peer exited (${code})` })
      })
      lines.on('line', (line) => {
        const message = JSON.parse(line) as Reply & { ready?: boolean; langgraph?: string; python?: string }
        if (message.ready) {
          peer = new LangGraphPeer(child, `LangGraph ${message.langgraph}, Python ${message.python}`)
          resolve(peer)
        } else peer?.settle(message)
      })
    })
    return ready
  }

  get pid(): number {
    return this.child.pid!
  }

  private settle(reply: Reply): void {
    this.waiting.get(reply.id)?.(reply)
    this.waiting.delete(reply.id)
  }

  async request(message: Record<string, unknown>): Promise<Reply> {
    const id = this.next++
    const reply = new Promise<Reply>((resolve) => this.waiting.set(id, resolve))
    this.child.stdin!.write(`${JSON.stringify({ ...message, id })}\n`)
    const answer = await reply
    if (answer.error) throw new Error(`LangGraph: ${answer.error}`)
    return answer
  }

  /** One thread, start to finish: its wall time and its steps (model turns, as tether counts them). */
  async run(stack: BenchStack, calls: string[][]): Promise<{ ms: number; steps: number }> {
    // A fresh folder, as tether's run gets, for the commands' working directory.
    const cwd = (await stack.workspace(null)).path
    const started = performance.now()
    const reply = await this.request({ op: 'start', thread: randomUUID(), calls, cwd })
    if (reply.status !== 'done') throw new Error(`LangGraph run stopped ${reply.status}`)
    return { ms: performance.now() - started, steps: reply.turns ?? 0 }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.stdin!.end()
    if ((await Promise.race([exited, sleep(10_000, 'late')])) === 'late') this.child.kill('SIGKILL')
  }
}

/** CPU seconds and steps summed over the windows of one kind. */
class CpuTally {
  readonly roles = new Map<string, number>()
  steps = 0

  add(spent: CpuReading, steps: number): void {
    for (const [role, seconds] of spent.roles) this.roles.set(role, (this.roles.get(role) ?? 0) + seconds)
    this.steps += steps
  }

  /** ms per step of `roles`, summed. */
  perStep(roles: readonly string[]): number {
    return (roles.reduce((sum, role) => sum + (this.roles.get(role) ?? 0), 0) * 1000) / this.steps
  }

  /** Each role's ms per step, those counted for this side first, then the others (idle meanwhile). */
  describe(counted: readonly string[]): string {
    const ms = (role: string) => `${role} ${this.perStep([role]).toFixed(1)}`
    const others = [...this.roles.keys()].filter((role) => !counted.includes(role))
    return `${counted.map(ms).join(' + ')} = ${this.perStep(counted).toFixed(1)} ms (idle meanwhile: ${others.map(ms).join(', ')})`
  }
}

/** When the command that makes `file` ran: the file's mtime (ms since the epoch), polled every 2 ms. */
async function commandStarted(file: string): Promise<number> {
  const deadline = performance.now() + 60_000
  for (;;) {
    const info = await stat(file).catch(() => undefined)
    if (info) return info.mtimeMs
    if (performance.now() > deadline) throw new Error(`${file} did not appear within 60 s of its approval`)
    await sleep(2)
  }
}

const loadStart = loadavg()
const python = await pythonVenv(
  fileURLToPath(new URL('./peers/requirements.txt', import.meta.url)),
  'bench-peers-venv',
)
const stack = await startBenchStack()
// LangGraph's own database on the same server, so its tables' growth is its alone.
const peerUrl = new URL(stack.databaseUrl)
peerUrl.pathname = '/tether_bench_langgraph'
await stack.audit.pool.query('drop database if exists tether_bench_langgraph')
await stack.audit.pool.query('create database tether_bench_langgraph')
const peerPool = new pg.Pool({ connectionString: peerUrl.toString(), max: 1 })
let peer: LangGraphPeer | undefined
try {
  peer = await LangGraphPeer.start(python, peerUrl.toString())
  const lg = peer
  const roots = { ...stack.roots, [LANGGRAPH]: lg.pid }
  const calls = repeated(['true'], STEPS)

  type Side = 'tether' | 'LangGraph'
  const sides: Side[] = ['tether', 'LangGraph']
  const runOne = (side: Side, work: string[][]) =>
    side === 'tether' ? scriptedRun(stack, work, allow) : lg.run(stack, work)
  /** Runs `runs` of one side at once; their wall time, steps, and the CPU each tree spent meanwhile. */
  const window = async (side: Side, runs: number) => {
    const before = readCpu(roots)
    const began = performance.now()
    const done = await Promise.all(Array.from({ length: runs }, () => runOne(side, calls)))
    const ms = performance.now() - began
    const spent = cpuSpent(before, readCpu(roots))
    return { ms, spent, steps: done.reduce((sum, run) => sum + run.steps, 0) }
  }

  /** One approval after another on one run of each side, alternating: answer sent → command started, ms. */
  const approvalRound = async (approvals: number) => {
    const work = Array.from({ length: approvals }, (_, i) => ['touch', `stamp-${i}`])
    const tetherRun = await startScriptedRun(stack, work, ask)
    const thread = randomUUID()
    const lgCwd = (await stack.workspace(null)).path
    let lgStep = lg.request({ op: 'start', thread, calls: work, cwd: lgCwd, approval: true })
    const answered = new Set<string>()
    const delays: Record<Side, number[]> = { tether: [], LangGraph: [] }
    for (let i = 0; i < approvals; i++) {
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        if (side === 'tether') {
          let row = (await stack.audit.pendingApprovals({ runId: tetherRun.runId })).find(
            (a) => !answered.has(a.approvalId),
          )
          while (!row) {
            await sleep(5)
            row = (await stack.audit.pendingApprovals({ runId: tetherRun.runId })).find(
              (a) => !answered.has(a.approvalId),
            )
          }
          answered.add(row.approvalId)
          const answer = draftAnswer(row, { decision: 'approve', approver: 'bench' })
          const sent = Date.now()
          const update = answerApproval(stack.client, tetherRun.runId, answer, { via: 'update' })
          delays.tether.push((await commandStarted(join(tetherRun.workspace, `stamp-${i}`))) - sent)
          await update
        } else {
          const reply = await lgStep
          if (reply.status !== 'waiting') throw new Error(`LangGraph run stopped ${reply.status}`)
          const sent = Date.now()
          lgStep = lg.request({ op: 'resume', thread, decision: 'approve' })
          delays.LangGraph.push((await commandStarted(join(lgCwd, `stamp-${i}`))) - sent)
        }
      }
    }
    await tetherRun.result
    if ((await lgStep).status !== 'done') throw new Error('LangGraph run did not finish')
    return delays
  }

  // Warm-up: code loaded, bundles built, pools filled, on both sides; and a round of concurrent runs, since a
  // Node worker's optimizing compiler is still busy through its first minute of runs (bench/run.ts).
  for (const side of sides) await runOne(side, repeated(['true'], 5))
  for (const side of sides) await window(side, CONCURRENT)
  await approvalRound(2)

  const sequentialMs: Record<Side, number[]> = { tether: [], LangGraph: [] }
  const throughput: Record<Side, number[]> = { tether: [], LangGraph: [] }
  const sequentialCpu = { tether: new CpuTally(), LangGraph: new CpuTally() }
  const concurrentCpu = { tether: new CpuTally(), LangGraph: new CpuTally() }
  const approvalMs: Record<Side, number[]> = { tether: [], LangGraph: [] }
  let machineBusy = 0
  let machineSeconds = 0
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse()
    for (const side of order) {
      const one = await window(side, 1)
      sequentialMs[side].push(one.ms / one.steps)
      sequentialCpu[side].add(one.spent, one.steps)
    }
    for (const side of order) {
      const many = await window(side, CONCURRENT)
      throughput[side].push(many.steps / (many.ms / 1000))
      concurrentCpu[side].add(many.spent, many.steps)
      machineBusy += many.spent.machine
      machineSeconds += many.ms / 1000
    }
    const delays = await approvalRound(APPROVALS)
    for (const side of sides) approvalMs[side].push(...delays[side])
  }

  // Storage per step of one long run each: tether's history and audit rows, LangGraph's checkpoints.
  // Each database compacted before and after its run: the growth is the run's live rows, not what earlier
  // rounds' freed space happened to absorb; the growth as written is printed beside it.
  const auditBefore = (await compactedBytes(stack.audit.pool)).live
  const long = await scriptedRun(stack, repeated(['true'], STORAGE_STEPS), allow)
  const auditAfter = await compactedBytes(stack.audit.pool)
  const audit = auditAfter.live - auditBefore
  const history = (await historyBytes(stack, long.runId)).bytes
  const checkpointsBefore = (await compactedBytes(peerPool)).live
  const lgLong = await lg.run(stack, repeated(['true'], STORAGE_STEPS))
  const checkpointsAfter = await compactedBytes(peerPool)
  const checkpoints = checkpointsAfter.live - checkpointsBefore
  const written = {
    tether: (auditAfter.written - auditBefore) / long.steps,
    LangGraph: (checkpointsAfter.written - checkpointsBefore) / lgLong.steps,
  }
  const storage = { tether: (history + audit) / long.steps, LangGraph: checkpoints / lgLong.steps }

  const p50 = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    )
  const rows: Array<[string, (side: Side) => number, number]> = [
    [`ms/step, one run at a time (${STEPS + 1} steps)`, (side) => median(sequentialMs[side]), 1],
    [
      'CPU ms/step, one run at a time',
      (side) => sequentialCpu[side].perStep(side === 'tether' ? TETHER_ROLES : LANGGRAPH_ROLES),
      1,
    ],
    [`steps/s, ${CONCURRENT} runs at once`, (side) => median(throughput[side]), 1],
    [
      `CPU ms/step, ${CONCURRENT} runs at once`,
      (side) => concurrentCpu[side].perStep(side === 'tether' ? TETHER_ROLES : LANGGRAPH_ROLES),
      1,
    ],
    ['approval answer → command started, p50 ms', (side) => p50(approvalMs[side]), 1],
    [`storage bytes/step, ${STORAGE_STEPS}-step run`, (side) => storage[side], 0],
  ]
  const table = [
    ['', 'tether', 'LangGraph', 'tether / LangGraph'],
    ...rows.map(([label, value, digits]) => [
      label,
      value('tether').toFixed(digits),
      value('LangGraph').toFixed(digits),
      (value('tether') / value('LangGraph')).toFixed(2),
    ]),
  ]
  const widths = (table[0] as string[]).map((_, i) =>
    Math.max(...table.map((row) => (row[i] as string).length)),
  )
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('   ')

  const load = (values: number[]) => values.map((v) => v.toFixed(2)).join(' ')
  console.log(
    `tether (agentRun, sandbox on) vs ${lg.version} (AsyncPostgresSaver, durability ${DURABILITY}); node ${process.version}`,
  )
  console.log(
    `the same scripted loop: ${STEPS} × exec \`true\`, then an answer; medians of ${ROUNDS} interleaved rounds; ` +
      `${ROUNDS * APPROVALS} approvals each (\`touch\`: its file's mtime, floored to the kernel's tick, marks the start)`,
  )
  console.log(`load average at start: ${load(loadStart)} (${availableParallelism()} cores)`)
  for (const row of table) console.log(line(row))
  console.log(`CPU ms/step by process tree, ${CONCURRENT} runs at once:`)
  console.log(`  tether     ${concurrentCpu.tether.describe(TETHER_ROLES)}`)
  console.log(`  LangGraph  ${concurrentCpu.LangGraph.describe(LANGGRAPH_ROLES)}`)
  console.log(
    `  the machine was ${((machineBusy / machineSeconds / availableParallelism()) * 100).toFixed(0)}% busy ` +
      'in those windows (everything on it, other tenants included)',
  )
  console.log(
    `storage per step at ${STORAGE_STEPS} steps, live rows (each database compacted before and after): tether ` +
      `history ${(history / long.steps).toFixed(0)} + audit ${(audit / long.steps).toFixed(0)} bytes; LangGraph ` +
      `checkpoint tables ${storage.LangGraph.toFixed(0)} bytes (as written, before compaction: audit ` +
      `${written.tether.toFixed(0)}, checkpoints ${written.LangGraph.toFixed(0)})`,
  )
  const cpuRatio =
    concurrentCpu.tether.perStep(TETHER_ROLES) / concurrentCpu.LangGraph.perStep(LANGGRAPH_ROLES)
  const storageRatio = storage.tether / storage.LangGraph
  const verdict = (met: boolean) => (met ? 'met' : 'not met')
  console.log(
    `targets (issue 28): CPU/step ≤ 3× LangGraph's: ${cpuRatio.toFixed(2)}× — ${verdict(cpuRatio <= 3)}; ` +
      `storage/step at ${STORAGE_STEPS} steps ≤ 0.3× LangGraph's: ${storageRatio.toFixed(2)}× — ${verdict(storageRatio <= 0.3)}`,
  )
  console.log(`load average at end: ${load(loadavg())}`)
} finally {
  await peer?.stop()
  await peerPool.end()
  await stack.stop()
}
