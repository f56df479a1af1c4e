/**
 * Per-command cgroups for the limits rlimits cannot give: a cap on the number of processes (RLIMIT_NPROC
 * does not bind a worker running as root, and counts threads across the whole user otherwise) and on
 * memory, with a record of whether the command hit either. Used when this machine lets the worker create
 * cgroups (cgroup v1 controllers mounted writable, or a delegated cgroup v2 subtree); otherwise commands
 * get rlimits only and the report says so.
 *
 * Nothing is left behind. A worker's groups live in a folder named for its process and PID namespace (a
 * v1 hierarchy is often shared by containers whose PIDs overlap). A group given back while its processes
 * are still exiting (a sandbox's namespaces take a moment to go) waits until it is empty and is then kept
 * or removed; and a worker making its folder (for its first sandboxed command) removes the folders of
 * workers of its own PID namespace that died without removing theirs (killed, say). A leaked memory group
 * is kernel memory, and the kernel walks every group it keeps.
 */
import { mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync, writeFileSync } from 'node:fs'
import { rmdir } from 'node:fs/promises'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { processExists } from '../process-tree.js'
import { subfolders } from './folders.js'

export interface CgroupSupport {
  version: 1 | 2
  /** Folder under which this worker's command groups are made, per controller (v1) or shared (v2). */
  pids: string
  memory: string | undefined
}

interface Mount {
  point: string
  type: string
  superOptions: string[]
}

function mounts(): Mount[] {
  let text: string
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8')
  } catch {
    return []
  }
  const found: Mount[] = []
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ')
    if (!left || !right) continue
    const point = left.split(' ')[4]
    const [type, , options] = right.split(' ')
    if (point && type)
      found.push({ point: unescapeMount(point), type, superOptions: (options ?? '').split(',') })
  }
  return found
}

function unescapeMount(text: string): string {
  return text.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)))
}

/** `controller → path` of this process's cgroups (`''` is the v2 unified hierarchy). */
function ownCgroups(): Map<string, string> {
  const own = new Map<string, string>()
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const match = /^\d+:([^:]*):(.*)$/.exec(line)
      if (!match) continue
      for (const controller of (match[1] as string).split(',')) own.set(controller, match[2] as string)
    }
  } catch {
    // no cgroups here
  }
  return own
}

/** This process's PID namespace (its inode number), or undefined when /proc does not say. */
function pidNamespace(): string | undefined {
  try {
    return /^pid:\[(\d+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))?.[1]
  } catch {
    return undefined
  }
}

/** `tether-<pid>-<PID namespace>`: whose folder it is. */
const WORKER_FOLDER = /^tether-(\d+)-(\d+)$/

/** This worker's folder's name, and whether it is this process's alone (it names its PID namespace). */
function workerFolderName(): { name: string; ours: boolean } {
  const namespace = pidNamespace()
  return namespace
    ? { name: `tether-${process.pid}-${namespace}`, ours: true }
    : { name: `tether-${process.pid}`, ours: false }
}

/** The worker folders this process has made. */
const madeHere = new Set<string>()

/** Removes the empty groups a dead worker left in `folder` (the one whose pid this process now has). */
function removeLeftGroups(folder: string): void {
  for (const group of subfolders(folder)) {
    try {
      rmdirSync(group)
    } catch {
      // still has processes: its name is skipped (CommandCgroup.acquire)
    }
  }
}

/** Makes (and checks we may use) `<own cgroup>/<workerFolderName()>` in one hierarchy; undefined if we may not. */
function workerFolder(
  mountPoint: string,
  ownPath: string | undefined,
  probe: [file: string, value: string],
  setup: (folder: string) => void = () => {},
): string | undefined {
  if (ownPath === undefined) return undefined
  const { name, ours } = workerFolderName()
  const folder = join(mountPoint, ownPath, name)
  try {
    mkdirSync(folder, { recursive: true })
    // A folder of this name there before this process first made it is a dead worker's whose pid this
    // process now has. (Made again later — the runtime is detected per PATH — it holds this one's groups.)
    if (ours && !madeHere.has(folder)) removeLeftGroups(folder)
    madeHere.add(folder)
    setup(folder)
    // Creating is not enough: the controller's files must be there and writable in a child.
    const child = join(folder, 'probe')
    mkdirSync(child)
    try {
      writeFileSync(join(child, probe[0]), probe[1])
    } finally {
      rmdirSync(child)
    }
    return folder
  } catch {
    try {
      rmdirSync(folder)
    } catch {
      // not ours to remove, or not empty
    }
    return undefined
  }
}

export function detectCgroups(): CgroupSupport | undefined {
  const own = ownCgroups()
  const all = mounts()
  const v1 = (controller: string) =>
    all.find((m) => m.type === 'cgroup' && m.superOptions.includes(controller))
  const pidsMount = v1('pids')
  if (pidsMount) {
    const pids = workerFolder(pidsMount.point, own.get('pids'), ['pids.max', 'max'])
    if (pids) {
      const memoryMount = v1('memory')
      const memory = memoryMount
        ? workerFolder(memoryMount.point, own.get('memory'), ['memory.limit_in_bytes', '-1'])
        : undefined
      removeAtExit([pids, memory])
      return sweptBeside({ version: 1, pids, memory })
    }
  }
  const unified = all.find((m) => m.type === 'cgroup2')
  if (unified) {
    // A v2 group hands controllers to its children only when told to (and only while it has no processes).
    let memory: string | undefined
    const folder = workerFolder(unified.point, own.get(''), ['pids.max', 'max'], (made) => {
      writeFileSync(join(made, 'cgroup.subtree_control'), '+pids')
      try {
        writeFileSync(join(made, 'cgroup.subtree_control'), '+memory')
        memory = made
      } catch {
        // no memory controller delegated to us
      }
    })
    if (folder) {
      removeAtExit([folder])
      return sweptBeside({ version: 2, pids: folder, memory })
    }
  }
  return undefined
}

/** `support`, with dead workers' folders beside its own being removed in the background. */
function sweptBeside(support: CgroupSupport): CgroupSupport {
  void removeDeadWorkersGroups(support)
  return support
}

function removeAtExit(folders: Array<string | undefined>): void {
  process.once('exit', () => {
    for (const group of [...pool.splice(0), ...draining]) group.remove()
    for (const folder of folders) {
      if (!folder) continue
      try {
        rmdirSync(folder)
      } catch {
        // a command group still in use; the kernel keeps it until it empties
      }
    }
  })
}

/**
 * Removes the folders (and their groups) that workers of this PID namespace left behind when they died,
 * beside this worker's own in each hierarchy of `support`. A folder of another namespace, or of the old
 * name without one, may be a live worker's: it is never touched. A group that still has processes stays,
 * and so does its folder. Resolves once done; what could not be removed is left as it was.
 */
export async function removeDeadWorkersGroups(support: CgroupSupport): Promise<void> {
  const namespace = pidNamespace()
  if (!namespace) return
  for (const own of new Set([support.pids, support.memory])) {
    if (!own) continue
    const parent = join(own, '..')
    let names: string[]
    try {
      names = readdirSync(parent)
    } catch {
      continue
    }
    for (const name of names) {
      const match = WORKER_FOLDER.exec(name)
      if (!match || match[2] !== namespace) continue
      const pid = Number(match[1])
      if (pid === process.pid || processExists(pid)) continue
      const folder = join(parent, name)
      // One by one, off this thread: a v1 memory group takes a millisecond or more to remove.
      for (const group of subfolders(folder)) await rmdir(group).catch(() => {})
      await rmdir(folder).catch(() => {})
      // Between folders nothing holds the process: one that is done exits, and the next worker goes on.
      await new Promise((resolve) => setTimeout(resolve, 0).unref())
    }
  }
}

let counter = 0
/** Empty command groups kept for the next command: making and removing a v1 memory group costs ms. */
const pool: CommandCgroup[] = []
const POOL_SIZE = 16
/** Names tried for a new group before giving up (each taken one is a dead worker's group with processes). */
const NAME_TRIES = 64
/** Groups given back (or removed) while processes were still in them, until those are gone. */
const draining = new Set<CommandCgroup>()
/** How often a draining group is looked at again. */
const DRAIN_MS = 250
/** How often a group being vacated is looked at again: a killed process is usually gone within one. */
const VACATE_POLL_MS = 5
let drainTimer: NodeJS.Timeout | undefined

/** Pools or removes the draining groups that have emptied; looks again later while any has not. */
function drain(): void {
  for (const group of draining) {
    if (group.occupied()) continue
    draining.delete(group)
    group.recycle()
  }
  if (draining.size === 0 || drainTimer) return
  drainTimer = setTimeout(() => {
    drainTimer = undefined
    drain()
  }, DRAIN_MS).unref()
}

/** The cgroup(s) of one command: taken before it starts, read and given back after it ends. */
export class CommandCgroup {
  /** Event counters when the command started: the files only count up, and groups are reused. */
  private baseline = { processes: 0, memory: 0 }
  /** Being removed: never pooled again. */
  private retired = false
  private limits = { processes: 0, memoryBytes: 0 }

  /** Its folder in each hierarchy: one under v2, where both controllers share it. */
  private readonly groupFolders: string[]

  private constructor(
    private readonly support: CgroupSupport,
    private readonly folders: { pids: string; memory: string | undefined },
  ) {
    this.groupFolders = [...new Set([folders.pids, folders.memory])].filter((folder) => folder !== undefined)
  }

  /** A group (reused or new) with these limits; undefined when the kernel refused. */
  static acquire(
    support: CgroupSupport,
    limits: { processes: number; memoryBytes: number },
  ): CommandCgroup | undefined {
    drain()
    let group = pool.pop()
    if (group && group.support !== support) {
      group.remove()
      group = undefined
    }
    if (!group) {
      group = CommandCgroup.make(support)
      if (!group) return undefined
    }
    try {
      group.setLimits(limits)
    } catch {
      group.remove()
      return undefined
    }
    group.baseline = group.counters()
    return group
  }

  /** A new group; a name a dead worker's group still holds is skipped. Undefined when the kernel refused. */
  private static make(support: CgroupSupport): CommandCgroup | undefined {
    for (let tries = 0; tries < NAME_TRIES; tries++) {
      const name = `cmd-${++counter}`
      const pids = join(support.pids, name)
      const memory = support.memory ? (support.version === 2 ? pids : join(support.memory, name)) : undefined
      const group = new CommandCgroup(support, { pids, memory })
      const made: string[] = []
      try {
        for (const folder of group.groupFolders) {
          mkdirSync(folder)
          made.push(folder)
        }
        return group
      } catch (error) {
        for (const folder of made) {
          try {
            rmdirSync(folder)
          } catch {
            // left to the next worker's sweep, once this one has ended
          }
        }
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined
      }
    }
    return undefined
  }

  private setLimits(limits: { processes: number; memoryBytes: number }): void {
    if (limits.processes !== this.limits.processes) {
      writeFileSync(join(this.folders.pids, 'pids.max'), String(limits.processes))
    }
    const memory = this.folders.memory
    if (memory && limits.memoryBytes !== this.limits.memoryBytes) {
      if (this.support.version === 1) {
        // With swap accounting, memsw must be raised before (and lowered after) the RAM limit.
        const raising = limits.memoryBytes > this.limits.memoryBytes
        if (raising) tryWrite(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes))
        writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes))
        if (!raising) tryWrite(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes))
      } else {
        writeFileSync(join(memory, 'memory.max'), String(limits.memoryBytes))
        tryWrite(join(memory, 'memory.swap.max'), '0')
      }
    }
    this.limits = { ...limits }
  }

  /** Whether the group caps memory too (the memory controller may not be ours to use). */
  get capsMemory(): boolean {
    return this.folders.memory !== undefined
  }

  /** The files a process writes its pid to, to join the group(s) before it starts the command. */
  get procsFiles(): string[] {
    return this.groupFolders.map((folder) => join(folder, 'cgroup.procs'))
  }

  private counters(): { processes: number; memory: number } {
    const memory = this.folders.memory
    return {
      processes: counterIn(join(this.folders.pids, 'pids.events'), 'max'),
      memory: memory
        ? counterIn(
            join(memory, this.support.version === 1 ? 'memory.oom_control' : 'memory.events'),
            'oom_kill',
          )
        : 0,
    }
  }

  /** Which limits the command ran into since it was acquired. */
  hits(): { processes: boolean; memory: boolean } {
    const now = this.counters()
    return { processes: now.processes > this.baseline.processes, memory: now.memory > this.baseline.memory }
  }

  /**
   * Kills whatever is left in the group(s), then keeps them for the next command or removes them — once
   * they are empty: processes still exiting (or just killed) are waited for.
   */
  release(): void {
    if (this.killMembers()) {
      draining.add(this)
      drain()
    } else this.recycle()
  }

  /**
   * Kills whatever is in the group(s) until none is left, for at most `withinMs`, then gives them back
   * (release): what the command left is gone, not only sent a signal, when this resolves.
   */
  async vacate(withinMs: number): Promise<void> {
    const until = performance.now() + withinMs
    while (this.killMembers() && performance.now() < until) await sleep(VACATE_POLL_MS)
    this.release()
  }

  /** Kept for the next command while the pool has room, else removed. */
  recycle(): void {
    if (!this.retired && pool.length < POOL_SIZE) pool.push(this)
    else this.remove()
  }

  /** Whether any process is in the group(s). */
  occupied(): boolean {
    return this.groupFolders.some((folder) => members(folder).length > 0)
  }

  private killMembers(): boolean {
    let left = false
    for (const folder of this.groupFolders) {
      for (const pid of members(folder)) {
        left = true
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // gone
        }
      }
    }
    return left
  }

  /**
   * Removes the group(s). One that cannot go yet (a process still exiting) is removed once it is empty: a
   * cgroup is never removed by the kernel on its own.
   */
  remove(): void {
    this.retired = true
    this.killMembers()
    let busy = false
    for (const folder of this.groupFolders) {
      try {
        rmdirSync(folder)
      } catch (error) {
        // EBUSY: a process in it; ENOENT: never made, or removed already
        if ((error as NodeJS.ErrnoException).code === 'EBUSY') busy = true
      }
    }
    if (busy) {
      draining.add(this)
      drain()
    } else draining.delete(this)
  }
}

function tryWrite(file: string, value: string): void {
  try {
    writeFileSync(file, value)
  } catch {
    // optional knob
  }
}

function members(folder: string): number[] {
  try {
    return readFileSync(join(folder, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** The number after `key` in a flat-keyed cgroup file (`max 3`, `oom_kill 1`); 0 when absent. */
function counterIn(file: string, key: string): number {
  try {
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const [name, value] = line.split(' ')
      if (name === key) return Number(value) || 0
    }
  } catch {
    // not there
  }
  return 0
}
