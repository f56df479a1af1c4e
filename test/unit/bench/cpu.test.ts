/**
 * The benches' CPU reading (bench/support.ts `readCpu`): per process tree of the bench, found through parent
 * links, never by program name. Each check burns a fixed amount of CPU time (not wall time), so a busy
 * machine slows it down but cannot change what it measures. The burn is timed by getrusage and read back
 * from /proc in 10 ms clock ticks, which can come out a tick or two short (CI read 200 ms as 0.18999…):
 * each bound leaves several ticks.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { cpuSpent, LAUNCHER, readCpu, WORKER } from '../../../bench/support.js'

/** Burns `ms` of this process's own CPU time. */
function burnHere(ms: number): void {
  const start = process.cpuUsage()
  for (;;) {
    const used = process.cpuUsage(start)
    if (used.user + used.system >= ms * 1000) return
  }
}

/** Node code that does the same in a process of its own. */
const burn = (ms: number) => `;(${burnHere.toString()})(${ms});`

/** Resolves with what `child` first prints; rejects should its output end first. */
async function firstLine(child: ChildProcess): Promise<string> {
  const ended = once(child.stdout!, 'end').then(() => {
    throw new Error('the child ended its output before it printed')
  })
  const [chunk] = (await Promise.race([once(child.stdout!, 'data'), ended])) as [Buffer]
  return chunk.toString().trim()
}

describe('readCpu', { timeout: 120_000 }, () => {
  it("counts a root's whole tree for its role, a descendant that has exited included", async () => {
    // The root starts a grandchild that burns 400 ms and exits (reaped: it lands in the root's cutime),
    // burns 200 ms itself, says so, then waits until its stdin closes.
    const root = spawn(
      process.execPath,
      [
        '-e',
        `const { spawnSync } = require('node:child_process')
         spawnSync(process.execPath, ['-e', ${JSON.stringify(burn(400))}])
         ${burn(200)}
         console.log('burnt'); process.stdin.resume()`,
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    )
    try {
      const before = readCpu({})
      expect(await firstLine(root)).toBe('burnt')
      const spent = cpuSpent(before, readCpu({ tree: root.pid! }))
      expect(spent.roles.get('tree')).toBeGreaterThanOrEqual(0.5)
      // Neither this process's own time nor its other descendants'.
      expect(spent.roles.get(LAUNCHER)).toBeLessThan(0.3)
    } finally {
      root.stdin!.end()
      await once(root, 'exit')
    }
  })

  it("counts this process's descendants under no root, and its own time, for the worker's roles", async () => {
    const before = readCpu({})
    const child = spawn(
      process.execPath,
      ['-e', `${burn(300)}; console.log('burnt'); process.stdin.resume()`],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    )
    expect(await firstLine(child)).toBe('burnt')
    const live = cpuSpent(before, readCpu({}))
    child.stdin!.end()
    await once(child, 'exit')
    // Reaped now: its time has moved into this process's cutime, and still counts.
    const reaped = cpuSpent(before, readCpu({}))
    burnHere(200)
    const after = cpuSpent(before, readCpu({}))
    expect(live.roles.get(LAUNCHER)).toBeGreaterThanOrEqual(0.25)
    expect(reaped.roles.get(LAUNCHER)).toBeGreaterThanOrEqual(0.25)
    expect((after.roles.get(WORKER) ?? 0) - (reaped.roles.get(WORKER) ?? 0)).toBeGreaterThanOrEqual(0.15)
  })

  it('leaves out a process of the same program that is not in a tree of the bench', async () => {
    // `sh` starts node in the background and exits at once: that node's parent becomes init (or a
    // subreaper above this process), so it is no descendant of this one, though it is named node too.
    const before = readCpu({})
    const shell = spawn('sh', ['-c', `"${process.execPath}" -e "${burn(500)}; console.log('burnt')" &`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    expect(await firstLine(shell)).toBe('burnt')
    const spent = cpuSpent(before, readCpu({}))
    expect(spent.roles.get(LAUNCHER)).toBeLessThan(0.25)
  })
})
