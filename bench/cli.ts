/**
 * bench/cli: how long `tether` takes to answer, beside the programs a person compares it with, measured
 * interleaved in one run (each round runs every command once, in a rotating order, so machine noise hits
 * all alike) and reported as ratios:
 *
 * - `tether --version` and `tether --help` against `node -e ''` (Node's own start): target within 2×;
 * - `tether ls`, `tether approvals` and `tether show RUN` against `temporal workflow list` on the same stack
 *   (the Temporal CLI's start and one query): target within 3×.
 *
 * The stack is a local one in a temporary folder with real runs in it (a scripted model: ten finished runs
 * and one waiting for an approval). Each command is the built CLI (`bin/tether.js` → `dist/`, as `npm ci`
 * builds it), run as a person runs it; the round that warms the page cache, not counted, also writes the
 * CLI's code cache (~/.cache/tether/code), as a person's first run of each command does. Wall time is what a person waits; CPU time (the child's user and
 * system time) is shown beside it, as it moves less with the load of other programs on the machine.
 *
 *   npx tsx bench/cli.ts [rounds]
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { newRunId, startAgentRun } from '../src/embed/client.js'
import { Policy } from '../src/policy/index.js'
import { ensureTemporalCli } from '../src/stack/index.js'
import { percentile, startBenchStack } from './support.js'

const ROUNDS = Number(process.argv[2] ?? 25)
const BIN = fileURLToPath(new URL('../bin/tether.js', import.meta.url))
const BUILT = fileURLToPath(new URL('../dist/src/cli/bin.js', import.meta.url))

if (!existsSync(BUILT)) {
  console.error('bench/cli measures the built CLI: run `npm run build` first')
  process.exit(1)
}

/** The user and system time of this process's children so far, in ms (from /proc: ticks of 10 ms). */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'latin1')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // cutime and cstime: fields 16 and 17 of stat(5), i.e. 13 and 14 after the name.
  return (Number(fields[13]) + Number(fields[14])) * 10
}

const stack = await startBenchStack()
try {
  const temporal = (await ensureTemporalCli({ install: false })).path
  // Ten runs that finish and one that waits for an approval: what ls, approvals and show read.
  const start = async (turns: unknown[], goal: string) => {
    const ws = await stack.workspace({ turns })
    return startAgentRun(stack.client, {
      contract: { goal, workspace: ws.path, model: ws.model, verification: null },
      policy: Policy.tiered(),
      taskQueue: stack.taskQueue,
      runId: newRunId(),
    })
  }
  const finished = []
  for (let i = 0; i < 10; i++) finished.push(await start([{ text: 'done' }], `bench run ${i}`))
  for (const handle of finished) await handle.result()
  const waiting = await start(
    [{ toolCalls: [{ name: 'exec', args: { argv: ['touch', 'x'] } }] }],
    'bench ask',
  )
  while ((await stack.audit.pendingApprovals({ runId: waiting.workflowId })).length === 0) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const shown = finished[0]?.workflowId as string

  const env = {
    ...process.env,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    DATABASE_URL: stack.databaseUrl,
    NO_COLOR: '1',
  }
  const commands: Array<{ name: string; argv: string[] }> = [
    { name: "node -e ''", argv: [process.execPath, '-e', ''] },
    { name: 'tether --version', argv: [process.execPath, BIN, '--version'] },
    { name: 'tether --help', argv: [process.execPath, BIN, '--help'] },
    {
      name: 'temporal workflow list',
      argv: [temporal, 'workflow', 'list', '--address', stack.temporalAddress, '--namespace', 'default'],
    },
    { name: 'tether ls', argv: [process.execPath, BIN, 'ls'] },
    { name: 'tether approvals', argv: [process.execPath, BIN, 'approvals'] },
    { name: 'tether show RUN', argv: [process.execPath, BIN, 'show', shown] },
  ]
  const wall = new Map(commands.map((c) => [c.name, [] as number[]]))
  const cpu = new Map(commands.map((c) => [c.name, [] as number[]]))
  const once = (command: (typeof commands)[number]) => {
    const cpuBefore = childrenCpuMs()
    const started = performance.now()
    const ran = spawnSync(command.argv[0] as string, command.argv.slice(1), { env, encoding: 'utf8' })
    const took = performance.now() - started
    if (ran.status !== 0) throw new Error(`${command.name} failed (${ran.status}): ${ran.stderr}`)
    wall.get(command.name)?.push(took)
    cpu.get(command.name)?.push(childrenCpuMs() - cpuBefore)
  }
  for (const command of commands) once(command) // warm the page cache; not counted
  for (const samples of [...wall.values(), ...cpu.values()]) samples.length = 0
  for (let round = 0; round < ROUNDS; round++) {
    const shift = round % commands.length
    for (const command of [...commands.slice(shift), ...commands.slice(0, shift)]) once(command)
  }

  const p = (samples: number[], q: number) =>
    percentile(
      [...samples].sort((a, b) => a - b),
      q,
    )
  console.log(`${ROUNDS} rounds, interleaved; wall time p50 / p95, and CPU time p50 (user + system)`)
  console.log(
    `${'command'.padEnd(26)}${'wall p50'.padStart(10)}${'p95'.padStart(10)}${'cpu p50'.padStart(10)}`,
  )
  for (const command of commands) {
    const w = wall.get(command.name) as number[]
    const c = cpu.get(command.name) as number[]
    console.log(
      `${command.name.padEnd(26)}${`${p(w, 50).toFixed(0)} ms`.padStart(10)}${`${p(w, 95).toFixed(0)} ms`.padStart(10)}${`${p(c, 50).toFixed(0)} ms`.padStart(10)}`,
    )
  }
  const ratio = (name: string, base: string, samples: Map<string, number[]>) =>
    p(samples.get(name) as number[], 50) / p(samples.get(base) as number[], 50)
  console.log('\nratios of p50 (wall; cpu)                 target')
  const line = (name: string, base: string, target: number) => {
    const r = ratio(name, base, wall)
    console.log(
      `${`${name} / ${base}`.padEnd(42)}${`${r.toFixed(2)}×; ${ratio(name, base, cpu).toFixed(2)}×`.padEnd(16)}≤ ${target}×  ${r <= target ? 'met' : 'NOT met'}`,
    )
  }
  line('tether --version', "node -e ''", 2)
  line('tether --help', "node -e ''", 2)
  for (const name of ['tether ls', 'tether approvals', 'tether show RUN'])
    line(name, 'temporal workflow list', 3)
  console.log(
    `for scale: Node's own start is ${ratio("node -e ''", 'temporal workflow list', wall).toFixed(2)}× the Temporal CLI's whole list here`,
  )
} finally {
  await stack.stop()
}
