import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ApplicationFailure, CancelledFailure } from '@temporalio/common'
import { MockActivityEnvironment } from '@temporalio/testing'
import { DefaultLogger } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { runCommandWithHeartbeats } from '../../../src/activities/exec.js'
import type { ExecResult } from '../../../src/exec/index.js'
import { killLeftovers, survivors, treeArgv, treeStarted } from '../../fixtures/exec/probes.js'
import { type ExecActivityInput, type ExecHeartbeat, execCommand } from '../../support/exec-activity.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-activity-'))
})
afterAll(async () => {
  await killLeftovers([join(dir, 'pids-cancel')])
  await rm(dir, { recursive: true, force: true })
})

/** An activity environment whose heartbeats are collected; the interval follows the heartbeat timeout. */
function environment(heartbeatTimeoutMs = 400) {
  // ERROR only: the SDK logs every failed activity at WARN, and two tests fail activities on purpose.
  const env = new MockActivityEnvironment({ heartbeatTimeoutMs }, { logger: new DefaultLogger('ERROR') })
  const heartbeats: ExecHeartbeat[] = []
  env.on('heartbeat', (details: ExecHeartbeat) => heartbeats.push(details))
  const heartbeatCount = (count: number) =>
    expect.poll(() => heartbeats.length, { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(count)
  // MockActivityEnvironment.run cannot infer an activity's result type; both activities return ExecResult.
  const run = (activity: typeof execCommand, input: ExecActivityInput) =>
    env.run(activity, input) as Promise<ExecResult>
  return { env, heartbeats, heartbeatCount, run }
}

describe('exec activity', () => {
  it('heartbeats on a timer while the command prints nothing', async () => {
    const { env, heartbeats, heartbeatCount, run } = environment()
    const running = run(runCommandWithHeartbeats, { argv: ['sleep', '30'], cwd: dir })
    await heartbeatCount(4)
    env.cancel()
    expect((await running).status).toBe('cancelled')
    expect(heartbeats.every((beat) => beat.bytes === 0)).toBe(true)
    // Whoever follows the run reads what is running from the heartbeat.
    expect(heartbeats.every((beat) => beat.command === 'sleep 30')).toBe(true)
    const elapsed = heartbeats.map((beat) => beat.elapsedMs)
    expect(elapsed).toEqual([...elapsed].sort((a, b) => a - b))
    expect(elapsed.at(-1)).toBeGreaterThan(0)
  })

  it('sends no heartbeat at a command’s start: none for a quick one, the first a quarter second into a longer one', async () => {
    // The clock of the activity's timers only, advanced by hand: the commands themselves run for real.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] })
    try {
      // A 10 s heartbeat timeout, as the workflow gives commands: a beat every 2.5 s.
      const { env, heartbeats, run } = environment(10_000)
      expect((await run(runCommandWithHeartbeats, { argv: ['true'], cwd: dir })).status).toBe('exited')
      expect(heartbeats).toEqual([])
      const running = run(runCommandWithHeartbeats, { argv: ['sleep', '30'], cwd: dir })
      await vi.advanceTimersByTimeAsync(249)
      expect(heartbeats).toEqual([])
      await vi.advanceTimersByTimeAsync(1)
      expect(heartbeats.map((beat) => beat.command)).toEqual(['sleep 30'])
      await vi.advanceTimersByTimeAsync(2_250)
      expect(heartbeats).toHaveLength(2)
      vi.useRealTimers()
      env.cancel()
      expect((await running).status).toBe('cancelled')
    } finally {
      vi.useRealTimers()
    }
  })

  it('reports the bytes printed so far in its heartbeats', async () => {
    const { env, heartbeats, run } = environment()
    const running = run(runCommandWithHeartbeats, {
      argv: ['/bin/sh', '-c', 'printf 12345; exec sleep 30'],
      cwd: dir,
    })
    await expect.poll(() => heartbeats.at(-1)?.bytes, { timeout: 20_000, interval: 20 }).toBe(5)
    env.cancel()
    const result = await running
    expect(result).toMatchObject({ status: 'cancelled', stdout: { text: '12345' } })
  })

  it('turns a cancellation into a kill of the whole tree and rethrows it with the partial result', async () => {
    const { env, run } = environment()
    const pidFile = join(dir, 'pids-cancel')
    const running = run(execCommand, { argv: treeArgv('wait', pidFile), cwd: dir, killGraceMs: 300 })
    const { child, grandchild } = await treeStarted(pidFile)
    env.cancel()
    const error = await running.then(
      () => undefined,
      (failure: unknown) => failure,
    )
    expect(error).toBeInstanceOf(CancelledFailure)
    const partial = (error as CancelledFailure).details[0] as ExecResult
    expect(partial.status).toBe('cancelled')
    expect(partial.stdout.text).toContain(`grandchild ${grandchild}`)
    const left = survivors(child, [grandchild])
    expect(left, `still running after cancellation: ${left.join(', ')}`).toEqual([])
  })

  it('returns a non-zero exit as data', async () => {
    const { run } = environment()
    const result = await run(execCommand, {
      argv: ['/bin/sh', '-c', 'echo failing >&2; exit 2'],
      cwd: dir,
    })
    expect(result).toMatchObject({ status: 'exited', exitCode: 2, stderr: { text: 'failing\n' } })
  })

  it('returns a missing program as data', async () => {
    const { run } = environment()
    const result = await run(execCommand, { argv: ['tether-no-such-program'], cwd: dir })
    expect(result.status).toBe('unavailable')
  })

  it('fails non-retryably with type ExecInputError for invalid input', async () => {
    const { run } = environment()
    const error = await run(execCommand, { argv: [], cwd: dir }).then(
      () => undefined,
      (failure: unknown) => failure,
    )
    expect(error).toBeInstanceOf(ApplicationFailure)
    expect(error).toMatchObject({ type: 'ExecInputError', nonRetryable: true })
    expect((error as Error).message).toMatch(/^argv: is empty/)
  })
})
