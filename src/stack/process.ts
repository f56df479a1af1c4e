/** Small process helpers shared by the local stack: free ports, waiting, stopping, and a reaper. */
import { type ChildProcess, spawn } from 'node:child_process'
import { createServer } from 'node:net'

/** Asks the OS for a free loopback port. Callers retry on a bind race (see startWithPortRetry). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port)
        else reject(new Error('could not read the port the OS assigned'))
      })
    })
  })
}

/** Whether `port` on the loopback interface can be bound right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.unref()
    server.on('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Resolves once `pid` is gone, or false after `timeoutMs`. */
export async function waitForExit(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false
    await sleep(50)
  }
  return true
}

/**
 * Sends `signal`, waits up to `graceMs`, then SIGKILLs. With `group`, the whole process group is signalled
 * (the child must have been spawned `detached`).
 */
export async function stopProcess(
  pid: number,
  options: { signal?: NodeJS.Signals; graceMs?: number; group?: boolean } = {},
): Promise<void> {
  const target = options.group ? -pid : pid
  const send = (signal: NodeJS.Signals) => {
    try {
      process.kill(target, signal)
    } catch {
      // already gone
    }
  }
  send(options.signal ?? 'SIGTERM')
  if (await waitForExit(pid, options.graceMs ?? 10_000)) return
  send('SIGKILL')
  await waitForExit(pid, 5_000)
}

/** What a reaper cleans up once its parent is gone. */
export interface ReaperPlan {
  /** Process ids to stop; `group: true` signals the whole group. */
  processes: Array<{ pid: number; signal: NodeJS.Signals; group: boolean }>
  /** Folders to delete afterwards. */
  folders: string[]
}

// Runs as `node -e` so it works the same from TypeScript sources and the compiled package.
const REAPER_SCRIPT = `
const { rmSync } = require('node:fs')
const [parent, planJson] = process.argv.slice(1)
const plan = JSON.parse(planJson)
const alive = (pid) => { try { process.kill(pid, 0); return true } catch (e) { return e.code === 'EPERM' } }
const send = (p, sig) => { try { process.kill(p.group ? -p.pid : p.pid, sig) } catch {} }
process.on('SIGTERM', () => process.exit(0))
setInterval(() => {
  if (alive(Number(parent))) return
  for (const p of plan.processes) send(p, p.signal)
  const deadline = Date.now() + 10000
  const wait = setInterval(() => {
    const left = plan.processes.filter((p) => alive(p.pid))
    if (left.length && Date.now() < deadline) return
    for (const p of left) send(p, 'SIGKILL')
    for (const f of plan.folders) { try { rmSync(f, { recursive: true, force: true }) } catch {} }
    process.exit(0)
  }, 100)
}, 300)
`

/**
 * Starts a detached watcher that stops `plan` if this process dies without cleaning up (a crash, SIGKILL,
 * an interrupted test run). Call the returned function after a normal cleanup to dismiss it.
 */
export function startReaper(plan: ReaperPlan): () => void {
  const reaper: ChildProcess = spawn(
    process.execPath,
    ['-e', REAPER_SCRIPT, String(process.pid), JSON.stringify(plan)],
    {
      detached: true,
      stdio: 'ignore',
    },
  )
  reaper.unref()
  return () => {
    try {
      if (reaper.pid) process.kill(reaper.pid, 'SIGTERM')
    } catch {
      // already gone
    }
  }
}
