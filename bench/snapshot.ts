/**
 * bench/snapshot: what keeping the workspace as state costs, side by side in one run on the same tree.
 * (a) a workspace of 10,000 files / 200 MB after changing 3 files: tether's snapshot (PostgreSQL store)
 *     against `git add -A && git write-tree` and against `tar` of the whole tree (target ≤ 50 ms median and
 *     ≤ 1/20 of tar);
 * (b) a restore into an empty folder against `tar x` of the same tree (target ≤ 1.5×), on the disk and
 *     in memory (/dev/shm, where the disk's time is left out), and the fetch of the files' contents alone;
 * (c) store growth per step against the bytes changed (target ≤ 1.2× plus a fixed few KB);
 * (d) a durable step with snapshots on against off, on the bench/run workload (agentRun, command `true`;
 *     target ≤ 1.2×). `--quick`: 1,000 files / 20 MB, and fewer rounds.
 * Each timing in (a) and (b) starts after a `sync`, so none pays for the disk writes of the one before it.
 * Beside (a), the floor of any stat-based scan: `find` taking the same stat fields of every entry (C, one
 * thread, nothing else done), against 1/20 of tar.
 * Also beside (a): the first snapshot of a worker that has not seen the tree (restarted on the same
 * machine, say), every file read and hashed, against `sha256sum` of every file.
 *
 *   npx tsx bench/snapshot.ts
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from '@temporalio/worker'
import { createActivities } from '../src/activities/index.js'
import { newRunId, startAgentRun } from '../src/embed/client.js'
import { TETHER_WORKER_DEFAULTS, workflowSource } from '../src/embed/worker.js'
import { Policy } from '../src/policy/index.js'
import { postgresStore, readTree, WorkspaceSnapshots } from '../src/snapshots/index.js'
import { connectTemporalWorker, localTarget } from '../src/stack/index.js'
import { type BenchStack, median, startBenchStack } from './support.js'

const quick = process.argv.includes('--quick')
const FOLDERS = quick ? 10 : 100
const PER_FOLDER = 100
const FILE_BYTES = 20 * 1024
const ROUNDS = quick ? 5 : 11
/** Files fetched a round trip in (b)'s fetch alone: about the 16 MB a restore asks for at once. */
const FETCH_BATCH = 800

const ms = (from: number) => performance.now() - from
const fmt = (n: number) => `${n.toFixed(1).padStart(8)} ms`
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`

function makeTree(root: string) {
  for (let d = 0; d < FOLDERS; d++) {
    const dir = join(root, `pkg${d}`, 'src')
    mkdirSync(dir, { recursive: true })
    for (let f = 0; f < PER_FOLDER; f++) writeFileSync(join(dir, `file${f}.txt`), randomBytes(FILE_BYTES))
  }
}

/** Three files in three folders get new content, of the same size. */
function changeThree(root: string, round: number): number {
  for (let i = 0; i < 3; i++) {
    const d = (round * 7 + i * 31) % FOLDERS
    writeFileSync(
      join(root, `pkg${d}`, 'src', `file${(round + i) % PER_FOLDER}.txt`),
      randomBytes(FILE_BYTES),
    )
  }
  return 3 * FILE_BYTES
}

const sh = (cwd: string, command: string) => execFileSync('sh', ['-c', command], { cwd, stdio: 'ignore' })
/** Dirty pages written back, so a measurement does not pay for the writes of the one before it. */
const settle = () => execFileSync('sync')

async function treeBench(stack: BenchStack, dir: string) {
  const root = join(dir, 'tree')
  mkdirSync(root)
  makeTree(root)
  // Files written in the last 2 s are read again by the next scan (racy); a workspace is older than that.
  await new Promise((resolve) => setTimeout(resolve, 2_500))
  const snapshots = new WorkspaceSnapshots(postgresStore(stack.audit.pool), stack.audit.pool)
  const exclusion = { key: 'none', excluded: () => false }
  const runId = newRunId()
  await stack.audit.pool.query(
    `insert into runs (run_id, goal, workspace, contract, policy, started_at) values ($1, 'bench', $2, '{}', '{}', now())`,
    [runId, root],
  )
  const git = join(dir, 'git')
  // git keeps its index and objects beside the tree, as it would in a checkout.
  const gitEnv = `GIT_DIR=${git} GIT_WORK_TREE=${root}`
  sh(root, `GIT_DIR=${git} git init -q && ${gitEnv} git add -A && ${gitEnv} git write-tree`)
  let started = performance.now()
  await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, exclusion)
  const first = ms(started)

  const series = {
    tether: [] as number[],
    scan: [] as number[],
    git: [] as number[],
    tar: [] as number[],
    stats: [] as number[],
    growth: [] as number[],
    fresh: [] as number[],
    freshScan: [] as number[],
    sums: [] as number[],
  }
  let changed = 0
  for (let round = 1; round <= ROUNDS; round++) {
    const bytes = changeThree(root, round)
    changed += bytes
    // Each is timed after the writes before it are on disk: the last round's tar (200 MB) or git index, still
    // being written back, would otherwise take CPU and disk from whichever comes next.
    settle()
    // What the activity does after a step: scan, store what is new, record the row.
    started = performance.now()
    const taken = await snapshots.take({ runId, step: round, call: 0, kind: 'tool' }, root, exclusion)
    series.tether.push(ms(started))
    series.scan.push(taken.scanMs)
    series.growth.push(taken.row.newBytes / bytes)
    settle()
    started = performance.now()
    sh(root, `${gitEnv} git add -A && ${gitEnv} git write-tree`)
    series.git.push(ms(started))
    settle()
    started = performance.now()
    sh(root, `find . -printf '%s %T@ %C@ %i %m\n' > /dev/null`)
    series.stats.push(ms(started))
    if (round <= 3) {
      settle()
      started = performance.now()
      sh(dir, `tar -cf tree.tar -C ${root} .`)
      series.tar.push(ms(started))
      // A worker that has not seen the workspace (restarted, or another run's): every file read and hashed,
      // every object found in the store already.
      settle()
      started = performance.now()
      const fresh = await new WorkspaceSnapshots(postgresStore(stack.audit.pool), stack.audit.pool).take(
        { runId, step: round, call: 1, kind: 'tool' },
        root,
        exclusion,
      )
      series.fresh.push(ms(started))
      series.freshScan.push(fresh.scanMs)
      settle()
      started = performance.now()
      sh(root, 'find . -type f -print0 | xargs -0 sha256sum > /dev/null')
      series.sums.push(ms(started))
    }
  }
  const [tether, scanMs, gitMs, tar, stats, fresh, freshScan, sums] = [
    series.tether,
    series.scan,
    series.git,
    series.tar,
    series.stats,
    series.fresh,
    series.freshScan,
    series.sums,
  ].map(median) as [number, number, number, number, number, number, number, number]
  console.log(
    `(a) ${FOLDERS * PER_FOLDER} files / ${((FOLDERS * PER_FOLDER * FILE_BYTES) / 2 ** 20).toFixed(0)} MB, 3 files changed per step; medians of ${ROUNDS} rounds (tar: 3)`,
  )
  console.log(`    first snapshot (every file read and stored):  ${fmt(first)}`)
  console.log(`    tether snapshot (scan + store + audit row):   ${fmt(tether)}`)
  console.log(`      of which the scan (every entry lstat'ed):   ${fmt(scanMs)}`)
  console.log(
    `    git add -A && git write-tree:                 ${fmt(gitMs)}   ratio tether/git ${(tether / gitMs).toFixed(2)}`,
  )
  console.log(
    `    tar -cf of the whole tree:                    ${fmt(tar)}   ratio tether/tar ${(tether / tar).toFixed(3)} (1/${(tar / tether).toFixed(0)})`,
  )
  console.log(
    `    the stats alone (find, C, one thread):        ${fmt(stats)}   ratio find/tar ${(stats / tar).toFixed(3)} (1/${(tar / stats).toFixed(0)})`,
  )
  console.log(
    `    a worker's first snapshot (objects stored):   ${fmt(fresh)}   of which the scan ${fmt(freshScan).trim()} (medians of 3)`,
  )
  console.log(
    `    sha256sum of every file (C, one thread):      ${fmt(sums)}   ratio first snapshot/sha256sum ${(fresh / sums).toFixed(2)}`,
  )

  // (b) The last tree into an empty folder, against tar x of the same tree: on the disk, and in memory
  // (/dev/shm), where what is left is each one's own work rather than the disk's.
  sh(dir, `tar -cf tree.tar -C ${root} .`)
  const rootHash = snapshots.lastRoot(root) as string
  const restoreRounds = async (base: string) => {
    const restores = { tether: [] as number[], tar: [] as number[] }
    for (let round = 0; round < 3; round++) {
      const into = join(base, `restore-${round}`)
      settle()
      started = performance.now()
      await snapshots.restore(rootHash, into, exclusion)
      restores.tether.push(ms(started))
      const untar = join(base, `untar-${round}`)
      mkdirSync(untar)
      settle()
      started = performance.now()
      sh(dir, `tar -xf tree.tar -C ${untar}`)
      restores.tar.push(ms(started))
      await rm(into, { recursive: true, force: true })
      await rm(untar, { recursive: true, force: true })
    }
    const [restore, untar] = [restores.tether, restores.tar].map(median) as [number, number]
    console.log(`    tether restore (fetch, check, write, verify): ${fmt(restore)}`)
    console.log(
      `    tar -xf:                                      ${fmt(untar)}   ratio tether/tar ${(restore / untar).toFixed(2)}`,
    )
  }
  console.log('(b) restore into an empty folder, medians of 3')
  await restoreRounds(dir)
  if (existsSync('/dev/shm')) {
    const memory = await mkdtemp('/dev/shm/tether-bench-')
    console.log('    the same into memory (/dev/shm), medians of 3')
    try {
      await restoreRounds(memory)
    } finally {
      await rm(memory, { recursive: true, force: true })
    }
  }
  // What a restore cannot go below with this store: fetching the files' contents, nothing checked or written.
  const store = postgresStore(stack.audit.pool)
  const contents = (await readTree(store, rootHash))
    .filter((p) => p.entry.kind === 'f')
    .map((p) => p.entry.hash)
  const fetches: number[] = []
  for (let round = 0; round < 3; round++) {
    started = performance.now()
    for (let i = 0; i < contents.length; i += FETCH_BATCH)
      await store.getUnchecked?.(contents.slice(i, i + FETCH_BATCH))
    fetches.push(ms(started))
  }
  console.log(
    `    the fetch alone (every file's content from PostgreSQL, unchecked, unwritten): ${fmt(median(fetches))}`,
  )

  // (c) What the store grew by, per step, against what changed.
  const { rows } = await stack.audit.pool.query<{ new_bytes: string; new_objects: number }>(
    'select new_bytes, new_objects from workspace_snapshots where run_id = $1 and step > 0 order by step',
    [runId],
  )
  const grown = rows.reduce((sum, row) => sum + Number(row.new_bytes), 0)
  const fixed = (grown - changed) / rows.length
  console.log('(c) store growth per step (objects written), against the bytes changed')
  console.log(
    `    changed ${kb(changed / rows.length)} per step, stored ${kb(grown / rows.length)} per step: ` +
      `ratio ${median(series.growth).toFixed(2)} (median), that is the changed bytes plus ${kb(fixed)} of folder listings ` +
      `(${rows[0]?.new_objects ?? 0} objects: 3 files; each folder on their paths, and the changed page of the large ones)`,
  )
}

/** (d) agentRun steps with snapshots on and off: two workers on one server, runs interleaved. */
async function stepBench(stack: BenchStack) {
  const off = `bench-off-${process.pid}`
  const connection = await connectTemporalWorker(localTarget(stack.temporalAddress))
  const worker = await Worker.create({
    ...TETHER_WORKER_DEFAULTS,
    connection,
    namespace: 'default',
    taskQueue: off,
    ...workflowSource(),
    activities: createActivities({ audit: stack.audit, snapshots: { store: 'off' } }),
  })
  const running = worker.run()
  const policy = Policy.tiered().layer('bench').allowExec('true')
  const steps = quick ? 10 : 30
  const script = {
    turns: [
      ...Array.from({ length: steps }, () => ({ toolCalls: [{ name: 'exec', args: { argv: ['true'] } }] })),
      { text: 'done' },
    ],
  }
  const once = async (taskQueue: string) => {
    const ws = await stack.workspace(script)
    const started = performance.now()
    const handle = await startAgentRun(stack.client, {
      contract: { goal: 'bench', workspace: ws.path, model: ws.model, budgets: { maxSteps: steps + 5 } },
      policy,
      taskQueue,
      runId: newRunId(),
    })
    const result = await handle.result()
    if (result.outcome !== 'finished') throw new Error(`bench run ended ${result.outcome}: ${result.reason}`)
    return ms(started) / result.steps
  }
  try {
    await once(stack.taskQueue)
    await once(off)
    const on: number[] = []
    const without: number[] = []
    for (let round = 0; round < (quick ? 2 : 5); round++) {
      on.push(await once(stack.taskQueue))
      without.push(await once(off))
    }
    const [a, b] = [median(on), median(without)]
    console.log(
      `(d) agentRun, ${steps} steps of \`true\` (the bench/run workload), medians of interleaved runs`,
    )
    console.log(`    snapshots on: ${fmt(a)}/step   off: ${fmt(b)}/step   ratio on/off ${(a / b).toFixed(2)}`)
  } finally {
    worker.shutdown()
    await running
    await connection.close()
  }
}

const stack = await startBenchStack()
const dir = await mkdtemp(join(tmpdir(), 'tether-bench-snapshot-'))
try {
  await treeBench(stack, dir)
  await stepBench(stack)
} finally {
  await rm(dir, { recursive: true, force: true })
  await stack.stop()
}
