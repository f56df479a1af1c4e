/**
 * The workspace survives its machine: two worker processes that share no disk (each its own workspace
 * root, one task queue). A run's workspace comes from a git repository; worker A does a few steps, is
 * SIGKILLed mid-command and its workspace root is deleted; worker B restores the tree at the last recorded
 * hash, re-runs the interrupted command (or, under noRetry, says its outcome is unknown), and the gate
 * passes — with the snapshots in PostgreSQL, and in a real S3-compatible server (versitygw).
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { Policy } from '../../src/policy/index.js'
import {
  diffTrees,
  type ObjectStore,
  postgresStore,
  runSnapshots,
  s3Store,
} from '../../src/snapshots/index.js'
import { openTestAudit, startRun } from '../support/agent.js'
import { connectClient, uniqueTaskQueue } from '../support/temporal.js'
import { startVersitygw, type Versitygw } from '../support/versitygw.js'
import { workerProcesses } from '../support/worker-processes.js'

const FIXTURE = fileURLToPath(new URL('../../examples/npm-project/', import.meta.url))

let audit: AuditStore
let client: Awaited<ReturnType<typeof connectClient>>
let s3: Versitygw
const workers = workerProcesses()
const folders: string[] = []

beforeAll(async () => {
  audit = await openTestAudit()
  client = await connectClient()
  s3 = await startVersitygw()
}, 900_000)

afterAll(async () => {
  workers.killAll()
  await client?.close()
  await audit?.close()
  await s3?.stop()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
})

/** A folder every sandboxed command can read (not the host's /tmp, which the sandbox replaces). */
function sharedFolder(prefix: string): string {
  const folder = mkdtempSync(join('/var/tmp', prefix))
  chmodSync(folder, 0o755)
  folders.push(folder)
  return folder
}

/**
 * The npm fixture (its one test fails: `add` subtracts) as a git bundle: a repository in one file, which the
 * sandboxed clone reads as any user (git refuses a repository folder that another user owns).
 */
function fixtureRepository(): string {
  const repo = sharedFolder('tether-source-')
  cpSync(FIXTURE, repo, { recursive: true })
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: repo })
  git('init', '--quiet', '--initial-branch=main')
  git('add', '-A')
  git('commit', '--quiet', '-m', 'fixture')
  const bundle = join(sharedFolder('tether-bundle-'), 'fixture.bundle')
  git('bundle', 'create', '--quiet', bundle, '--all')
  chmodSync(bundle, 0o644)
  return bundle
}

/** git in a run's folder under a worker's root (its commands' identity owns it, so it is marked safe). */
function gitIn(root: string, runId: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'safe.directory=*', ...args], {
    cwd: join(root, runId),
    encoding: 'utf8',
  }).trim()
}

type Store = 'postgres' | 's3'

function storeEnv(store: Store): Record<string, string> {
  if (store === 'postgres') return { TETHER_SNAPSHOTS: 'postgres' }
  return {
    TETHER_SNAPSHOTS: `s3://${s3.bucket}/runs`,
    TETHER_S3_ENDPOINT: s3.endpoint,
    AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
    AWS_REGION: 'us-east-1',
  }
}

function objectStore(store: Store): ObjectStore {
  if (store === 'postgres') return postgresStore(audit.pool)
  return s3Store({ bucket: s3.bucket, prefix: 'runs/', endpoint: s3.endpoint, credentials: s3.credentials })
}

const startWorker = (taskQueue: string, env: Record<string, string>) =>
  workers.start(taskQueue, { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env })

// Writes its mark in the workspace, then works for a few seconds: long enough to be killed mid-command.
const SLOW = `require('node:fs').writeFileSync('slow.txt', 'ran'); setTimeout(() => console.log('slow done'), 4000)`

// Side by side, each on a task queue, workers and folders of its own: most of each one's time is Temporal's
// heartbeat timeout after the kill.
describe.concurrent.each([
  { store: 'postgres' as Store, noRetry: [] as string[] },
  { store: 's3' as Store, noRetry: [] as string[] },
  { store: 'postgres' as Store, noRetry: ['node slow.cjs'] },
])('a run whose machine dies ($store, noRetry $noRetry)', ({ store, noRetry }) => {
  it('goes on from the last recorded tree on a worker that never saw its workspace', async ({ expect }) => {
    const taskQueue = uniqueTaskQueue('survive')
    const repo = fixtureRepository()
    const rootA = sharedFolder('tether-root-a-')
    const rootB = sharedFolder('tether-root-b-')
    const script = join(sharedFolder('tether-script-'), 'script.json')
    await writeFile(
      script,
      JSON.stringify({
        turns: [
          { toolCalls: [{ name: 'write_file', args: { path: 'slow.cjs', content: SLOW } }] },
          {
            toolCalls: [
              {
                name: 'write_file',
                args: { path: 'src/math.js', content: 'export function add(a, b) {\n  return a + b\n}\n' },
              },
            ],
          },
          { toolCalls: [{ name: 'exec', args: { argv: ['node', 'slow.cjs'] } }] },
          { text: 'done' },
        ],
      }),
    )
    chmodSync(script, 0o644)
    const policy = Policy.tiered()
      .layer('project')
      .allowExec('npm test*')
      .allowExec('node slow.cjs')
      .allowWrite('*')
    const first = await startWorker(taskQueue, { ...storeEnv(store), TETHER_WORKSPACES: rootA })
    const handle = await startRun(
      client.client,
      taskQueue,
      {
        goal: 'survive the machine',
        source: { git: repo },
        model: `scripted:${script}`,
        verification: { command: ['npm', 'test'] },
        noRetry,
      },
      policy,
    )
    const runId = handle.workflowId
    // Killed once the slow command has started on A: its mark is in A's copy of the workspace (its first
    // attempt is recorded earlier, with the turn that allowed it).
    await expect
      .poll(() => readdirSync(rootA).some((folder) => existsSync(join(rootA, folder, 'slow.txt'))), {
        timeout: 90_000,
        interval: 100,
      })
      .toBe(true)
    first.kill('SIGKILL')
    // The machine's disk goes with it (its sandboxed command may take a moment to die).
    await expect
      .poll(
        () => {
          rmSync(rootA, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
          return existsSync(rootA)
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(false)
    const before = (await runSnapshots(audit.pool, runId)).at(-1)
    expect(before).toMatchObject({ step: 2, kind: 'tool' })

    await startWorker(taskQueue, { ...storeEnv(store), TETHER_WORKSPACES: rootB })
    const result = await handle.result()
    expect(result).toMatchObject({ outcome: 'verified', steps: 4 })

    const rows = await runSnapshots(audit.pool, runId)
    // B restored step 2's tree exactly: nothing was found changed outside the run, and what step 3 added
    // to that tree is the slow command's mark alone (or nothing, when it was not run again).
    expect(rows.filter((row) => row.kind === 'outside-edit')).toEqual([])
    // The move is on record, where a person reading the run sees it: B laid out the recorded tree, once.
    const restores = rows.filter((row) => row.kind === 'restore')
    expect(restores).toEqual([
      expect.objectContaining({ root: before?.root, detail: `on ${hostname()}`, files: before?.files }),
    ])
    const moved = (await audit.runTimeline(runId)).find((entry) => entry.type === 'workspace')
    expect(moved).toMatchObject({ kind: 'restore', step: restores[0]?.step, root: before?.root })
    const step3 = rows.find((row) => row.step === 3 && row.kind === 'tool')
    const gate = rows.find((row) => row.kind === 'gate')
    const commands = await audit.executedCommands({ runId })
    const transcript = JSON.stringify(await audit.loadMessages(runId))
    if (noRetry.length === 0) {
      const changes = await diffTrees(objectStore(store), before?.root as string, step3?.root as string)
      expect(changes.map((c) => [c.change, c.path])).toEqual([['A', 'slow.txt']])
      expect(
        commands.filter((c) => c.step === 3).map((c) => [c.call, c.attempt, c.status, c.exitCode]),
      ).toEqual([[0, 2, 'exited', 0]])
    } else {
      // Not run again: nothing of it is in any tree; the gate ran on step 2's tree, restored as it was.
      expect(step3).toBeUndefined()
      expect(gate?.root).toBe(before?.root)
      expect(transcript).toContain('[exec interrupted]')
    }
    expect(rows.at(-1)).toMatchObject({ kind: 'gate', step: 4, store: objectStore(store).name })
    // The clone B laid out holds the verified tree as a commit on the run's branch, read from the store.
    expect(rows.at(-1)?.detail).toBe(
      `branch tether/${runId} at ${gitIn(rootB, runId, 'rev-parse', `tether/${runId}`)} in ${join(rootB, runId)}`,
    )
    // The gate ran on B's own copy, under B's root.
    expect(commands.find((c) => c.call === -1)).toMatchObject({ status: 'exited', exitCode: 0 })
  })
})
