/**
 * Kills running commands when the process that started them dies without cleaning up — a worker that is
 * SIGKILLed, OOM-killed or crashes. Without this, a command outlives its worker and may run concurrently
 * with its own retry on another worker.
 *
 * One small guard process per runner process holds the read end of a pipe; each running command's process
 * group is registered on it and released when the command ends. When the runner dies, the kernel closes
 * the pipe, the guard reads end-of-file and kills every group still registered (SIGTERM, then SIGKILL).
 * Linux has PR_SET_PDEATHSIG for this, but Node cannot set it on a child, and it would not reach
 * grandchildren anyway.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import type { Writable } from 'node:stream'

// Plain JavaScript run with `node -e`, so it works the same from sources and from the compiled package.
const GUARD = `
const groups = new Set()
let buffered = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => {
  buffered += chunk
  const lines = buffered.split('\\n')
  buffered = lines.pop()
  for (const line of lines) {
    const pid = Number(line.slice(1))
    if (!Number.isInteger(pid) || pid <= 1) continue
    if (line[0] === '+') groups.add(pid)
    else groups.delete(pid)
  }
})
const signal = (name) => { for (const pid of groups) { try { process.kill(-pid, name) } catch {} } }
process.stdin.on('end', () => {
  if (groups.size === 0) process.exit(0)
  signal('SIGTERM')
  setTimeout(() => { signal('SIGKILL'); process.exit(0) }, 2000)
})
process.on('SIGINT', () => {})
process.on('SIGTERM', () => {})
`

let guard: { process: ChildProcess; input: Writable } | undefined

function ensureGuard(): Writable | undefined {
  if (guard && !guard.input.destroyed) return guard.input
  try {
    const child = spawn(process.execPath, ['-e', GUARD], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    })
    const input = child.stdin as Writable
    // A guard that died (or never started) must not crash the runner; the next command starts a new one.
    input.on('error', () => input.destroy())
    child.on('error', () => input.destroy())
    child.unref()
    ;(input as Writable & { unref?: () => void }).unref?.()
    guard = { process: child, input }
    return input
  } catch {
    return undefined
  }
}

/**
 * Registers a command's process group (its leader's pid) with the guard; call the returned function once
 * the command has ended and its tree has been dealt with.
 */
export function guardProcessGroup(pid: number): () => void {
  const input = ensureGuard()
  input?.write(`+${pid}\n`)
  return () => {
    if (input && !input.destroyed) input.write(`-${pid}\n`)
  }
}
