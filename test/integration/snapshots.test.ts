/**
 * Workspace snapshots against the real PostgreSQL store, through real runs: rewind to a step, what is never
 * stored (secrets the policy hides), what is rebuilt rather than stored (caches), outside edits reported,
 * retention that never collects what another run references, and the verified tree as a git branch.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { stripVTControlCharacters } from 'node:util'
import { ApplicationFailure, type Client, WorkflowFailedError } from '@temporalio/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AuditStore, TimelineEntry } from '../../src/audit/index.js'
import { entryLine } from '../../src/cli/timeline.js'
import { checkoutRun, rewindRun, s3Store } from '../../src/embed/index.js'
import { Policy } from '../../src/policy/index.js'
import {
  collectSnapshots,
  decodeTree,
  postgresStore,
  readTree,
  runLinks,
  runSnapshots,
  treeAtStep,
  treePatch,
  WorkspaceSnapshots,
} from '../../src/snapshots/index.js'
import { pendingApprovalsQuery } from '../../src/workflows/index.js'
import { approveTheAsk, openTestAudit, startAgentWorker, startScriptedRun } from '../support/agent.js'
import { connectClient } from '../support/temporal.js'

let audit: AuditStore
let client: Client
let taskQueue: string
let closeClient: () => Promise<void>
let stopWorker: () => Promise<void>
const roots: string[] = []
// Where an operator would put them (TETHER_WORKSPACES): a folder commands' private /tmp would not cover.
const workspaces = mkdtempSync(join('/var/tmp', 'tether-workspaces-'))

beforeAll(async () => {
  audit = await openTestAudit()
  const connected = await connectClient()
  client = connected.client
  closeClient = connected.close
  const worker = await startAgentWorker(audit, {
    snapshots: { store: postgresStore(audit.pool), workspaces },
  })
  taskQueue = worker.taskQueue
  stopWorker = worker.stop
})

afterAll(async () => {
  await stopWorker?.()
  await closeClient?.()
  await audit?.close()
  for (const root of [...roots, workspaces]) rmSync(root, { recursive: true, force: true })
})

const write = (path: string, content: string) => ({ name: 'write_file', args: { path, content } })
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })
const policy = () =>
  Policy.tiered().layer('project').allowWrite('*').allowExec('npm install').allowExec('node *')

async function run(turns: unknown[], options: Parameters<typeof startScriptedRun>[2] = {}) {
  const started = await startScriptedRun({ client, taskQueue }, turns, { policy: policy(), ...options })
  roots.push(started.ws.path)
  return started
}

/** A policy whose unmatched commands (`touch`) are asked of alice, who answers unsigned. */
const approving = (project = Policy.tiered().layer('project').allowWrite('*')) =>
  Policy.fromSpec({ ...project.toSpec(), identity: 'unsigned', approvers: ['alice'] })

/** A collection now; a worker may be collecting on its own just now (it holds the lock): then it waits its turn. */
async function collectNow() {
  const store = postgresStore(audit.pool)
  let report = await collectSnapshots(audit.pool, store, { retentionDays: 30 })
  for (let tries = 0; !report.ran && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    report = await collectSnapshots(audit.pool, store, { retentionDays: 30 })
  }
  expect(report.ran).toBe(true)
}

describe('rewind', () => {
  it("starts a new linked run from step 2's tree and transcript", async () => {
    const { handle } = await run([
      { toolCalls: [write('one.txt', '1')] },
      { toolCalls: [write('two.txt', '2')] },
      { toolCalls: [write('three.txt', '3')] },
      { toolCalls: [write('four.txt', '4')] },
      { toolCalls: [write('five.txt', '5')] },
      { text: 'done' },
    ])
    expect(await handle.result()).toMatchObject({ outcome: 'finished', steps: 6 })
    const earlier = handle.workflowId
    const rows = await runSnapshots(audit.pool, earlier)
    const step2 = rows.filter((r) => r.step <= 2).at(-1)
    expect(step2).toMatchObject({ step: 2, kind: 'tool' })
    expect(await treeAtStep(audit.pool, earlier, 2)).toEqual(step2)
    // Without a step: the last tree the run recorded (its gate's, or its last tool's).
    expect(await treeAtStep(audit.pool, earlier)).toEqual(rows.at(-1))

    const rewound = await rewindRun(client, audit, {
      run: earlier,
      toStep: 2,
      taskQueue,
      // Stricter: one more deny. The run's policy stays under it.
      policy: Policy.tiered().layer('review').denyExec('curl*'),
    })
    // The script plays on from its third turn: the transcript carried two replies.
    expect(await rewound.result()).toMatchObject({ outcome: 'finished', steps: 4 })
    const later = rewound.workflowId
    const [start] = await runSnapshots(audit.pool, later)
    expect(start).toMatchObject({ step: 0, kind: 'start', root: step2?.root })

    const before = (await audit.loadMessages(earlier)).map((m) => m.content)
    const after = (await audit.loadMessages(later)).map((m) => m.content)
    // Goal, two replies, two results: carried as they were; then the new run's own.
    expect(after.slice(0, 5)).toEqual(before.slice(0, 5))
    expect(JSON.stringify(after[5])).toContain('three.txt')

    expect(await runLinks(audit.pool, later)).toEqual({ from: { runId: earlier, step: 2 }, into: [] })
    expect(await runLinks(audit.pool, earlier)).toEqual({ into: [{ runId: later, step: 2 }] })
    const config = await audit.runConfig(later)
    const layers = ((config?.policy ?? { layers: [] }) as { layers: Array<{ name: string }> }).layers.map(
      (l) => l.name,
    )
    expect(layers).toEqual(expect.arrayContaining(['project', 'review']))
    // The earlier run's audit is untouched.
    expect(await runSnapshots(audit.pool, earlier)).toEqual(rows)

    // The rewound run's folder is the worker's: its result, and its first tree, come out of the store.
    const out = mkdtempSync(join(tmpdir(), 'tether-checkout-'))
    const last = await checkoutRun(audit, postgresStore(audit.pool), { run: later, into: join(out, 'last') })
    expect(last.tree.runId).toBe(later)
    expect(last.files).toBe(last.tree.files)
    // Nothing in it would make git run a program (cli.test.ts lays out a tree with such a file).
    expect(last.plantedGit).toEqual([])
    expect(await readFile(join(out, 'last', 'five.txt'), 'utf8')).toBe('5')
    const first = await checkoutRun(audit, postgresStore(audit.pool), {
      run: later,
      step: 0,
      into: join(out, 'first'),
    })
    expect(first.tree.root).toBe(step2?.root)
    expect(existsSync(join(out, 'first', 'two.txt'))).toBe(true)
    expect(existsSync(join(out, 'first', 'three.txt'))).toBe(false)
    // Another store than the run's is refused before anything is fetched.
    await expect(
      checkoutRun(audit, s3Store({ bucket: 'elsewhere', prefix: '' }), {
        run: later,
        into: join(out, 'other'),
      }),
    ).rejects.toThrow(`the snapshots of run ${later} are in postgres, but the store given is s3://elsewhere/`)
    expect(existsSync(join(out, 'other'))).toBe(false)
    rmSync(out, { recursive: true, force: true })
  })
})

describe("the folder the worker lays runs' workspaces out in", () => {
  it("is hidden from other runs' commands, and no run may name it, or a folder in it, as its workspace", async () => {
    // As a source run's folder is there: the worker's copy of its tree, readable by all as a clone's files
    // are, in a folder an operator made (not mkdtemp's 0700, which a root worker's commands cannot enter).
    const theirs = join(workspaces, 'another-run')
    mkdirSync(theirs, { recursive: true })
    writeFileSync(join(theirs, 'private.txt'), 'theirs\n')
    chmodSync(workspaces, 0o755)
    const { handle } = await run(
      [
        { toolCalls: [exec('ls', '-A', workspaces), exec('cat', join(theirs, 'private.txt'))] },
        { text: 'done' },
      ],
      { policy: policy().allowExec('ls *').allowExec('cat *') },
    )
    expect(await handle.result()).toMatchObject({ outcome: 'finished' })
    const [ls, cat] = await audit.executedCommands({ runId: handle.workflowId })
    expect(ls).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(ls?.stdout.text).toBe('')
    expect(cat?.exitCode).not.toBe(0)
    expect(cat?.stdout.text).toBe('')

    for (const [workspace, relation] of [
      [theirs, 'lies in'],
      [workspaces, 'is'],
      [dirname(workspaces), 'holds'],
    ] as const) {
      const refused = await run([{ text: 'done' }], { contract: { workspace, verification: null } })
      const error = await refused.handle.result().catch((e: unknown) => e as WorkflowFailedError)
      expect(error).toBeInstanceOf(WorkflowFailedError)
      const cause = (error as WorkflowFailedError).cause as ApplicationFailure
      expect(cause).toBeInstanceOf(ApplicationFailure)
      expect(cause.type).toBe('ContractRejected')
      expect(cause.message).toContain(`the workspace ${workspace} ${relation} `)
    }
  })
})

describe('a source that cannot be laid out', () => {
  it('fails the run at once, its start recorded and the cause named', async () => {
    const missing = join(workspaces, 'no-such-repository')
    const { handle } = await run([{ text: 'done' }], {
      contract: { workspace: undefined, source: { git: missing } },
    })
    const failure = await handle.result().then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(failure).toBeInstanceOf(WorkflowFailedError)
    const summary = await audit.runSummary(handle.workflowId)
    expect(summary).toMatchObject({ outcome: 'failed' })
    expect(summary?.reason).toContain(missing)
    // git's "does not exist" says nothing of the sandbox it ran in: the reason says what to do.
    expect(summary?.reason).toContain('git bundle create')
    // Whole, to its last words, however long the path: git's own words come after it.
    expect(summary?.reason).toContain(
      "the worker floor's `sandbox: { readOnly: [...] }` lists; git said: fatal:",
    )
    // One activity records the start and lays out the workspace; a clone that cannot succeed is not retried.
    const events = (await handle.fetchHistory()).events ?? []
    const begin = events.find(
      (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'tetherBeginRun',
    )
    const attempts = events.filter(
      (event) =>
        Number(event.activityTaskStartedEventAttributes?.scheduledEventId) === Number(begin?.eventId),
    )
    expect(attempts.map((event) => event.activityTaskStartedEventAttributes?.attempt)).toEqual([1])
    expect(await runSnapshots(audit.pool, handle.workflowId)).toEqual([])
  }, 60_000)
})

describe('what is not state', () => {
  it('never stores a file the policy hides from reads', async () => {
    const secret = `SECRET-${Math.random().toString(36).slice(2)}`
    const { handle } = await run([{ toolCalls: [write('notes.txt', 'fine')] }, { text: 'done' }], {
      files: { '.env': `TOKEN=${secret}\n` },
    })
    expect(await handle.result()).toMatchObject({ outcome: 'finished' })
    const rows = await runSnapshots(audit.pool, handle.workflowId)
    expect(rows.length).toBeGreaterThanOrEqual(2)
    const store = postgresStore(audit.pool)
    for (const row of rows) expect((await readTree(store, row.root)).map((p) => p.rel)).not.toContain('.env')
    const last = rows.at(-1) as (typeof rows)[number]
    expect((await readTree(store, last.root)).map((p) => p.rel)).toContain('notes.txt')
    const { rows: leaked } = await audit.pool.query(
      `select count(*)::int as n from snapshot_objects where position(convert_to($1, 'UTF8') in data) > 0`,
      [secret],
    )
    expect(leaked[0].n).toBe(0)
  })

  it("keeps what the policy's sandbox hides in the workspace from the file tools and the store too", async () => {
    const secret = `HIDDEN-${Math.random().toString(36).slice(2)}`
    const workspace = mkdtempSync(join(tmpdir(), 'tether-hides-'))
    roots.push(workspace)
    mkdirSync(join(workspace, 'private'))
    writeFileSync(join(workspace, 'private', 'notes.txt'), `${secret}\n`)
    // Named through a link, as hidden paths are found under every name.
    symlinkSync(join(workspace, 'private'), join(workspace, 'also-private'))
    const { handle } = await run(
      [
        {
          toolCalls: [
            { name: 'read_file', args: { path: 'private/notes.txt' } },
            { name: 'read_file', args: { path: 'also-private/notes.txt' } },
            { name: 'search', args: { pattern: 'HIDDEN-' } },
            write('private/planted.txt', 'x'),
            write('notes.txt', 'fine'),
            { name: 'list_dir', args: { path: '.' } },
          ],
        },
        { text: 'done' },
      ],
      {
        contract: { workspace, verification: null },
        policy: policy().withSandbox({ mode: 'enforce', hide: [join(workspace, 'private')] }),
      },
    )
    expect(await handle.result()).toMatchObject({ outcome: 'finished' })
    const results = (await audit.loadMessages(handle.workflowId))
      .flatMap((m) => (m.content as { results?: Array<{ output: string }> }).results ?? [])
      .map((r) => r.output)
    expect(results.slice(0, 4)).toEqual([
      "refused: [read refused] private/notes.txt: hidden from the run by the sandbox's `hide` (the policy's or the worker's)",
      "refused: [read refused] private/notes.txt: hidden from the run by the sandbox's `hide` (the policy's or the worker's)",
      expect.not.stringContaining(secret),
      "refused: [write refused] private/planted.txt: hidden from the run by the sandbox's `hide` (the policy's or the worker's)",
    ])
    // Its name shows in a listing, as it does to a command; not its kind or size.
    expect(results[5]).toContain('private (hidden from the run)')
    expect(results[5]).not.toContain('private/')
    expect(existsSync(join(workspace, 'private', 'planted.txt'))).toBe(false)
    const store = postgresStore(audit.pool)
    const rows = await runSnapshots(audit.pool, handle.workflowId)
    for (const row of rows) {
      const rels = (await readTree(store, row.root)).map((p) => p.rel)
      expect(rels.filter((rel) => rel.startsWith('private'))).toEqual([])
    }
    expect((await readTree(store, (rows.at(-1) as (typeof rows)[number]).root)).map((p) => p.rel)).toContain(
      'notes.txt',
    )
    const { rows: leaked } = await audit.pool.query(
      `select count(*)::int as n from snapshot_objects where position(convert_to($1, 'UTF8') in data) > 0`,
      [secret],
    )
    expect(leaked[0].n).toBe(0)
  })

  /** Three steps that install a local dependency into node_modules (a cache), and a project that uses it. */
  const installing = [
    {
      toolCalls: [
        write('dep/package.json', JSON.stringify({ name: 'dep', version: '1.0.0', main: 'index.js' })),
      ],
    },
    { toolCalls: [write('dep/index.js', "module.exports = 'from the dependency'\n")] },
    { toolCalls: [exec('npm', 'install')] },
  ]
  const usingDep = {
    'package.json': JSON.stringify({ name: 'cached', version: '1.0.0', dependencies: { dep: 'file:./dep' } }),
    'uses-dep.cjs': "console.log(require('dep'))\n",
  }

  it('leaves a cache out and rebuilds it with the toolchain install on a worker that restores the tree', async () => {
    const { ws, handle } = await run(
      [...installing, { toolCalls: [exec('node', 'uses-dep.cjs')] }, { text: 'done' }],
      { files: usingDep },
    )
    expect(await handle.result()).toMatchObject({ outcome: 'finished' })
    expect(existsSync(join(ws.path, 'node_modules/dep'))).toBe(true)
    const rows = await runSnapshots(audit.pool, handle.workflowId)
    const afterInstall = rows.find((r) => r.step === 3 && r.kind === 'tool')
    const names = (await readTree(postgresStore(audit.pool), afterInstall?.root as string)).map((p) => p.rel)
    expect(names).toContain('package-lock.json')
    expect(names.some((name) => name.startsWith('node_modules'))).toBe(false)

    // A new run from step 3's tree lands in a folder of this worker's own, restored without node_modules:
    // its first command finds the cache rebuilt by `npm install`.
    const rewound = await rewindRun(client, audit, { run: handle.workflowId, toStep: 3, taskQueue })
    expect(await rewound.result()).toMatchObject({ outcome: 'finished' })
    const commands = await audit.executedCommands({ runId: rewound.workflowId })
    const byCall = [...commands].sort((a, b) => a.call - b.call)
    expect(byCall.map((c) => [c.call, c.argv.join(' '), c.status, c.exitCode])).toEqual([
      [-2, 'npm install', 'exited', 0],
      [0, 'node uses-dep.cjs', 'exited', 0],
    ])
    expect(byCall[1]?.stdout.text).toContain('from the dependency')
  })

  it('rebuilds the caches of a tree restored before its worker restarted, on the worker after it', async () => {
    const project = policy()
    const { handle } = await run(
      [
        ...installing,
        { toolCalls: [{ name: 'read_file', args: { path: 'uses-dep.cjs' } }] },
        { toolCalls: [exec('touch', 'approved')] },
        { toolCalls: [exec('node', 'uses-dep.cjs')] },
        { text: 'done' },
      ],
      { files: usingDep, policy: approving(project) },
    )
    await approveTheAsk(handle)
    expect(await handle.result()).toMatchObject({ outcome: 'finished' })

    // The new run's tree is restored (without node_modules) by a worker that then reads a file and waits
    // for an answer; it stops, and another on the same machine (the same folder of workspaces) goes on.
    const own = mkdtempSync(join(tmpdir(), 'tether-workspaces-'))
    roots.push(own)
    const first = await startAgentWorker(audit, {
      snapshots: { store: postgresStore(audit.pool), workspaces: own },
    })
    const rewound = await rewindRun(client, audit, {
      run: handle.workflowId,
      toStep: 3,
      taskQueue: first.taskQueue,
    })
    await expect
      .poll(async () => (await rewound.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
      .toBe(1)
    await first.stop()
    const second = await startAgentWorker(audit, {
      taskQueue: first.taskQueue,
      snapshots: { store: postgresStore(audit.pool), workspaces: own },
    })
    try {
      await approveTheAsk(rewound)
      expect(await rewound.result()).toMatchObject({ outcome: 'finished' })
    } finally {
      await second.stop()
    }
    const commands = await audit.executedCommands({ runId: rewound.workflowId })
    const ran = [...commands].sort((a, b) => a.step - b.step || a.call - b.call)
    expect(ran.map((c) => [c.call, c.argv.join(' '), c.status, c.exitCode])).toEqual([
      [-2, 'npm install', 'exited', 0],
      [0, 'touch approved', 'exited', 0],
      [0, 'node uses-dep.cjs', 'exited', 0],
    ])
    expect(ran[2]?.stdout.text).toContain('from the dependency')
  })
})

/**
 * A run that wrote `mine.txt` and ran `true` at step 1 (its first command: on a root worker, the folder is
 * its commands' identity's from then on), and waits for an answer to `touch asked.txt` (or `asked`) at step 2.
 */
async function waitingAtStep2(asked = ['touch', 'asked.txt']) {
  const started = await run(
    [
      { toolCalls: [write('mine.txt', 'by the run'), exec('true')] },
      { toolCalls: [exec(...asked)] },
      { text: 'done' },
    ],
    { policy: approving(Policy.tiered().layer('project').allowWrite('*').allowExec('true')) },
  )
  await expect
    .poll(async () => (await started.handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
    .toBe(1)
  return started
}

/** Step 2's timeline entries, its workspace entry after the answer and before the command it preceded. */
async function step2WithWorkspaceEntry(runId: string): Promise<TimelineEntry[]> {
  const steps = (await audit.runTimeline(runId)).filter((entry) => entry.step === 2)
  const types = steps.map((entry) => entry.type)
  expect(types.indexOf('approval')).toBeLessThan(types.indexOf('workspace'))
  expect(types.indexOf('workspace')).toBeLessThan(types.indexOf('exec'))
  return steps
}

describe('an outside edit', () => {
  it('is recorded and told to the model, not used silently', async () => {
    // While the run waits for a person, someone edits its workspace — as root, on a root worker: the approved
    // command, run as the commands' identity, writes into the folder they made and the file they replaced.
    const { ws, handle } = await waitingAtStep2(['touch', 'asked.txt', 'extra/inside.txt', 'mine.txt'])
    rmSync(join(ws.path, 'mine.txt'))
    writeFileSync(join(ws.path, 'mine.txt'), 'edited by hand')
    mkdirSync(join(ws.path, 'extra'))
    await approveTheAsk(handle)
    expect(await handle.result()).toMatchObject({ outcome: 'finished' })
    const rows = await runSnapshots(audit.pool, handle.workflowId)
    const edit = rows.find((r) => r.kind === 'outside-edit')
    expect(edit).toMatchObject({ step: 2, call: 0, detail: 'A extra, M mine.txt' })
    // The observation of step 2's command (the last tool results before the model's answer).
    const results = (await audit.loadMessages(handle.workflowId)).filter((message) => message.role === 'tool')
    const observation = JSON.stringify(results.at(-1)?.content)
    expect(observation).toContain('[workspace] changed outside the run')
    expect(observation).toContain('M mine.txt')
    expect(await readFile(join(ws.path, 'mine.txt'), 'utf8')).toBe('edited by hand')
    const touched = (await audit.executedCommands({ runId: handle.workflowId })).find((c) => c.step === 2)
    expect(touched, touched?.stderr.text).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(existsSync(join(ws.path, 'extra/inside.txt'))).toBe(true)
    // A person reading the run (tether show, --follow, the inbox) sees it in its place: after the answer,
    // before the command it was found before.
    const steps = await step2WithWorkspaceEntry(handle.workflowId)
    const found = steps.find((entry) => entry.type === 'workspace')
    expect(found).toMatchObject({ call: 0, root: edit?.root, detail: 'A extra, M mine.txt' })
    expect(stripVTControlCharacters(entryLine(found as TimelineEntry))).toBe(
      `  changed   outside the run (or by an attempt cut off): A extra, M mine.txt  — recorded as tree ${edit?.root.slice(0, 12)} and told to the model`,
    )
  })
})

describe('a workspace lost while its run waits', () => {
  it('is restored from the store by the call that needs it, and the restore is on record in its place', async () => {
    const { ws, handle } = await waitingAtStep2()
    // The disk goes while a person thinks: the approved command's own check finds the folder missing.
    rmSync(ws.path, { recursive: true, force: true })
    await approveTheAsk(handle)
    expect(await handle.result()).toMatchObject({ outcome: 'finished' })
    expect(await readFile(join(ws.path, 'mine.txt'), 'utf8')).toBe('by the run')
    expect(existsSync(join(ws.path, 'asked.txt'))).toBe(true)
    const rows = await runSnapshots(audit.pool, handle.workflowId)
    const lost = rows.find((r) => r.step === 1 && r.kind === 'tool')
    expect(rows.filter((r) => r.kind === 'restore')).toEqual([
      expect.objectContaining({
        step: 2,
        call: 0,
        root: lost?.root,
        detail: `on ${hostname()}`,
        newBytes: 0,
      }),
    ])
    expect(rows.filter((r) => r.kind === 'outside-edit')).toEqual([])
    const steps = await step2WithWorkspaceEntry(handle.workflowId)
    const restored = steps.find((entry) => entry.type === 'workspace') as TimelineEntry
    expect(stripVTControlCharacters(entryLine(restored))).toMatch(
      new RegExp(
        `^ {2}restored {2}the workspace on ${hostname()} {2}from the snapshot store: tree ${lost?.root.slice(0, 12)}, \\d+ files?, [\\d.]+ (B|KiB), its hash checked$`,
      ),
    )
  })
})

/** A run's row and nothing else, a folder of its own and snapshots to take of it: for the store alone. */
async function bareRun(name: string) {
  const runId = `${name}-${Math.random().toString(36).slice(2)}`
  await audit.pool.query(
    `insert into runs (run_id, goal, workspace, contract, policy, started_at) values ($1, 'g', '/w', '{}', '{}', now())`,
    [runId],
  )
  const root = mkdtempSync(join(tmpdir(), `tether-${name}-`))
  roots.push(root)
  return { snapshots: new WorkspaceSnapshots(postgresStore(audit.pool), audit.pool), runId, root }
}

describe('a large folder', () => {
  it('grows the store by the changed file and a page, not the whole listing, and restores and diffs whole', async () => {
    const { snapshots, runId, root } = await bareRun('paged')
    const salt = Math.random().toString(36)
    for (let i = 0; i < 400; i++) writeFileSync(join(root, `file-${i}.txt`), `${salt} ${i}`)
    const exclusion = { key: 'none', excluded: () => false }
    const first = await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, exclusion)
    const changed = `${salt} changed`.repeat(100)
    writeFileSync(join(root, 'file-123.txt'), changed)
    const second = await snapshots.take({ runId, step: 1, call: 0, kind: 'tool' }, root, exclusion)
    // One listing of 400 entries is about 40 KB; its page and the list of pages are a few.
    expect(second.row.newBytes - changed.length).toBeGreaterThan(0)
    expect(second.row.newBytes - changed.length).toBeLessThan(5_000)
    expect(await snapshots.diff(first.root, second.root)).toEqual([
      expect.objectContaining({ change: 'M', path: 'file-123.txt' }),
    ])
    const parent = mkdtempSync(join(tmpdir(), 'tether-paged-restore-'))
    roots.push(parent)
    const into = join(parent, 'ws')
    await snapshots.restore(second.root, into, exclusion)
    expect(await readFile(join(into, 'file-123.txt'), 'utf8')).toBe(changed)
    expect(await readFile(join(into, 'file-399.txt'), 'utf8')).toBe(`${salt} 399`)
    // Its pages are part of the tree: retention keeps them while the run is kept, however old they are.
    const pages: string[] = []
    await readTree(postgresStore(audit.pool), second.root, (page) => pages.push(page))
    expect(pages.length).toBeGreaterThan(1)
    await audit.pool.query(
      `update snapshot_objects set created_at = now() - interval '45 days' where hash = any($1)`,
      [pages],
    )
    await collectNow()
    expect(await snapshots.store.missing(pages)).toEqual([])
  })
})

describe('a patch between two trees', () => {
  it('shows each changed text file as a unified diff, and says why where it shows none', async () => {
    const { snapshots, runId, root } = await bareRun('patch')
    const { store } = snapshots
    const salt = Math.random().toString(36)
    writeFileSync(join(root, 'keep.txt'), `${salt}\n`)
    writeFileSync(join(root, 'edit.txt'), 'one\ntwo\nthree\n')
    writeFileSync(join(root, 'gone.txt'), 'bye\n')
    writeFileSync(join(root, 'bin.dat'), Buffer.from([1, 0, 2]))
    writeFileSync(join(root, 'run.sh'), 'true\n', { mode: 0o644 })
    symlinkSync('keep.txt', join(root, 'link'))
    const exclusion = { key: 'none', excluded: () => false }
    const first = await snapshots.take({ runId, step: 0, call: 0, kind: 'start' }, root, exclusion)
    writeFileSync(join(root, 'edit.txt'), 'one\n2\nthree\n')
    rmSync(join(root, 'gone.txt'))
    writeFileSync(join(root, 'new.txt'), 'hello\n')
    writeFileSync(join(root, 'bin.dat'), Buffer.from([1, 0, 3]))
    chmodSync(join(root, 'run.sh'), 0o755)
    rmSync(join(root, 'link'))
    symlinkSync('edit.txt', join(root, 'link'))
    writeFileSync(join(root, 'big.txt'), 'x'.repeat(300 * 1024))
    const second = await snapshots.take({ runId, step: 1, call: 0, kind: 'tool' }, root, exclusion)

    const patch = await treePatch(store, first.root, second.root)
    expect(patch.elided).toBe(0)
    expect(patch.files).toEqual([
      { change: 'A', path: 'big.txt', text: 'large file (307200 bytes now): not shown' },
      {
        change: 'M',
        path: 'bin.dat',
        text: 'binary or not UTF-8 (3 bytes before, 3 bytes now): not shown',
      },
      {
        change: 'M',
        path: 'edit.txt',
        text: ['--- a/edit.txt', '+++ b/edit.txt', '@@ -1,3 +1,3 @@', ' one', '-two', '+2', ' three'].join(
          '\n',
        ),
      },
      {
        change: 'D',
        path: 'gone.txt',
        text: ['--- a/gone.txt', '+++ /dev/null', '@@ -1,1 +0,0 @@', '-bye'].join('\n'),
      },
      { change: 'M', path: 'link', text: 'link: keep.txt → edit.txt' },
      {
        change: 'A',
        path: 'new.txt',
        text: ['--- /dev/null', '+++ b/new.txt', '@@ -0,0 +1,1 @@', '+hello'].join('\n'),
      },
      { change: 'P', path: 'run.sh', text: 'mode 0644 → 0755' },
    ])
  })
})

describe('retention', () => {
  it('collects what only an expired run referenced, never what a retained run still does', async () => {
    const store = postgresStore(audit.pool)
    const snapshots = new WorkspaceSnapshots(store, audit.pool)
    const shared = `shared ${Math.random()}`
    const only = `only the old run ${Math.random()}`
    const folder = (files: Record<string, string>) => {
      const root = mkdtempSync(join(tmpdir(), 'tether-retention-'))
      roots.push(root)
      for (const [name, content] of Object.entries(files)) writeFileSync(join(root, name), content)
      return root
    }
    const runRow = async (runId: string, finishedDaysAgo: number | null) => {
      const started = new Date(Date.now() - 50 * 86_400_000)
      const finished = finishedDaysAgo === null ? null : new Date(Date.now() - finishedDaysAgo * 86_400_000)
      await audit.pool.query(
        `insert into runs (run_id, goal, workspace, contract, policy, started_at, status, finished_at)
         values ($1, 'g', '/w', '{}', '{}', $2, $3, $4)`,
        [runId, started, finished ? 'finished' : 'running', finished],
      )
    }
    const old = `retention-old-${Math.random().toString(36).slice(2)}`
    const live = `retention-live-${Math.random().toString(36).slice(2)}`
    await runRow(old, 40)
    await runRow(live, null)
    const exclusion = { key: 'none', excluded: () => false }
    const a = await snapshots.take(
      { runId: old, step: 0, call: 0, kind: 'start' },
      folder({ s: shared, o: only }),
      exclusion,
    )
    const b = await snapshots.take(
      { runId: live, step: 0, call: 0, kind: 'start' },
      folder({ s: shared }),
      exclusion,
    )
    const hashes = Object.fromEntries(
      decodeTree((await store.get([a.root])).get(a.root) as Buffer).map((e) => [e.name, e.hash]),
    )
    const [sharedHash, onlyHash] = [hashes.s as string, hashes.o as string]
    // Old enough to be collected: written long ago (other tests' objects stay young, out of reach).
    await audit.pool.query(
      `update snapshot_objects set created_at = now() - interval '45 days' where hash = any($1)`,
      [[a.root, b.root, sharedHash, onlyHash]],
    )
    await collectNow()
    expect(await store.missing([a.root, onlyHash, b.root, sharedHash])).toEqual([a.root, onlyHash])
    const [oldRow] = await runSnapshots(audit.pool, old)
    expect(oldRow?.collectedAt).toBeInstanceOf(Date)
    const [liveRow] = await runSnapshots(audit.pool, live)
    expect(liveRow?.collectedAt).toBeUndefined()
  })
})

describe('a branch as the output', () => {
  // The worker wrote these objects itself; git as root reads a folder the commands' identity may own.
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', ['-c', 'safe.directory=*', ...args], { cwd, encoding: 'utf8' }).trim()

  it('makes the verified tree a commit on tether/<run id>, with the goal, outcome and approvers, and no secret or cache', async () => {
    const secret = `SECRET-${Math.random().toString(36).slice(2)}`
    const { ws, handle } = await run(
      [
        { toolCalls: [write('src/made.txt', 'by the run')] },
        { toolCalls: [exec('touch', 'asked.txt')] },
        { text: 'done' },
      ],
      {
        policy: approving(Policy.tiered().layer('project').allowWrite('*').allowExec('true')),
        contract: { goal: 'Make a file\n\nand keep it', verification: { command: ['true'] } },
        files: { '.env': `TOKEN=${secret}\n` },
        prepare: (path) => {
          mkdirSync(join(path, 'node_modules', 'dep'), { recursive: true })
          writeFileSync(join(path, 'node_modules', 'dep', 'index.js'), 'cached')
          git(path, 'init', '--quiet', '--initial-branch=main')
          git(path, 'add', 'package.json')
          git(path, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '--quiet', '-m', 'fixture')
        },
      },
    )
    const head = git(ws.path, 'rev-parse', 'HEAD')
    await approveTheAsk(handle)
    expect(await handle.result()).toMatchObject({ outcome: 'verified' })
    const runId = handle.workflowId
    const gate = (await runSnapshots(audit.pool, runId)).find((r) => r.kind === 'gate')
    const branch = `tether/${runId}`
    const commit = git(ws.path, 'rev-parse', '--verify', branch)
    expect(gate?.detail).toBe(`branch ${branch} at ${commit} in ${ws.path}`)
    // `tether show` names it.
    expect((await runLinks(audit.pool, runId)).branch).toBe(gate?.detail)
    // A sound commit on the repository's HEAD, which itself did not move.
    git(ws.path, 'fsck', '--strict', '--no-dangling')
    expect(git(ws.path, 'rev-parse', 'HEAD')).toBe(head)
    expect(git(ws.path, 'rev-parse', `${branch}^`)).toBe(head)
    const files = git(ws.path, 'ls-tree', '-r', '--name-only', branch).split('\n')
    expect(files).toEqual(expect.arrayContaining(['package.json', 'src/made.txt', 'asked.txt']))
    expect(
      files.filter((f) => f === '.env' || f.startsWith('node_modules/') || f.startsWith('.git/')),
    ).toEqual([])
    expect(git(ws.path, 'show', `${branch}:src/made.txt`)).toBe('by the run')
    expect(git(ws.path, 'log', '-1', '--format=%s', branch)).toBe('Make a file')
    const trailers = git(ws.path, 'log', '-1', '--format=%(trailers:only)', branch)
    expect(trailers).toBe(`Tether-Run: ${runId}\nTether-Tree: ${gate?.root}\nApproved-by: alice`)
    expect(git(ws.path, 'log', '-1', '--format=%b', branch)).toContain('Outcome: verified')
  })

  it('is not written when the contract says branch: false', async () => {
    const { ws, handle } = await run([{ text: 'done' }], {
      contract: { branch: false, verification: { command: ['true'] } },
      policy: Policy.tiered().layer('project').allowExec('true'),
      prepare: (path) => git(path, 'init', '--quiet', '--initial-branch=main'),
    })
    expect(await handle.result()).toMatchObject({ outcome: 'verified' })
    expect(git(ws.path, 'for-each-ref', '--format=%(refname)')).toBe('')
    expect((await runLinks(audit.pool, handle.workflowId)).branch).toBeUndefined()
  })
})
