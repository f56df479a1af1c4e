/**
 * A command must not outlive a runner process that dies without cleaning up (SIGKILL, OOM, crash), and
 * neither may the launcher that started it.
 */
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

function groupMembers(pgid: number): number[] {
  const members: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') members.push(Number(name))
    } catch {
      // gone meanwhile
    }
  }
  return members
}

/** The launchers a process started (their script names the worker they serve). */
function launchersOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'latin1')
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
        return (
          ppid === parent &&
          readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('could not reach the worker')
        )
      } catch {
        return false
      }
    })
    .map(Number)
}

/** Guard processes on this machine (for the failure message). */
function guards(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('const groups = new Set()')
      } catch {
        return false
      }
    })
    .map(Number)
}

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
    const alive = (pid: number) => {
      try {
        return !readFileSync(`/proc/${pid}/stat`, 'latin1').includes(') Z ')
      } catch {
        return false
      }
    }
    await expect.poll(() => launchers.filter(alive), { timeout: 10_000 }).toEqual([])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}, 90_000)
