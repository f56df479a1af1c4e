/**
 * Git's own files inside the sandbox. git runs programs its configuration names (`core.fsmonitor` on
 * `git status`, a diff driver's `textconv` on `git log -p`) and hooks, so a command may change the
 * workspace but never those. For the workspace's repository and every nested one found:
 *
 * - the git folder is bound onto itself, so it cannot be renamed, removed or replaced by another;
 * - its `config` (and `config.worktree`), `hooks/` and `info/` (attributes) are read-only; the object
 *   store, the index and the refs stay writable, so `git add` and `git commit` work;
 * - a `commondir` file (it points git at another folder's configuration) is read-only in a linked
 *   worktree's folder, where git writes one, and hidden anywhere else, where git never does (git then
 *   stops with an error naming it, rather than read a configuration a command planted);
 * - submodules' and linked worktrees' folders inside it (`modules/…`, `worktrees/…`) get the same;
 * - a `.git` file (`gitdir: …`) is read-only, and the folder it names is protected when it lies in the
 *   workspace (outside, the host is read-only anyway).
 *
 * Missing `hooks/` and `info/` folders (and a missing `config`) are created empty first: a bind needs
 * something to cover, and an empty one is what git would create. The binds are bwrap's `-try` kind: a path
 * bwrap cannot reach (another user's folder, one removed since the walk) is one no command inside reaches.
 */
import {
  closeSync,
  constants,
  type Dir,
  existsSync,
  lstatSync,
  mkdirSync,
  opendirSync,
  openSync,
  readSync,
  realpathSync,
  type Stats,
  statSync,
  writeFileSync,
} from 'node:fs'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'
import { subfolders } from './folders.js'

/**
 * How many folders each walk reads at most: the walk of the workspace for nested repositories (breadth
 * first, so shallow ones are found first, with dependency and build folders last; symbolic links are not
 * followed) and the walk of a git folder's `modules/`. Past it, the walk stops, and repositories deeper in a very large tree keep a writable
 * configuration. That stays closed for everything that runs without being asked: git run in another
 * directory than the workspace root is never read-only (../../commands/readonly.ts), the file tools never
 * write a `.git`, bare repositories are never discovered (env.ts), and the workspace's own repository and
 * its submodules under `.git/modules` are protected before the walk starts. What the bound leaves open is
 * a rule-allowed command that rewrites an existing deep repository's configuration — which such a command
 * could as well do by creating a new repository, which no bind stops.
 */
const GIT_WALK_LIMIT = 256
/** Entries the workspace walk looks at in all, so one folder of a million files costs no more. */
const GIT_WALK_ENTRIES = 50_000

/** The bwrap arguments that protect the git folders of `workspace` (call after binding the workspace). */
export function gitBinds(workspace: string): string[] {
  let root: string
  try {
    root = realpathSync(workspace)
  } catch {
    return []
  }
  const protector = new Protector(workspace, root)
  // The workspace's own repository first, so the walk's bound can never leave it out.
  protector.entry(join(workspace, '.git'))
  for (const path of nestedGitEntries(workspace).found) protector.entry(path)
  return protector.args
}

/** The entries a folder git takes for a bare repository has. */
const BARE_PARTS = new Set(['HEAD', 'objects', 'refs'])

/** Folders of installed dependencies and build output: walked last, so the bound goes to the project's own tree. */
const WALKED_LAST = new Set([
  'node_modules',
  'bower_components',
  'vendor',
  'target',
  'dist',
  'build',
  '.venv',
  'venv',
  '__pycache__',
  '.cache',
  '.next',
  '.gradle',
  'Pods',
])

/**
 * Every `.git` below the workspace root, up to the walk's bound (the sandbox's own unless given); the
 * folders below it that look like bare repositories (a `HEAD`, `objects` and `refs`), which git run inside
 * one takes for a repository; and whether the walk looked everywhere.
 */
export function nestedGitEntries(
  workspace: string,
  bound = { folders: GIT_WALK_LIMIT, entries: GIT_WALK_ENTRIES },
): { found: string[]; bare: string[]; complete: boolean } {
  const found: string[] = []
  const bare: string[] = []
  const first = [workspace]
  const last: string[] = []
  let read = 0
  let entries = 0
  /** Whether every folder of `queue` was read whole. */
  const walk = (queue: string[], deferred: boolean): boolean => {
    let next = 0
    for (; next < queue.length && read < bound.folders && entries < bound.entries; next++) {
      const dir = queue[next]!
      read++
      let handle: Dir | undefined
      let gitParts = 0
      try {
        handle = opendirSync(dir)
        for (let entry = handle.readSync(); entry; entry = handle.readSync()) {
          if (++entries > bound.entries) break
          const path = join(dir, entry.name)
          if (BARE_PARTS.has(entry.name)) gitParts++
          if (entry.name === '.git') {
            if (dir !== workspace) found.push(path)
          } else if (entry.isDirectory()) (deferred || WALKED_LAST.has(entry.name) ? last : queue).push(path)
        }
        if (gitParts === BARE_PARTS.size && dir !== workspace) bare.push(dir)
      } catch {
        // Unreadable: nothing in it is found, as nothing in it can be reached.
      } finally {
        handle?.closeSync()
      }
    }
    return next >= queue.length && entries <= bound.entries
  }
  const shallow = walk(first, false)
  const deferred = walk(last, true)
  return { found, bare, complete: shallow && deferred }
}

class Protector {
  readonly args: string[] = []
  private readonly seen = new Set<string>()
  private readonly reachable = new Map<string, boolean>()

  constructor(
    private readonly workspace: string,
    private readonly root: string,
  ) {}

  /** A `.git` entry: a folder, a `gitdir:` file, or a link to a folder. */
  entry(path: string): void {
    if (!this.enterable(dirname(path))) return
    let stat: Stats | undefined
    try {
      stat = lstatSync(path, { throwIfNoEntry: false })
    } catch {
      return
    }
    if (!stat) return
    if (stat.isDirectory()) this.gitFolder(path)
    else if (stat.isFile()) {
      this.args.push('--ro-bind-try', path, path)
      const named = /^gitdir:\s*(.+?)\s*$/m.exec(readHead(path))?.[1]
      if (named) this.inWorkspace(resolve(dirname(path), named))
    } else this.inWorkspace(path)
  }

  /** A git folder named by a file or a link: protected when it really lies in the workspace. */
  private inWorkspace(path: string): void {
    let real: string
    try {
      real = realpathSync(path)
    } catch {
      return
    }
    const rel = relative(this.root, real)
    if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || rel.startsWith(sep)) return
    const inside = join(this.workspace, rel)
    if (isDirectory(inside)) this.gitFolder(inside)
  }

  /** `perWorktree`: the main folder's configuration turns on `extensions.worktreeConfig`. */
  private gitFolder(dir: string, perWorktree = false): void {
    const key = realpathOr(dir)
    if (this.seen.has(key) || !this.enterable(dir)) return
    this.seen.add(key)
    // A linked worktree's folder (`worktrees/NAME`) holds only its own part; the rest is the main folder's.
    const linked = basename(dirname(dir)) === 'worktrees'
    this.args.push('--bind-try', dir, dir)
    const config = join(dir, 'config')
    if (!linked) {
      ensure(config, 'file')
      this.readOnly(config)
      for (const folder of ['hooks', 'info']) {
        ensure(join(dir, folder), 'dir')
        this.readOnly(join(dir, folder))
      }
      perWorktree = WORKTREE_CONFIG.test(readHead(config))
    }
    // git reads it only under that extension; then an empty one replaces what a command could plant.
    const worktreeConfig = join(dir, 'config.worktree')
    if (perWorktree) ensure(worktreeConfig, 'file')
    this.readOnly(worktreeConfig)
    const commondir = join(dir, 'commondir')
    if (existsSync(commondir)) {
      if (linked) this.readOnly(commondir)
      else this.args.push('--ro-bind', '/dev/null', commondir)
    }
    for (const module of gitFoldersUnder(join(dir, 'modules'))) this.gitFolder(module)
    for (const worktree of subfolders(join(dir, 'worktrees'))) this.gitFolder(worktree, perWorktree)
  }

  private readOnly(path: string): void {
    if (existsSync(path)) this.args.push('--ro-bind-try', path, path)
  }

  /**
   * Whether bwrap, in its user namespace, can go into `dir` (a folder in the workspace) and so bind what is
   * in it: by the permission bits, as this worker's user without privileges over files it does not own (the
   * namespace's root has none over a user it does not map). What bwrap cannot reach, no command reaches.
   */
  private enterable(dir: string): boolean {
    if (dir === this.workspace) return true
    if (dir === dirname(dir)) return false
    let known = this.reachable.get(dir)
    if (known === undefined) {
      known = this.enterable(dirname(dir)) && searchable(dir)
      this.reachable.set(dir, known)
    }
    return known
  }
}

const USER = process.getuid?.()
const GROUPS = new Set([process.getgid?.(), ...(process.getgroups?.() ?? [])])

function searchable(dir: string): boolean {
  try {
    const { uid, gid, mode } = statSync(dir)
    if (uid === USER) return (mode & 0o100) !== 0
    if (GROUPS.has(gid)) return (mode & 0o010) !== 0
    return (mode & 0o001) !== 0
  } catch {
    return false
  }
}

/** The git folders under a `modules/` folder (a submodule's name may hold slashes), up to the bound. */
export function gitFoldersUnder(modules: string): string[] {
  const found: string[] = []
  const queue = [modules]
  for (let next = 0; next < queue.length && next < GIT_WALK_LIMIT; next++) {
    for (const dir of subfolders(queue[next]!)) {
      if (existsSync(join(dir, 'HEAD'))) found.push(dir)
      else queue.push(dir)
    }
  }
  return found
}

/** Creates an empty file or folder where none is; a failure leaves it to the bind (or its absence). */
function ensure(path: string, kind: 'file' | 'dir'): void {
  try {
    if (kind === 'dir') mkdirSync(path)
    else writeFileSync(path, '', { flag: 'wx' })
  } catch {
    // It exists, or this worker cannot create it (then neither can a command).
  }
}

const WORKTREE_CONFIG = /^\s*worktreeconfig\s*=\s*(true|yes|on|1)\s*$/im

/** The start of a small text file (a `.git` file, a configuration): never more than a few KiB, whatever is there. */
export function readHead(path: string): string {
  let fd: number | undefined
  try {
    if (!statSync(path).isFile()) return ''
    // Non-blocking, so a FIFO put in its place cannot stall the worker.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
    const buffer = Buffer.alloc(16_384)
    return buffer.toString('utf8', 0, readSync(fd, buffer, 0, buffer.length, 0))
  } catch {
    return ''
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory()
  } catch {
    return false
  }
}
