/**
 * The whole process tree goes, even a grandchild that ignores SIGTERM and holds stdout open — run bare and
 * in the sandbox. Survivors are found from the host by a marker in their environment, so the check holds
 * whatever PID namespace they ran in. Durations go into failure messages; the only bound asserted is a
 * generous guard against hanging.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type ExecResult, type RunCommandOptions, runCommand } from '../../../src/exec/index.js'
import {
  killLeftovers,
  PROBE_ID,
  PROBES_DIR,
  processesWithProbeId,
  recordedPids,
  survivors,
  treeArgv,
  treeStarted,
} from '../../fixtures/exec/probes.js'
import { removeSandboxedFolder } from '../../support/folders.js'

const GRACE_MS = 500
const HANG_GUARD_MS = 10_000

let dir: string
const pidFiles: string[] = []
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-tree-'))
})
const probeIds: string[] = []
// Nothing may outlive a failed test on this shared machine.
afterEach(async () => {
  await killLeftovers(pidFiles)
  for (const id of probeIds.splice(0))
    for (const pid of processesWithProbeId(id)) process.kill(pid, 'SIGKILL')
})
afterAll(() => removeSandboxedFolder(dir))

function pidFile(): string {
  pidFiles.push(join(dir, `pids-${pidFiles.length}`))
  return pidFiles.at(-1)!
}

/** A marked environment for one probe (the sandbox passes only what it is given). */
function marked(): { env: Record<string, string>; id: string } {
  const id = `${process.pid}-${probeIds.length}-${Date.now()}`
  probeIds.push(id)
  return { id, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', [PROBE_ID]: id } }
}

/** Asserts that nothing of the tree is left, printing what is and how long the call took. */
async function expectTreeGone(file: string, id: string, result: ExecResult, within: number): Promise<void> {
  const { child, grandchild } = await recordedPids(file)
  expect(child, 'the probe never started').toBeDefined()
  // Recorded pids name host processes only when the probe ran bare; the marker finds them either way.
  const left = () => [
    ...new Set([
      ...processesWithProbeId(id),
      ...(sandboxed ? [] : survivors(child!, grandchild === undefined ? [] : [grandchild])),
    ]),
  ]
  const timing = `returned after ${result.durationMs} ms (grace ${GRACE_MS} ms)`
  // Killed is not yet reaped: on a loaded machine the kernel may take a moment to tear a sandbox's processes
  // down. A process left behind sleeps for 1,000 s, so a short wait cannot hide one.
  await expect.poll(left, { timeout: 2_000, interval: 50, message: `still running; ${timing}` }).toEqual([])
  expect(result.durationMs, timing).toBeLessThan(within + HANG_GUARD_MS)
}

let sandboxed = false
function run(options: Omit<RunCommandOptions, 'cwd' | 'env'> & { env: Record<string, string> }) {
  return runCommand({
    ...options,
    cwd: dir,
    ...(sandboxed ? { sandbox: { workspace: dir, readOnly: [PROBES_DIR] } } : {}),
  })
}

describe.each(['bare', 'sandboxed'])('killing the tree (%s)', (mode) => {
  beforeAll(() => {
    sandboxed = mode === 'sandboxed'
  })

  it('on timeout, including a grandchild that ignores SIGTERM and holds stdout', async () => {
    const file = pidFile()
    const { id, env } = marked()
    const timeoutMs = 2_000
    const result = await run({
      argv: treeArgv('wait', file),
      env,
      timeoutMs,
      killGraceMs: GRACE_MS,
    })
    expect(result.status).toBe('timed-out')
    // Both lines arrive only once the grandchild ignores SIGTERM, so the SIGKILL path was needed.
    expect(result.stdout.text).toMatch(/^child \d+\ngrandchild \d+\n$|^grandchild \d+\nchild \d+\n$/)
    await expectTreeGone(file, id, result, timeoutMs)
  })

  it('on timeout when the direct child ignores SIGTERM too', async () => {
    const file = pidFile()
    const { id, env } = marked()
    const result = await run({
      argv: treeArgv('stubborn', file),
      env,
      timeoutMs: 2_000,
      killGraceMs: GRACE_MS,
    })
    expect(result).toMatchObject({ status: 'timed-out', signal: 'SIGKILL' })
    await expectTreeGone(file, id, result, 2_000)
  })

  it('on abort', async () => {
    const file = pidFile()
    const { id, env } = marked()
    const controller = new AbortController()
    const running = run({
      argv: treeArgv('wait', file),
      env,
      signal: controller.signal,
      killGraceMs: GRACE_MS,
    })
    await treeStarted(file)
    const abortedAt = Date.now()
    controller.abort()
    const result = await running
    expect(result.status).toBe('cancelled')
    expect(result.stdout.text).toContain('grandchild')
    await expectTreeGone(file, id, result, Date.now() - abortedAt)
  })

  it('when the child exits while a grandchild still holds stdout open', async () => {
    const file = pidFile()
    const { id, env } = marked()
    const result = await run({ argv: treeArgv('exit', file), env, killGraceMs: GRACE_MS })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.stdout.text).toContain('grandchild')
    await expectTreeGone(file, id, result, 0)
  })

  it('when the child exits leaving a background process that holds no pipe', async () => {
    const file = pidFile()
    const { id, env } = marked()
    const result = await run({ argv: treeArgv('detach', file), env, killGraceMs: GRACE_MS })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    await treeStarted(file)
    await expectTreeGone(file, id, result, 0)
  })

  it('including a descendant that moved to a session of its own', async () => {
    const file = pidFile()
    const { id, env } = marked()
    const script = `setsid sh -c 'trap "" TERM; echo "grandchild $$" >> "$1"; exec sleep 1000' escapee "${file}" & echo "child $$" >> "${file}"; wait`
    const result = await run({
      argv: ['/bin/sh', '-c', script],
      env,
      timeoutMs: 2_000,
      killGraceMs: GRACE_MS,
    })
    expect(result.status).toBe('timed-out')
    await expectTreeGone(file, id, result, 2_000)
  })
})
