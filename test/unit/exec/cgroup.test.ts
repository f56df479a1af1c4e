/**
 * Per-command cgroups, for real, where this machine lets the worker make them: nothing is left behind. A
 * group given back while a process is still in it is kept or removed once that process is gone (the kernel
 * never removes a cgroup by itself), and a worker removes the folders of dead workers of its own PID
 * namespace while leaving every other folder alone.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CommandCgroup, detectCgroups, removeDeadWorkersGroups } from '../../../src/exec/sandbox/cgroup.js'

const support = detectCgroups()
const limits = { processes: 64, memoryBytes: 256 * 1024 * 1024 }

const ended = (child: ChildProcess) =>
  new Promise<void>((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
  )

const made: string[] = []
afterEach(() => {
  // Deepest first: a folder goes after its groups.
  for (const folder of made.splice(0).sort((a, b) => b.length - a.length)) {
    try {
      rmdirSync(folder)
    } catch (error) {
      // Another worker's sweep may have removed a dead one's already.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
})

describe.runIf(support)('command cgroups', () => {
  const groups = (hierarchy: string) => readdirSync(hierarchy).filter((name) => name.startsWith('cmd-'))

  it('a group given back while a process is still in it is reused once the process is gone, not leaked', async () => {
    const cgroups = support!
    const group = CommandCgroup.acquire(cgroups, limits)!
    const child = spawn('sleep', ['60'], { stdio: 'ignore' })
    await new Promise((resolve) => child.once('spawn', resolve))
    for (const file of group.procsFiles) writeFileSync(file, String(child.pid))
    const before = groups(cgroups.pids)

    group.release()
    // Killed, and still exiting when release returned: its group could not be removed or pooled then.
    await ended(child)
    expect(child.signalCode).toBe('SIGKILL')
    await new Promise((resolve) => setTimeout(resolve, 1_000))

    const next = CommandCgroup.acquire(cgroups, limits)!
    expect(next.procsFiles).toEqual(group.procsFiles)
    expect(groups(cgroups.pids)).toEqual(before)
    next.release()
  }, 30_000)

  it('vacating a group kills what is in it and resolves once that is gone', async () => {
    const cgroups = support!
    const group = CommandCgroup.acquire(cgroups, limits)!
    const children = Array.from({ length: 3 }, () => spawn('sleep', ['60'], { stdio: 'ignore' }))
    await Promise.all(children.map((child) => new Promise((resolve) => child.once('spawn', resolve))))
    for (const file of group.procsFiles) for (const child of children) writeFileSync(file, String(child.pid))
    await group.vacate(5_000)
    for (const file of group.procsFiles) expect(readFileSync(file, 'utf8')).toBe('')
    await Promise.all(children.map(ended))
    expect(children.map((child) => child.signalCode)).toEqual(['SIGKILL', 'SIGKILL', 'SIGKILL'])
  }, 30_000)

  it('keeps its own groups when the runtime is detected again (once per PATH)', () => {
    const cgroups = support!
    const group = CommandCgroup.acquire(cgroups, limits)!
    group.release()
    detectCgroups()
    const again = CommandCgroup.acquire(cgroups, limits)!
    expect(again.procsFiles).toEqual(group.procsFiles)
    for (const file of again.procsFiles) expect(existsSync(file)).toBe(true)
    again.release()
  })

  it('skips a group name a dead worker with this pid left taken', () => {
    const cgroups = support!
    const highest = Math.max(0, ...groups(cgroups.pids).map((name) => Number(name.slice('cmd-'.length))))
    const taken = Array.from({ length: 5 }, (_, i) => `cmd-${highest + 1 + i}`)
    for (const name of taken) {
      for (const hierarchy of new Set([cgroups.pids, cgroups.memory])) {
        if (!hierarchy) continue
        mkdirSync(join(hierarchy, name))
        made.push(join(hierarchy, name))
      }
    }
    // The first may be a kept group; the second is made.
    const both = [CommandCgroup.acquire(cgroups, limits), CommandCgroup.acquire(cgroups, limits)]
    expect(both.every((group) => group !== undefined)).toBe(true)
    const files = both.flatMap((group) => group?.procsFiles ?? [])
    expect(files.filter((file) => taken.some((name) => file.includes(`/${name}/`)))).toEqual([])
    for (const group of both) group?.release()
  })

  it("removes a dead worker's folder of this PID namespace; keeps live workers' and other namespaces'", async () => {
    const cgroups = support!
    const namespace = /\d+/.exec(readlinkSync('/proc/self/ns/pid'))![0]
    // Above any pid_max (2^22): no process has it.
    const dead = 99_999_999
    const hierarchies = [cgroups.pids, cgroups.memory].filter((path) => path !== undefined)
    // Made here, never there before (mkdir without recursive throws if one is): the test touches nothing else.
    const folders = (name: string) =>
      hierarchies.map((own) => {
        const folder = join(own, '..', name)
        mkdirSync(folder)
        made.push(folder)
        mkdirSync(join(folder, 'cmd-1'))
        made.push(join(folder, 'cmd-1'))
        return folder
      })
    const deadHere = folders(`tether-${dead}-${namespace}`)
    const otherNamespace = folders(`tether-${dead}-1`)
    const oldName = folders(`tether-${dead}`)
    const liveHere = folders(`tether-${process.ppid}-${namespace}`)

    await removeDeadWorkersGroups(cgroups)

    for (const folder of deadHere) expect(existsSync(folder)).toBe(false)
    for (const folder of [...otherNamespace, ...oldName, ...liveHere])
      expect(existsSync(join(folder, 'cmd-1'))).toBe(true)
  }, 30_000)
})
