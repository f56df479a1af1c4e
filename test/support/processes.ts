/** The machine's live processes, read from /proc, for tests that check what a command left running. */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

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

/** The processes of the sandboxes built ahead for `workspace`'s next command (their launch names it; the trampoline's script is theirs). */
export function sandboxesWaitingFor(workspace: string): LiveProcess[] {
  return liveProcesses().filter(
    (p) => p.argv.includes(workspace) && p.argv.some((arg) => arg.includes('read -r tether_env')),
  )
}

/** Whether `process` is the command launcher (its script names the worker it serves). */
export function isLauncher(process: LiveProcess): boolean {
  return process.argv.some((arg) => arg.includes('could not reach the worker'))
}

/** The paths of the Unix sockets process `pid` listens on (read from its descriptors and /proc/net/unix). */
export function listeningSockets(pid: number): string[] {
  const inodes = new Set<string>()
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
        if (match) inodes.add(match[1] as string)
      } catch {
        // Closed meanwhile.
      }
    }
  } catch {
    return []
  }
  const paths: string[] = []
  // Num RefCount Protocol Flags Type St Inode Path; flag 0x10000 is "accepting connections".
  for (const line of readFileSync('/proc/net/unix', 'latin1').split('\n').slice(1)) {
    const [, , , flags, , , inode, path] = line.trim().split(/\s+/)
    if (
      path?.startsWith('/') &&
      inode &&
      inodes.has(inode) &&
      (Number.parseInt(flags ?? '0', 16) & 0x10000) !== 0
    ) {
      paths.push(path)
    }
  }
  return paths
}
