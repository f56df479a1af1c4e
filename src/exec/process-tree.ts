/**
 * Finding and killing a command's process tree. The command runs as the leader of its own session and
 * process group, so one signal to the group reaches every member; on Linux, /proc also finds members that
 * moved to another group of the same session, and descendants that started a session of their own while
 * their parent still lives. Each process is remembered with its start time, so a pid the kernel has
 * handed to someone else in the meantime is never signalled.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

/** How long to wait for SIGKILLed processes to disappear before giving up on them. */
const KILL_CONFIRM_MS = 2_000
const POLL_MS = 20

interface ProcStat {
  pid: number
  ppid: number
  pgid: number
  sid: number
  zombie: boolean
  /** Clock ticks after boot; with the pid, identifies one process. */
  startTime: string
}

function readStat(pid: number | string): ProcStat | undefined {
  let raw: string
  try {
    raw = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  // The command name (field 2) may hold spaces and parentheses; fields after the last ')' are plain.
  const fields = raw.slice(raw.lastIndexOf(')') + 2).split(' ')
  const [state, ppid, pgid, sid] = fields
  const startTime = fields[19]
  if (state === undefined || startTime === undefined) return undefined
  return {
    pid: Number(pid),
    ppid: Number(ppid),
    pgid: Number(pgid),
    sid: Number(sid),
    zombie: state === 'Z',
    startTime,
  }
}

const hasProc = readStat('self') !== undefined

function allStats(): ProcStat[] {
  const stats: ProcStat[] = []
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 0x30 || name.charCodeAt(0) > 0x39) continue
    const stat = readStat(name)
    if (stat) stats.push(stat)
  }
  return stats
}

/** Whether a process (or, for a negative pid, a process group) exists; one of another user's does too. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function send(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // Gone already, or never ours to signal.
  }
}

/** The process tree of one command, led by `leader` (its pid, process group id and session id). */
export class ProcessTree {
  /** pid → start time of every member seen so far. */
  private readonly members = new Map<number, string>()

  constructor(readonly leader: number) {}

  /**
   * Whether any live (non-zombie) process remains in the group or among the members seen. Zombies do not
   * count: an init that never reaps leaves them in the table forever, and they hold nothing open.
   */
  alive(): boolean {
    const groupSeen = processExists(-this.leader)
    if (!hasProc) return groupSeen || [...this.members.keys()].some(processExists)
    if (groupSeen && allStats().some((s) => s.pgid === this.leader && !s.zombie)) return true
    for (const [pid, startTime] of this.members) {
      const stat = readStat(pid)
      if (stat && !stat.zombie && stat.startTime === startTime) return true
    }
    return false
  }

  /**
   * Signals the group and every member found. `leaderRunning` says the leader has not been reaped yet, so
   * its pid still names it and its descendants can be found through their parent ids.
   */
  signal(signal: NodeJS.Signals, leaderRunning: boolean, spareLeader = false): void {
    this.discover(leaderRunning)
    if (!spareLeader) send(-this.leader, signal)
    for (const [pid, startTime] of this.members) {
      if (spareLeader && pid === this.leader) continue
      const stat = hasProc ? readStat(pid) : undefined
      if (!hasProc || (stat && stat.startTime === startTime)) send(pid, signal)
    }
  }

  /**
   * SIGTERM, up to `graceMs` for the tree to go, then SIGKILL and a bounded wait for it to disappear.
   * `spareLeaderOnTerm` sends SIGTERM to the leader's descendants only: a sandbox's leader (bwrap) would
   * die of it at once and take its namespace down with SIGKILL, leaving the command no grace period.
   */
  async kill(graceMs: number, leaderRunning: () => boolean, spareLeaderOnTerm = false): Promise<void> {
    this.signal('SIGTERM', leaderRunning(), spareLeaderOnTerm)
    if (await this.waitUntilGone(graceMs)) return
    this.signal('SIGKILL', leaderRunning())
    await this.waitUntilGone(KILL_CONFIRM_MS)
  }

  async waitUntilGone(timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs
    while (this.alive()) {
      if (performance.now() >= deadline) return false
      await sleep(POLL_MS)
    }
    return true
  }

  private discover(leaderRunning: boolean): void {
    if (!hasProc) return
    const stats = allStats()
    const children = new Map<number, ProcStat[]>()
    for (const stat of stats) {
      if (stat.zombie || stat.pid === process.pid) continue
      if (stat.pgid === this.leader || stat.sid === this.leader) this.members.set(stat.pid, stat.startTime)
      const siblings = children.get(stat.ppid)
      if (siblings) siblings.push(stat)
      else children.set(stat.ppid, [stat])
    }
    if (!leaderRunning) return
    const queue = [this.leader]
    for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
      for (const child of children.get(pid) ?? []) {
        this.members.set(child.pid, child.startTime)
        queue.push(child.pid)
      }
    }
  }
}
