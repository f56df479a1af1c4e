/**
 * Audit store bench: write throughput of the idempotent writers (batched vs one row per statement), then
 * p50/p99 of every audit query with 1,000,000 policy_events and 1,000,000 steps spread over 10,000 runs.
 * The rows are loaded in the order a live server writes them (by time, so concurrent runs' rows
 * interleave); the queries are timed as written, again after the finished runs' rows were clustered the
 * way recordRunFinished does it (tether_cluster_run), and once more with a buffer cache that holds the data.
 * Target: every query p99 < 5 ms.
 *
 *   npx tsx bench/audit.ts            # embedded PostgreSQL in a temporary folder
 *   DATABASE_URL=postgres://… npx tsx bench/audit.ts   # a fresh database on that server
 *
 * BENCH_AUDIT_RUNS scales the loaded data (default 10000 runs × 100 steps × 100 policy events).
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import pg from 'pg'
import { type AuditStore, openAudit, type PolicyEvent } from '../src/audit/index.js'
import { type EmbeddedPostgres, embeddedPostgresFolders, startEmbeddedPostgres } from '../src/stack/index.js'

const RUNS = Number(process.env.BENCH_AUDIT_RUNS ?? 10_000)
const PER_RUN = 100
const ITERATIONS = 400
const TARGET_MS = 5
const CACHED_BUFFERS = '1536MB'
const T0 = Date.parse('2030-01-01T00:00:00Z')

async function main(): Promise<void> {
  let stateDir: string | undefined
  let server: EmbeddedPostgres | undefined
  let serverUrl = process.env.DATABASE_URL
  if (!serverUrl) {
    stateDir = await mkdtemp(join(tmpdir(), 'tether-bench-audit-'))
    server = await startEmbeddedPostgres({ dataDir: join(stateDir, 'postgres') })
    serverUrl = server.url
  }
  const name = `tether_bench_${randomBytes(4).toString('hex')}`
  const databaseUrl = (server: string) => {
    const url = new URL(server)
    url.pathname = `/${name}`
    return url.toString()
  }
  await admin(serverUrl, `create database ${name}`)
  let store = await openAudit({ databaseUrl: databaseUrl(serverUrl) })
  try {
    console.log(
      `audit bench on PostgreSQL ${store.target} (${(await version(store)).split(' ')[1]}), database ${name}`,
    )
    await writeThroughput(store)
    await load(store)
    const passes = [{ label: 'as written', results: await queryLatencies(store) }]
    await clusterFinishedRuns(store)
    passes.push({ label: 'finished runs clustered', results: await queryLatencies(store) })
    if (server && stateDir) {
      // Same data, same queries, on a server whose buffer cache holds the working set (as a production server
      // sized for it would): separates the query plans' cost from reading pages out of the OS cache.
      await store.close()
      await admin(serverUrl, `alter system set shared_buffers = '${CACHED_BUFFERS}'`)
      await server.stop()
      server = await startEmbeddedPostgres({ dataDir: join(stateDir, 'postgres') })
      serverUrl = server.url
      store = await openAudit({ databaseUrl: databaseUrl(serverUrl) })
      await prewarm(store)
      passes.push({
        label: `clustered, shared_buffers ${CACHED_BUFFERS}, prewarmed`,
        results: await queryLatencies(store),
      })
    }
    report(passes)
  } finally {
    await store.close()
    await admin(serverUrl, `drop database if exists ${name} with (force)`)
    await server?.stop()
    if (stateDir) {
      for (const folder of [stateDir, ...embeddedPostgresFolders(join(stateDir, 'postgres'))]) {
        await rm(folder, { recursive: true, force: true })
      }
    }
  }
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

async function version(store: AuditStore): Promise<string> {
  const { rows } = await store.pool.query<{ version: string }>('select version()')
  return rows[0]?.version ?? 'unknown'
}

function at(ms: number): Date {
  return new Date(T0 + ms)
}

/** Rows per second of `write`, which writes `rows` rows. */
async function rate(rows: number, write: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await write()
  return rows / ((performance.now() - start) / 1000)
}

async function writeThroughput(store: AuditStore): Promise<void> {
  const runs = Array.from({ length: 50 }, (_, i) => `write-${i}`)
  for (const runId of runs) {
    await store.recordRunStarted({
      runId,
      goal: 'bench',
      workspace: '/w',
      contract: {},
      policy: {},
      startedAt: at(0),
    })
  }
  const event = (runId: string, i: number): PolicyEvent => ({
    runId,
    step: Math.floor(i / 4),
    call: i % 4,
    act: 'read',
    target: `packages/app-${i}/.env.local`,
    effect: 'deny',
    rule: '.env.*',
    layer: 'builtin-secrets',
    kind: 'refusal',
    reason: 'secrets stay out of the transcript',
    source: 'policy',
    checks: [{ effect: 'deny', target: `packages/app-${i}/.env.local`, rule: '.env.*' }],
    at: at(i),
  })
  const BATCH = 500
  const batched = await rate(runs.length * BATCH * 2, async () => {
    for (const runId of runs) {
      for (let b = 0; b < 2; b++) {
        await store.recordPolicyEvents(Array.from({ length: BATCH }, (_, i) => event(runId, b * BATCH + i)))
      }
    }
  })
  const single = await rate(runs.length * 40, async () => {
    for (const runId of runs) {
      for (let i = 0; i < 40; i++) await store.recordPolicyEvents([event(runId, 10_000 + i)])
    }
  })
  const steps = await rate(runs.length * 40, async () => {
    for (const runId of runs) {
      await Promise.all(
        Array.from({ length: 40 }, (_, step) =>
          store.recordStep({
            runId,
            step,
            toolCalls: [{ id: 'c0', name: 'exec', args: { argv: ['npm', 'test'] } }],
            decision: 'tool_calls',
            observation: 'x'.repeat(2000),
            inputTokens: 1000,
            outputTokens: 100,
            startedAt: at(step),
            finishedAt: at(step + 1),
          }),
        ),
      )
    }
  })
  const retried = await rate(runs.length * BATCH, async () => {
    for (const runId of runs) {
      await store.recordPolicyEvents(Array.from({ length: BATCH }, (_, i) => event(runId, i)))
    }
  })
  const messages = await rate(runs.length * 100, async () => {
    for (const runId of runs) {
      await store.appendMessages(
        runId,
        0,
        Array.from({ length: 100 }, (_, i) => ({
          role: i % 2 ? 'assistant' : 'tool',
          content: 'y'.repeat(500),
        })),
      )
    }
  })
  console.log('\nwrite throughput (rows/s, one connection unless noted)')
  table(
    ['writer', 'rows/s'],
    [
      ['recordPolicyEvents, batches of 500', fmt(batched)],
      ['recordPolicyEvents, 1 row per call', fmt(single)],
      ['recordStep, 1 row per call, 10 in parallel', fmt(steps)],
      ['recordPolicyEvents retry of 500 existing rows (no-op)', fmt(retried)],
      ['appendMessages, batches of 100', fmt(messages)],
    ],
  )
  console.log(`batched / single-row policy events: ${(batched / single).toFixed(1)}×`)
}

/**
 * Bulk-loads the query data set in SQL (generate_series): the writers are measured above. Each table is
 * filled in time order, as the runs would have written it: a run starts every minute and takes about 17 to
 * write its 100 steps, so each page holds rows of many runs.
 */
async function load(store: AuditStore): Promise<void> {
  const start = performance.now()
  // Our own integer constants, interpolated so every statement plans with the real sizes.
  const q = (sql: string) =>
    store.pool.query(sql.replaceAll('$1', String(RUNS)).replaceAll('$2', String(PER_RUN)))
  const run = `'bench-' || r`
  const runStart = `timestamptz '2030-01-01' + r * interval '1 minute'`
  await q(`insert into runs (run_id, goal, workspace, contract, policy, task_queue, status, outcome, steps,
                             input_tokens, output_tokens, started_at, finished_at)
           select ${run}, 'goal of run ' || r, '/work/ws', '{"goal":"bench"}', '{"layers":[]}', 'tether',
                  case when r % 10 = 0 then 'running' else 'finished' end,
                  case when r % 10 = 0 then null else 'verified' end,
                  case when r % 10 = 0 then null else $2 end,
                  case when r % 10 = 0 then null else 100000 end,
                  case when r % 10 = 0 then null else 10000 end,
                  ${runStart},
                  case when r % 10 = 0 then null else ${runStart} + interval '30 minutes' end
             from generate_series(1, $1) r`)
  await q(`insert into steps (run_id, step, tool_calls, decision, observation, input_tokens, output_tokens,
                              started_at, finished_at)
           select ${run}, s, '[{"id":"c0","name":"exec","args":{"argv":["npm","test"]}}]', 'tool_calls',
                  'exit 1: 3 failing, 12 passing', 1000, 100,
                  ${runStart} + s * interval '10 seconds', ${runStart} + s * interval '10 seconds' + interval '5 seconds'
             from generate_series(1, $1) r, generate_series(0, $2 - 1) s
            order by r * 60 + s * 10, r`)
  // 100 events per run: 80 refusals by policy, 20 human decisions (half of them denials).
  await q(`insert into policy_events (run_id, step, call, kind, source, act, target, effect, rule, layer,
                                      decided_by, reason, at)
           select ${run}, e / 2, e % 2,
                  case when e % 5 = 4 then 'decision' else 'refusal' end,
                  case when e % 5 = 4 then 'update' else 'policy' end,
                  'exec', 'git push origin branch-' || e,
                  case when e % 5 = 4 then (case when e % 10 = 4 then 'allow' else 'deny' end) else 'deny' end,
                  'git push*', 'base',
                  case when e % 5 = 4 then 'ana' end, 'refused by git push* in base',
                  ${runStart} + e * interval '5 seconds'
             from generate_series(1, $1) r, generate_series(0, $2 - 1) e
            order by r * 60 + e * 5, r`)
  await q(`insert into exec_results (run_id, step, call, attempt, argv, cwd, status, exit_code, duration_ms,
                                     stdout_text, stdout_elided, stdout_bytes, stdout_lines, stdout_sha256,
                                     stderr_text, stderr_elided, stderr_bytes, stderr_lines, stderr_sha256,
                                     started_at, finished_at)
           select ${run}, s, 0, 1, array['npm', 'test'], '/work/ws', 'exited', s % 2, 1500,
                  repeat('PASS test/a.test.ts\n', 20), 0, 400, 20, repeat('a', 64),
                  '', 0, 0, 0, repeat('b', 64),
                  ${runStart} + s * interval '10 seconds' + interval '1 second',
                  ${runStart} + s * interval '10 seconds' + interval '3 seconds'
             from generate_series(1, $1) r, generate_series(0, ($2 / 5) - 1) s
            order by r * 60 + s * 10, r`)
  await q(`insert into gate_events (run_id, step, kind, detail, at)
           select ${run}, $2 - 1, k, 'npm test: ' || k, ${runStart} + interval '29 minutes'
             from generate_series(1, $1) r, unnest(array['gate_output', 'gate_passed']) k`)
  // 5 approvals per run; 500 of them (one per 20th run) still waiting, for ana, bob, or anyone.
  await q(`insert into approvals (approval_id, run_id, step, call, act, target, tree, rule, layer, approvers,
                                  requested_at, deadline, decision, decided_by, channel, decided_at)
           select ${run} || '-a' || a, ${run}, a * 10, 0, 'exec', 'npm publish', '[]', 'npm publish*', 'base',
                  case r % 3 when 0 then '{}'::text[] when 1 then '{ana}' else '{bob,dee}' end,
                  ${runStart} + a * interval '1 minute', ${runStart} + interval '1 day',
                  case when a = 0 and r % 20 = 0 then null else 'approved' end,
                  case when a = 0 and r % 20 = 0 then null else 'ana' end,
                  case when a = 0 and r % 20 = 0 then null else 'update' end,
                  case when a = 0 and r % 20 = 0 then null else ${runStart} + a * interval '1 minute' + interval '5 seconds' end
             from generate_series(1, $1) r, generate_series(0, 4) a
            order by r + a, r`)
  await q(`insert into messages (run_id, seq, role, content)
           select ${run}, m, case when m % 2 = 0 then 'tool' else 'assistant' end,
                  json_build_object('role', case when m % 2 = 0 then 'tool' else 'assistant' end,
                                    'content', repeat('z', 200))
             from generate_series(1, $1) r, generate_series(0, ($2 / 2) - 1) m
            order by r * 60 + m * 20, r`)
  await store.pool.query('vacuum analyze')
  const counts = await store.pool.query<Record<string, number>>(
    `select (select count(*) from runs) as runs, (select count(*) from steps) as steps,
            (select count(*) from policy_events) as policy_events, (select count(*) from exec_results) as exec_results,
            (select count(*) from approvals) as approvals, (select count(*) from approvals where decision is null) as pending,
            (select count(*) from messages) as messages`,
  )
  const c = counts.rows[0] ?? {}
  console.log(
    `\nloaded in ${((performance.now() - start) / 1000).toFixed(1)} s: ${fmt(c.runs)} runs, ${fmt(c.steps)} steps, ` +
      `${fmt(c.policy_events)} policy_events, ${fmt(c.exec_results)} exec_results, ${fmt(c.approvals)} approvals ` +
      `(${fmt(c.pending)} pending), ${fmt(c.messages)} messages`,
  )
}

/** What recordRunFinished does when a run ends, done here for every finished run of the loaded data. */
async function clusterFinishedRuns(store: AuditStore): Promise<void> {
  const { rows } = await store.pool.query<{ run_id: string }>(
    `select run_id from runs where status = 'finished' order by finished_at`,
  )
  const pending = rows.map((row) => row.run_id)
  const start = performance.now()
  // Two at a time, as two workers finishing runs would.
  await Promise.all(
    [0, 1].map(async () => {
      for (let runId = pending.shift(); runId; runId = pending.shift()) {
        await store.pool.query('select tether_cluster_run($1)', [runId])
      }
    }),
  )
  const seconds = (performance.now() - start) / 1000
  await store.pool.query('vacuum analyze')
  console.log(
    `\nclustered ${fmt(rows.length)} finished runs in ${seconds.toFixed(1)} s ` +
      `(${((seconds * 1000 * 2) / rows.length).toFixed(1)} ms per run, two at a time), then vacuum analyze`,
  )
}

interface Measured {
  name: string
  /** Counts towards the target (everything but the round-trip floor). */
  target: boolean
  p50: number
  p99: number
  rows: number
}

interface Query {
  name: string
  target: boolean
  run: (i: number) => Promise<unknown>
}

/**
 * Times every query ITERATIONS times, one call of each in turn, so a burst of noise on the shared machine
 * hits all queries alike instead of whichever ran during it.
 */
async function measureAll(queries: Query[]): Promise<Measured[]> {
  for (let i = 0; i < 20; i++) for (const query of queries) await query.run(i)
  const times = queries.map(() => [] as number[])
  const rows = queries.map(() => 0)
  for (let i = 0; i < ITERATIONS; i++) {
    for (const [q, query] of queries.entries()) {
      const start = performance.now()
      const result = await query.run(i)
      times[q]!.push(performance.now() - start)
      rows[q]! += count(result)
    }
  }
  return queries.map(({ name, target }, q) => {
    const sorted = times[q]!.sort((a, b) => a - b)
    const pick = (p: number) =>
      sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN
    return { name, target, p50: pick(0.5), p99: pick(0.99), rows: rows[q]! / ITERATIONS }
  })
}

function count(result: unknown): number {
  if (Array.isArray(result)) return result.length
  if (result && typeof result === 'object' && 'items' in result)
    return (result as { items: unknown[] }).items.length
  return result === undefined ? 0 : 1
}

async function queryLatencies(store: AuditStore): Promise<Measured[]> {
  // A fixed pseudo-random walk over the runs, the same in every bench run; every tenth run is running.
  const runId = (i: number) => `bench-${((i * 7919) % RUNS) + 1}`
  const runningRunId = (i: number) => `bench-${(((i * 7919) % (RUNS / 10)) + 1) * 10}`
  const deepCursors: string[] = []
  let before: string | undefined
  for (let page = 0; page < 20; page++) {
    before = (await store.refusedActions({ limit: 50, ...(before ? { before } : {}) })).next
    if (before) deepCursors.push(before)
  }
  const query = (name: string, run: (i: number) => Promise<unknown>): Query => ({ name, target: true, run })
  return measureAll([
    // The machine's floor, measured in the same run: a trivial round trip through the same pool.
    { name: 'select 1 (round-trip floor)', target: false, run: () => store.pool.query('select 1') },
    query('refusedActions({ runId })', (i) => store.refusedActions({ runId: runId(i), limit: 100 })),
    query('executedCommands({ runId })', (i) => store.executedCommands({ runId: runId(i) })),
    query('runTimeline(runId)', (i) => store.runTimeline(runId(i))),
    query('runTimeline(runId), running runs only', (i) => store.runTimeline(runningRunId(i))),
    query('runSummary(runId)', (i) => store.runSummary(runId(i))),
    query('loadMessages(runId)', (i) => store.loadMessages(runId(i))),
    query('messageCount(runId)', (i) => store.messageCount(runId(i))),
    query('pendingApprovals()', () => store.pendingApprovals()),
    query('pendingApprovals({ approver })', (i) =>
      store.pendingApprovals({ approver: i % 2 ? 'ana' : 'dee' }),
    ),
    query('refusedActions() newest page of 50', () => store.refusedActions({ limit: 50 })),
    query('refusedActions() page 2-20 by cursor', (i) =>
      store.refusedActions({ limit: 50, before: deepCursors[i % deepCursors.length]! }),
    ),
    query('listRuns({ limit: 50 })', () => store.listRuns({ limit: 50 })),
    query("listRuns({ status: 'running' })", () => store.listRuns({ limit: 50, status: 'running' })),
  ])
}

async function prewarm(store: AuditStore): Promise<void> {
  const { rows: settings } = await store.pool.query<{ shared_buffers: string }>('show shared_buffers')
  await store.pool.query('create extension if not exists pg_prewarm')
  for (const table of [
    'runs',
    'steps',
    'policy_events',
    'exec_results',
    'gate_events',
    'approvals',
    'messages',
  ]) {
    await store.pool.query(`select pg_prewarm('${table}')`)
  }
  const { rows } = await store.pool.query<{ size: string }>(
    'select pg_size_pretty(pg_database_size(current_database())) as size',
  )
  console.log(`\nrestarted with shared_buffers ${settings[0]?.shared_buffers}, prewarmed ${rows[0]?.size}`)
}

function report(passes: Array<{ label: string; results: Measured[] }>): void {
  console.log(
    `\nquery latency over ${ITERATIONS} calls each, the queries taking turns (ms, through the store, one caller)`,
  )
  const [first] = passes
  if (!first) return
  table(
    ['query', 'rows', ...passes.flatMap((p) => [`${p.label} p50`, 'p99']), `p99 < ${TARGET_MS}`],
    first.results.map((r, i) => [
      r.name,
      r.rows.toFixed(0),
      ...passes.flatMap((p) => [p.results[i]?.p50.toFixed(2) ?? '', p.results[i]?.p99.toFixed(2) ?? '']),
      r.target
        ? passes.map((p) => ((p.results[i]?.p99 ?? Infinity) < TARGET_MS ? 'met' : 'MISSED')).join(' / ')
        : '-',
    ]),
  )
  for (const { label, results } of passes) {
    const [floor] = results
    const timeline = results.find((r) => r.name === 'runTimeline(runId)')
    const missed = results.filter((r) => r.target && r.p99 >= TARGET_MS).map((r) => r.name)
    console.log(
      `${label}: runTimeline p50 / round-trip p50 ${((timeline?.p50 ?? 0) / (floor?.p50 ?? 1)).toFixed(1)}×, ` +
        `round-trip p99 / p50 ${((floor?.p99 ?? 0) / (floor?.p50 ?? 1)).toFixed(1)}× (this machine's noise); ` +
        (missed.length ? `p99 target MISSED by ${missed.join(', ')}` : 'every p99 target met'),
    )
  }
}

function fmt(value: number | undefined): string {
  return Math.round(value ?? 0).toLocaleString('en-US')
}

function table(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')
  console.log(line(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const row of rows) console.log(line(row))
}

await main()
