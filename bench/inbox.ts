/**
 * bench/inbox: time to first render of the approvals inbox with 1,000 pending approvals in the audit, beside
 * the same inbox with 10, measured alternately in one run (so machine noise hits both alike):
 *
 * - server: `GET /` from request to the last byte of HTML (the page the browser renders);
 * - browser: Chromium's first contentful paint after navigating to the inbox (`/usr/bin/chromium`).
 *
 * Target: first render with 1,000 pending under 1 s on this machine.
 *
 *   npx tsx bench/inbox.ts            # embedded PostgreSQL in a temporary folder
 *   DATABASE_URL=postgres://… npx tsx bench/inbox.ts   # two fresh databases on that server
 */
import { randomBytes } from 'node:crypto'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@temporalio/client'
import pg from 'pg'
import { type AuditStore, openAudit } from '../src/audit/index.js'
import { actionDigest } from '../src/identity/index.js'
import { type Inbox, startInbox } from '../src/inbox/index.js'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/stack/index.js'
import { launchChromium } from '../test/support/browser.js'
import { percentile } from './support.js'

const SIZES = [10, 1_000] as const
const PER_RUN = 10
const SERVER_ROUNDS = 40
const BROWSER_ROUNDS = 15
const TARGET_MS = 1_000

/** `count` pending approvals over runs of ten, the way runs record them (goal, tree, offer, deadline). */
async function seed(audit: AuditStore, count: number): Promise<void> {
  const now = Date.now()
  for (let r = 0; r < count / PER_RUN; r++) {
    const runId = `bench-run-${r}`
    const workspace = `/srv/work/project-${r}`
    const contract = { goal: 'g', workspace }
    await audit.recordRunStarted({
      runId,
      goal: `Make the integration tests of service ${r} pass again after the dependency upgrade; keep the public API unchanged and explain every change in the commit message.`,
      workspace,
      contract,
      policy: {},
      startedAt: new Date(now - 3_600_000),
    })
    for (let i = 0; i < PER_RUN; i++) {
      const target = `npm install left-pad@1.${i}.0 --save-exact`
      const tree = `ask  command  ${target}\n  ask  exec  npm install*  (rule in layer project)\n  allow  read  package.json`
      await audit.recordApprovalRequested({
        approvalId: `bench-approval-${r}-${i}`,
        runId,
        step: i + 1,
        call: 0,
        act: 'exec',
        target,
        tree,
        rule: 'npm install*',
        layer: 'project',
        requestedAt: new Date(now - 60_000 * i),
        deadline: new Date(now + 3_600_000 * (1 + ((r * PER_RUN + i) % 24))),
        approvers: (r + i) % 2 === 0 ? ['alice'] : ['bob'],
        actionDigest: actionDigest({ act: 'exec', target, tree }),
        approvalsRequired: 1,
        rememberOffer: { exact: target },
        identity: 'signed',
      })
    }
  }
}

async function main(): Promise<void> {
  let stateDir: string | undefined
  let server: EmbeddedPostgres | undefined
  let serverUrl = process.env.DATABASE_URL
  if (!serverUrl) {
    stateDir = await mkdtemp(join(tmpdir(), 'tether-bench-inbox-'))
    // The embedded PostgreSQL runs as its own user when we are root; it must be able to enter this folder.
    await chmod(stateDir, 0o755)
    server = await startEmbeddedPostgres({ dataDir: join(stateDir, 'postgres') })
    serverUrl = server.url
  }
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  const names: string[] = []
  const audits: AuditStore[] = []
  const inboxes: Inbox[] = []
  // The inbox page reads only the audit; the client connects lazily and is never used here.
  const client = new Client({ namespace: 'default' })
  try {
    for (const size of SIZES) {
      const name = `tether_bench_inbox_${size}_${randomBytes(3).toString('hex')}`
      await admin.query(`create database ${name}`)
      names.push(name)
      const url = new URL(serverUrl)
      url.pathname = `/${name}`
      const audit = await openAudit({ databaseUrl: url.toString(), migrate: true })
      audits.push(audit)
      await seed(audit, size)
      await audit.pool.query('analyze')
      inboxes.push(await startInbox({ audit, client, namespace: 'default', port: 0 }))
    }
    const cookie = 'tether_viewer=alice; tether_tz=America/New_York'

    const serverMs: number[][] = SIZES.map(() => [])
    for (let round = 0; round < SERVER_ROUNDS; round++) {
      for (const [i, inbox] of inboxes.entries()) {
        const started = performance.now()
        const response = await fetch(`${inbox.url}/`, { headers: { cookie } })
        const html = await response.text()
        if (!response.ok || !html.includes('Approvals waiting'))
          throw new Error(`GET / answered ${response.status}`)
        serverMs[i]?.push(performance.now() - started)
      }
    }

    const browser = await launchChromium()
    const paintMs: number[][] = SIZES.map(() => [])
    try {
      for (let round = 0; round < BROWSER_ROUNDS; round++) {
        for (const [i, inbox] of inboxes.entries()) {
          const context = await browser.newContext({ timezoneId: 'America/New_York' })
          await context.addCookies([
            { name: 'tether_viewer', value: 'alice', url: inbox.url },
            { name: 'tether_tz', value: 'America/New_York', url: inbox.url },
          ])
          const page = await context.newPage()
          await page.goto(`${inbox.url}/`, { waitUntil: 'load' })
          // A string, not a function: the bench runs through tsx, whose helpers do not exist in the page.
          const paint = (await page.evaluate(`new Promise((resolve) => {
            const poll = () => {
              const entry = performance.getEntriesByName('first-contentful-paint')[0]
              if (entry) resolve(entry.startTime)
              else setTimeout(poll, 10)
            }
            poll()
          })`)) as number
          paintMs[i]?.push(paint)
          await context.close()
        }
      }
    } finally {
      await browser.close()
    }

    const sorted = (values: number[] | undefined) => [...(values ?? [])].sort((a, b) => a - b)
    const row = (label: string, samples: number[][]) => {
      const [small, large] = samples.map(sorted)
      const p50 = (s: number[] | undefined) => percentile(s ?? [], 50)
      const p95 = (s: number[] | undefined) => percentile(s ?? [], 95)
      console.log(
        `${label.padEnd(34)} ${p50(small).toFixed(1).padStart(7)} ms ${p95(small).toFixed(1).padStart(7)} ms   ` +
          `${p50(large).toFixed(1).padStart(7)} ms ${p95(large).toFixed(1).padStart(7)} ms   ${(p50(large) / p50(small)).toFixed(2)}×`,
      )
      return p50(large)
    }
    console.log(
      `inbox, first page (50 of N pending, the viewer's first), ${SERVER_ROUNDS}/${BROWSER_ROUNDS} rounds alternating`,
    )
    console.log(
      `${''.padEnd(34)} ${'10 pending p50'.padStart(10)}  ${'p95'.padStart(8)}   ${'1,000 p50'.padStart(10)} ${'p95'.padStart(8)}   ratio`,
    )
    row('server: GET / to last byte', serverMs)
    const paint = row('browser: first contentful paint', paintMs)
    console.log(
      `target: first render with 1,000 pending under ${TARGET_MS} ms — ${paint < TARGET_MS ? 'met' : 'MISSED'} (${paint.toFixed(0)} ms)`,
    )
    if (paint >= TARGET_MS) process.exitCode = 1
  } finally {
    for (const inbox of inboxes) await inbox.close()
    for (const audit of audits) await audit.close()
    for (const name of names)
      await admin.query(`drop database if exists ${name} with (force)`).catch(() => {})
    await admin.end()
    await server?.stop()
    if (stateDir) await rm(stateDir, { recursive: true, force: true })
  }
}

await main()
