/**
 * The whole process tree goes, even a grandchild that ignores SIGTERM and holds stdout open. Durations go
 * into failure messages; the only bound asserted is a generous guard against hanging.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { type ExecResult, runCommand } from '../../../src/exec/index.js'
import { killLeftovers, recordedPids, survivors, treeArgv, treeStarted } from '../../fixtures/exec/probes.js'

const GRACE_MS = 500
const HANG_GUARD_MS = 10_000

let dir: string
const pidFiles: string[] = []
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-tree-'))
})
// Nothing may outlive a failed test on this shared machine.
afterEach(() => killLeftovers(pidFiles))
afterAll(() => rm(dir, { recursive: true, force: true }))

function pidFile(): string {
  pidFiles.push(join(dir, `pids-${pidFiles.length}`))
  return pidFiles.at(-1)!
}

/** Asserts that nothing of the tree is left, printing what is and how long the call took. */
async function expectTreeGone(file: string, result: ExecResult, within: number): Promise<void> {
  const { child, grandchild } = await recordedPids(file)
  expect(child, 'the probe never started').toBeDefined()
  const left = survivors(child!, grandchild === undefined ? [] : [grandchild])
  const timing = `returned after ${result.durationMs} ms (grace ${GRACE_MS} ms)`
  expect(left, `still running: ${left.join(', ')}; ${timing}`).toEqual([])
  expect(result.durationMs, timing).toBeLessThan(within + HANG_GUARD_MS)
}

describe('killing the tree', () => {
  it('on timeout, including a grandchild that ignores SIGTERM and holds stdout', async () => {
    const file = pidFile()
    const timeoutMs = 2_000
    const result = await runCommand({
      argv: treeArgv('wait', file),
      cwd: dir,
      timeoutMs,
      killGraceMs: GRACE_MS,
    })
    expect(result.status).toBe('timed-out')
    // Both lines arrive only once the grandchild ignores SIGTERM, so the SIGKILL path was needed.
    expect(result.stdout.text).toMatch(/^child \d+\ngrandchild \d+\n$|^grandchild \d+\nchild \d+\n$/)
    await expectTreeGone(file, result, timeoutMs)
  })

  it('on timeout when the direct child ignores SIGTERM too', async () => {
    const file = pidFile()
    const result = await runCommand({
      argv: treeArgv('stubborn', file),
      cwd: dir,
      timeoutMs: 2_000,
      killGraceMs: GRACE_MS,
    })
    expect(result).toMatchObject({ status: 'timed-out', signal: 'SIGKILL' })
    await expectTreeGone(file, result, 2_000)
  })

  it('on abort', async () => {
    const file = pidFile()
    const controller = new AbortController()
    const running = runCommand({
      argv: treeArgv('wait', file),
      cwd: dir,
      signal: controller.signal,
      killGraceMs: GRACE_MS,
    })
    await treeStarted(file)
    const abortedAt = Date.now()
    controller.abort()
    const result = await running
    expect(result.status).toBe('cancelled')
    expect(result.stdout.text).toContain('grandchild')
    await expectTreeGone(file, result, Date.now() - abortedAt)
  })

  it('when the child exits while a grandchild still holds stdout open', async () => {
    const file = pidFile()
    const result = await runCommand({ argv: treeArgv('exit', file), cwd: dir, killGraceMs: GRACE_MS })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.stdout.text).toContain('grandchild')
    await expectTreeGone(file, result, 0)
  })

  it('when the child exits leaving a background process that holds no pipe', async () => {
    const file = pidFile()
    const result = await runCommand({ argv: treeArgv('detach', file), cwd: dir, killGraceMs: GRACE_MS })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    await treeStarted(file)
    await expectTreeGone(file, result, 0)
  })

  it('including a descendant that moved to a session of its own', async () => {
    const file = pidFile()
    const script = `setsid sh -c 'trap "" TERM; echo "grandchild $$" >> "$1"; exec sleep 1000' escapee "${file}" & echo "child $$" >> "${file}"; wait`
    const result = await runCommand({
      argv: ['/bin/sh', '-c', script],
      cwd: dir,
      timeoutMs: 2_000,
      killGraceMs: GRACE_MS,
    })
    expect(result.status).toBe('timed-out')
    await expectTreeGone(file, result, 2_000)
  })
})
