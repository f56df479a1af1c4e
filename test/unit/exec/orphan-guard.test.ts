/**
 * A command must not outlive a runner process that dies without cleaning up (SIGKILL, OOM, crash), and
 * neither may the launcher that started it.
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { isLauncher, liveProcesses } from '../../support/processes.js'

const groupMembers = (pgid: number) =>
  liveProcesses()
    .filter((p) => p.pgid === pgid)
    .map((p) => p.pid)
const launchersOf = (parent: number) => liveProcesses().filter((p) => p.ppid === parent && isLauncher(p))
const guards = () =>
  liveProcesses()
    .filter((p) => p.argv.some((arg) => arg.includes('const groups = new Set()')))
    .map((p) => p.pid)

it('kills a running command tree when its runner process is SIGKILLed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tether-orphan-'))
  try {
    const pidFile = join(dir, 'pid')
    const parent = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('../../support/orphan-parent.ts', import.meta.url)), pidFile],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    await expect
      .poll(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', { timeout: 30_000 })
      .toBe(true)
    const leader = Number(readFileSync(pidFile, 'utf8'))
    await expect.poll(() => groupMembers(leader).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2)
    // Give the guard (a fresh node process) time to start on a loaded machine; the kill must not race it.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const launchers = launchersOf(parent.pid as number)
    expect(launchers).toHaveLength(1)
    parent.kill('SIGKILL')
    await expect
      .poll(() => groupMembers(leader), {
        timeout: 30_000,
        message: `guards running: ${guards().join(', ') || 'none'}`,
      })
      .toEqual([])
    const alive = () => new Set(liveProcesses().map((p) => p.pid))
    await expect.poll(() => launchers.filter(({ pid }) => alive().has(pid)), { timeout: 10_000 }).toEqual([])
    // Its socket's folder went with it: a worker that ends, however it ends, leaves nothing in /tmp.
    const [launcher] = launchers
    expect(existsSync(dirname(launcher?.argv.at(-1) as string))).toBe(false)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}, 90_000)
