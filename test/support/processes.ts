/** The machine's live processes, read from /proc, for tests that check what a command left running. */
import { readdirSync, readFileSync } from 'node:fs'

export interface LiveProcess {
  pid: number
  ppid: number
  pgid: number
  argv: string[]
}

/** Every process that is not a zombie; one that ends while it is read is left out. */
export function liveProcesses(): LiveProcess[] {
  const found: LiveProcess[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      if (fields[0] === 'Z') continue
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').slice(0, -1)
      found.push({ pid: Number(name), ppid: Number(fields[1]), pgid: Number(fields[2]), argv })
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}

/** Whether `process` is the command launcher (its script names the worker it serves). */
export function isLauncher(process: LiveProcess): boolean {
  return process.argv.some((arg) => arg.includes('could not reach the worker'))
}
