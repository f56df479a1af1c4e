/**
 * bench/temporal: the local Temporal server as tether starts it (LOCAL_TEMPORAL_TUNING) against the same CLI
 * with its own defaults, side by side on this machine: ms per activity of a 50-activity no-op workflow
 * (remote and local activities), and how late a 1 ms timer fires (timer started → fired, in the history). Rounds interleave the
 * servers, so machine noise hits both alike.
 *
 *   npx tsx bench/temporal.ts                       # defaults vs tuned, the CLI tether uses
 *   npx tsx bench/temporal.ts /path/to/temporal …   # plus each given CLI, tuned (to judge a CLI upgrade)
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type DevServer, ensureTemporalCli, startDevServer } from '../src/stack/index.js'
import { type FloorProbe, median, quietRuntime, startFloorProbe } from './support.js'

const ROUNDS = 7
const ACTIVITIES = 50
const TIMER_MS = 1

interface Candidate {
  label: string
  cliPath: string
  tuned: boolean
  server?: DevServer
  probe?: FloorProbe
  dir?: string
  remote: number[]
  local: number[]
  timer: number[]
}

/** `temporal version 1.5.1 (Server 1.29.1, …)` → `1.5.1 (server 1.29.1)`. */
function cliVersion(path: string): string {
  const text = execFileSync(path, ['--version'], { encoding: 'utf8' })
  const [, cli, server] = /temporal version (\S+) \(Server ([^,)]+)/.exec(text) ?? []
  return `${cli ?? '?'} (server ${server ?? '?'})`
}

quietRuntime()
const cli = await ensureTemporalCli()
const candidates: Candidate[] = [
  { cliPath: cli.path, tuned: false, label: `CLI ${cliVersion(cli.path)}, its defaults` },
  { cliPath: cli.path, tuned: true, label: `CLI ${cliVersion(cli.path)}, tuned` },
  ...process.argv
    .slice(2)
    .map((cliPath) => ({ cliPath, tuned: true, label: `CLI ${cliVersion(cliPath)}, tuned` })),
].map((c) => ({ ...c, remote: [], local: [], timer: [] }))

try {
  for (const c of candidates) {
    c.dir = await mkdtemp(join(tmpdir(), 'tether-bench-temporal-'))
    c.server = await startDevServer({
      cliPath: c.cliPath,
      dbFilename: join(c.dir, 'temporal.db'),
      tuned: c.tuned,
    })
    c.probe = await startFloorProbe(c.server.address)
    // Warm-up: the worker's first workflow tasks, the server's caches.
    await c.probe.remote(5)
    await c.probe.local(5)
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of candidates) {
      const probe = c.probe!
      c.remote.push(await probe.remote(ACTIVITIES))
      c.local.push(await probe.local(ACTIVITIES))
      c.timer.push(await probe.timer(TIMER_MS))
    }
  }
  const [base] = candidates
  console.log(
    `medians of ${ROUNDS} interleaved rounds; ${ACTIVITIES}-activity no-op workflows; timer latency from the histories`,
  )
  const rows = candidates.map((c) => [
    c.label,
    median(c.remote).toFixed(1),
    median(c.local).toFixed(2),
    median(c.timer).toFixed(0),
    (median(base!.remote) / median(c.remote)).toFixed(1),
  ])
  const header = [
    'server',
    'ms/remote activity',
    'ms/local activity',
    `${TIMER_MS} ms timer fired after`,
    'remote speed-up',
  ]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) =>
    cells.map((c, i) => (i ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ')
  console.log(line(header))
  for (const row of rows) console.log(line(row))
} finally {
  for (const c of candidates) {
    await c.probe?.stop()
    await c.server?.stop()
    if (c.dir) await rm(c.dir, { recursive: true, force: true })
  }
}
