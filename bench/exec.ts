/**
 * Exec runner benchmarks, side by side in one run (`npx tsx bench/exec.ts`; `--spawn` runs (a) alone):
 *   (a) `true` ×500 through runCommand vs a bare child_process.spawn (target ratio ≤ 1.15), and through
 *       runCommand in the sandbox, built for the command (`warm: false`, as with TETHER_SANDBOX_WARM=0) and
 *       built ahead by the one before (the default; target: median ≤ bare spawn + 3 ms), interleaved call
 *       by call so machine noise hits all four alike; medians and 90th percentiles, with the load average.
 *       Each sandboxed command in a workspace of its own, so the two sandboxed ways never share one;
 *   (b) 2 GiB of output through runCommand vs the same writer into /dev/null (target throughput ratio
 *       ≥ 0.7) and the peak RSS growth while capturing (target ≤ 32 MiB), next to Node reading the same
 *       pipe and dropping the data (the floor for any Node reader). Two writers: one that formats log
 *       lines as it goes, like a build, and one that replays a prepared 1 MiB block, as fast as a writer can
 *       be, so that ratio shows the runner's own ceiling. Each capture runs in a fresh process, so one
 *       run's heap and allocator state cannot hide another's growth;
 *   (c) the same 2 GiB through execa with its default buffering, for contrast.
 */
import { spawn } from 'node:child_process'
import { openSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'
import { closeWarmSandboxes, runCommand } from '../src/exec/index.js'
import { LOG_WRITER, logBlock, REPEAT_FILE_WRITER } from '../test/fixtures/exec/probes.js'

const GIB = 2 ** 30
const OUTPUT_BYTES = 2 * GIB
const MIB = 2 ** 20

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** The value 90% of the samples do not exceed (nearest rank). */
function p90(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.9) - 1)]!
}

const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')

function bareSpawn(argv: string[], stdout: 'pipe' | number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', stdout, 'pipe'] })
    child.stdout?.resume()
    child.stderr?.resume()
    child.once('error', reject)
    child.once('close', () => resolve())
  })
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}

async function spawnOverhead(dir: string): Promise<void> {
  const runs = 500
  const cwd = join(dir, 'plain')
  const [coldWorkspace, warmWorkspace] = [join(dir, 'cold'), join(dir, 'warm')]
  await Promise.all([cwd, coldWorkspace, warmWorkspace].map((folder) => mkdir(folder)))
  const bare: number[] = []
  const ours: number[] = []
  const cold: number[] = []
  const warm: number[] = []
  let builtAhead = 0
  const sandboxed = (workspace: string, ahead: boolean) => async () => {
    const result = await runCommand({ argv: ['true'], cwd: workspace, sandbox: { workspace, warm: ahead } })
    if (result.status !== 'exited' || result.exitCode !== 0)
      throw new Error(`sandboxed true: ${result.status}`)
    return result
  }
  const contenders: Array<[number[], () => Promise<unknown>]> = [
    [bare, () => bareSpawn(['true'], 'pipe')],
    [ours, () => runCommand({ argv: ['true'], cwd })],
    [cold, sandboxed(coldWorkspace, false)],
    [
      warm,
      async () => {
        if ((await sandboxed(warmWorkspace, true)()).sandbox?.warm) builtAhead += 1
      },
    ],
  ]
  // Warm every path first so none pays for first-call compilation (or the sandbox's one-time probe).
  for (let i = 0; i < 20; i++) for (const [, run] of contenders) await run()
  const loadBefore = load()
  for (let i = 0; i < runs; i++) {
    // Rotate which goes first, so none always runs right after another's process exit.
    for (let j = 0; j < contenders.length; j++) {
      const [times, run] = contenders[(i + j) % contenders.length]!
      times.push(await timed(run))
    }
  }
  const row = (name: string, values: number[]) =>
    `    ${name.padEnd(34)} median ${median(values).toFixed(2).padStart(6)} ms, p90 ${p90(values).toFixed(2).padStart(6)} ms`
  console.log(`(a) true ×${runs}, interleaved; load average ${loadBefore} before, ${load()} after`)
  console.log(row('bare spawn', bare))
  console.log(row('runCommand', ours))
  console.log(row('sandboxed, built for the command', cold))
  console.log(row('sandboxed, built ahead', warm))
  console.log(
    `    ratio runCommand/bare: median ${(median(ours) / median(bare)).toFixed(3)} (target ≤ 1.15); ` +
      `${builtAhead} of the ${runs + 20} built-ahead calls found their sandbox waiting`,
  )
  const over = (values: number[]) =>
    `${(median(values) - median(bare)).toFixed(2)} ms median, ${(p90(values) - p90(bare)).toFixed(2)} ms p90`
  console.log(
    `    over bare spawn: built for the command ${over(cold)}; built ahead ${over(warm)} (target ≤ 3 ms median)`,
  )
}

interface Writer {
  name: string
  argv: string[]
}

type Contender = 'runCommand' | 'bare read' | 'execa'

/**
 * Runs in a fresh process (so earlier runs' heap and allocator state cannot hide growth): captures the
 * writer's output one way, then prints the time taken and the peak RSS growth as JSON.
 */
async function memoryProbe(contender: Contender, argv: string[]): Promise<void> {
  const before = process.memoryUsage.rss()
  let peak = before
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage.rss())
  }
  const started = performance.now()
  let detail: string
  if (contender === 'runCommand') {
    const { status, stdout } = await runCommand({ argv, cwd: tmpdir(), onProgress: sample })
    if (stdout.bytes !== OUTPUT_BYTES) throw new Error(`runCommand saw ${stdout.bytes} bytes`)
    detail = `status ${status}, ${stdout.lines} lines, ${stdout.elided} characters elided, text ${stdout.text.length} UTF-16 units`
  } else if (contender === 'bare read') {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] })
      child.stdout.on('data', sample)
      child.stderr.resume()
      child.once('error', reject)
      child.once('close', () => resolve())
    })
    detail = 'output read and dropped'
  } else {
    const sampler = setInterval(sample, 5)
    try {
      const result = await execa(argv[0]!, argv.slice(1))
      detail = `resolved with ${result.stdout.length} characters of stdout`
    } catch (error) {
      const message = (error as Error & { shortMessage?: string }).shortMessage ?? (error as Error).message
      detail = `rejected: ${message.split('\n')[0]}`
    } finally {
      clearInterval(sampler)
    }
    sample()
  }
  console.log(JSON.stringify({ ms: performance.now() - started, growthMiB: (peak - before) / MIB, detail }))
}

async function probe(contender: Contender, writer: Writer) {
  const self = fileURLToPath(import.meta.url)
  const { stdout, stderr, status } = await runCommand({
    argv: [process.execPath, '--import', 'tsx', self, '--memory-probe', contender, ...writer.argv],
    cwd: process.cwd(),
  })
  if (status !== 'exited') throw new Error(`the ${contender} probe ended ${status}: ${stderr.text}`)
  return JSON.parse(stdout.text) as { ms: number; growthMiB: number; detail: string }
}

async function throughput(writer: Writer, repeats: number): Promise<void> {
  const devNull = openSync('/dev/null', 'w')
  const runs: Record<'devNull' | 'bare' | 'ours', number[]> = { devNull: [], bare: [], ours: [] }
  const growth: Record<'bare' | 'ours', number[]> = { bare: [], ours: [] }
  let detail = ''
  for (let i = 0; i < repeats; i++) {
    runs.devNull.push(await timed(() => bareSpawn(writer.argv, devNull)))
    const bare = await probe('bare read', writer)
    runs.bare.push(bare.ms)
    growth.bare.push(bare.growthMiB)
    const ours = await probe('runCommand', writer)
    runs.ours.push(ours.ms)
    growth.ours.push(ours.growthMiB)
    detail = ours.detail
  }
  const rate = (ms: number) => `${(OUTPUT_BYTES / MIB / (ms / 1000)).toFixed(0)} MiB/s`
  const list = (values: number[], digits: number) => `[${values.map((v) => v.toFixed(digits)).join(', ')}]`
  const row = (name: string, values: number[]) =>
    `    ${name.padEnd(30)} ${median(values).toFixed(0).padStart(6)} ms ${rate(median(values)).padStart(12)}   ${list(values, 0)}`
  console.log(`(b) 2 GiB from the ${writer.name}, ${repeats} rounds, medians`)
  console.log(row('writer > /dev/null', runs.devNull))
  console.log(row('Node reads the pipe, drops it', runs.bare))
  console.log(row('runCommand capture', runs.ours))
  console.log(
    `    throughput ratio vs /dev/null: ${(median(runs.devNull) / median(runs.ours)).toFixed(3)} (target ≥ 0.7); ` +
      `vs a bare Node read: ${(median(runs.bare) / median(runs.ours)).toFixed(3)}`,
  )
  console.log(
    `    peak RSS growth, fresh process each: runCommand ${Math.max(...growth.ours).toFixed(1)} MiB ${list(growth.ours, 1)} ` +
      `(target ≤ 32); bare Node read ${Math.max(...growth.bare).toFixed(1)} MiB ${list(growth.bare, 1)}`,
  )
  console.log(`    ${detail}`)
}

async function execaBuffering(writer: Writer): Promise<void> {
  const { ms, growthMiB, detail } = await probe('execa', writer)
  console.log(`(c) 2 GiB from the ${writer.name} through execa (default buffering), fresh process`)
  console.log(`    ${ms.toFixed(0)} ms, peak RSS growth ${growthMiB.toFixed(1)} MiB`)
  console.log(`    ${detail}`)
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'tether-bench-exec-'))
  try {
    const block = join(dir, 'block.txt')
    await writeFile(block, logBlock(MIB))
    const logWriter: Writer = {
      name: 'log writer',
      argv: [process.execPath, LOG_WRITER, String(OUTPUT_BYTES)],
    }
    const blockWriter: Writer = {
      name: 'block writer',
      argv: [process.execPath, REPEAT_FILE_WRITER, block, String(OUTPUT_BYTES / MIB)],
    }
    console.log(`node ${process.version}, ${new Date().toISOString()}`)
    await spawnOverhead(dir)
    // `--spawn`: only (a), the per-command overhead.
    if (process.argv[2] === '--spawn') return
    await throughput(logWriter, 3)
    await throughput(blockWriter, 3)
    await execaBuffering(logWriter)
  } finally {
    await closeWarmSandboxes()
    await rm(dir, { recursive: true, force: true })
  }
}

if (process.argv[2] === '--memory-probe') {
  await memoryProbe(process.argv[3] as Contender, process.argv.slice(4))
} else {
  await main()
}
