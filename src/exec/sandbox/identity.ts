/**
 * Who a root worker's commands run as. As host uid 0 a command could read every root-only file the
 * read-only root shows (another run's workspace secrets among them), so a root worker runs them as an
 * unprivileged uid of their own instead: one per workspace, from a range kept for tether
 * (IDENTITY_FIRST …, 65,536 of them), recorded in a registry only root can read.
 *
 * A workspace gets its identity at a run's first command in it: tether takes the folder over (it becomes
 * the identity's, files and folders alike), so commands can change it and nothing else. While it is, the
 * folder's owner names the identity, and the registry confirms the folder is the one that uid was given
 * to — a copy (`cp -a`) or a moved folder is taken over again under a fresh uid. When the run ends the
 * folder goes back to root (handBackWorkspace); the registry keeps its uid for the next run. A uid whose
 * folder is gone is given out again, after its caches are wiped.
 *
 * A workspace that belongs to another user is not taken from them: the run fails with one line.
 */
import { createHash } from 'node:crypto'
import { lstatSync, readFileSync, readlinkSync, realpathSync, type Stats, statSync } from 'node:fs'
import { chown, lchown, lstat, mkdir, readdir, rm, rmdir, stat, symlink, unlink } from 'node:fs/promises'
import { basename, dirname, join, relative } from 'node:path'
import { SandboxUnavailableError } from './errors.js'
import { within } from './folders.js'
import { gitEntryPlanted } from './git-planted.js'

/** The first uid (and gid) kept for commands: 0x70000000, a range systemd leaves unassigned. */
export const IDENTITY_FIRST = 0x70000000
export const IDENTITY_COUNT = 0x10000
/** uid → the workspace it was given to, as symlinks: only root reads or writes here. */
const REGISTRY = '/var/lib/tether/sandbox-identities'
/** Each identity's own caches (the toolchain caches it may not write are replaced by these). */
const CACHES = '/var/cache/tether/sandbox'
/** A lock older than this was left by a worker that died holding it. */
const STALE_LOCK_MS = 30_000

export interface CommandIdentity {
  uid: number
  gid: number
  /** A folder of the identity's own for caches it cannot write where they are. */
  caches: string
}

const inRange = (uid: number) => uid >= IDENTITY_FIRST && uid < IDENTITY_FIRST + IDENTITY_COUNT

let usesIdentities: boolean | undefined

/**
 * Whether this worker runs its commands as identities: it is root, in a user namespace where the whole
 * range maps to real ids (the host's own, or a container's that maps them). Root in a user namespace that
 * maps only itself (`unshare --map-root-user`) cannot become them, and runs commands as a worker that is
 * not root does.
 */
export function isRootWorker(): boolean {
  usesIdentities ??= process.getuid?.() === 0 && mapsRange('uid_map') && mapsRange('gid_map')
  return usesIdentities
}

function mapsRange(file: 'uid_map' | 'gid_map'): boolean {
  let text: string
  try {
    text = readFileSync(`/proc/self/${file}`, 'utf8')
  } catch {
    return false
  }
  return text
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
    .some(
      ([inside = 0, , count = 0]) =>
        inside <= IDENTITY_FIRST && inside + count >= IDENTITY_FIRST + IDENTITY_COUNT,
    )
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code
}

/** System trees a take-over must never touch (a workspace there needs a worker that is not root). */
const SYSTEM = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/run',
  '/sbin',
  '/snap',
  '/sys',
  '/usr',
  '/var',
]

/** A top-level folder, or one in a system tree (a folder below /var/tmp is a temporary one, not a system one). */
function isSystemFolder(path: string): boolean {
  if (dirname(path) === '/' || path === '/var/tmp') return true
  return SYSTEM.some((folder) => within(path, folder)) && !within(path, '/var/tmp')
}

/**
 * The identity commands in `workspace` (an absolute, resolved path) run as, taking the folder over when it
 * has none yet. A take-over leaves `hidden` folders inside the workspace as they are, and is refused for a
 * system folder or one that holds `home`.
 */
export async function commandIdentity(
  workspace: string,
  { home, hidden }: { home: string | undefined; hidden: readonly string[] },
): Promise<CommandIdentity> {
  const owner = statSync(workspace).uid
  if (inRange(owner) && claimOf(owner) === workspace) return identity(owner)
  const refusal = takeOverRefusal(workspace, owner, home)
  if (refusal) throw new SandboxUnavailableError(refusal)
  const uid = await withLock(() => claim(workspace))
  await takeOver(workspace, uid, hidden)
  return identity(uid)
}

/**
 * Why a root worker's run may not work in `workspace` (an absolute, resolved path), or undefined: the
 * folders whose take-over commandIdentity refuses. Asked before the run's first step and before each
 * action too, since the file tools work there as the worker — root — and not as the commands' identity.
 */
export function rootWorkspaceRefusal(workspace: string, home: string | undefined): string | undefined {
  let owner: number
  try {
    owner = statSync(workspace).uid
  } catch {
    return undefined
  }
  if (inRange(owner) && claimOf(owner) === workspace) return undefined
  return takeOverRefusal(workspace, owner, home)
}

/** Why `workspace`, owned by `owner`, may not become its commands' own; undefined when it may. */
function takeOverRefusal(workspace: string, owner: number, home: string | undefined): string | undefined {
  if (owner !== 0 && !inRange(owner)) {
    return (
      `the workspace ${workspace} belongs to uid ${owner}; a root worker runs commands as an identity of ` +
      'its own, which must own the workspace, and does not take folders from other users: use a folder ' +
      'owned by root (tether takes it over) or run the worker as that user'
    )
  }
  const holds = [home, REGISTRY, CACHES].find((folder) => folder && within(folder, workspace))
  if (!holds && !isSystemFolder(workspace)) return undefined
  return (
    `the workspace ${workspace} ${holds ? `holds ${holds}` : 'is a system folder'}; a root worker makes the ` +
    "workspace its commands' own, which it will not do to that folder: use a folder made for the run, " +
    'or run the worker as a user that may change it'
  )
}

function identity(uid: number): CommandIdentity {
  return { uid, gid: uid, caches: join(CACHES, String(uid)) }
}

function claimOf(uid: number): string | undefined {
  try {
    return readlinkSync(join(REGISTRY, String(uid)))
  } catch {
    return undefined
  }
}

/**
 * How often a worker releases the identities whose folders are gone. A release reads the whole registry
 * (thousands of entries on a busy machine) under the lock, so releasing at every claim made each new
 * workspace's first command wait for all the claims before it: 500 runs starting at once, the command
 * `true` took 44 s at p99 (bench/run --concurrent 500).
 */
const RELEASE_EVERY_MS = 10 * 60_000
/** Identities released by one claim at most (each a cache folder to remove): the rest go with the next claims. */
const RELEASE_AT_ONCE = 32
let lastRelease = Number.NEGATIVE_INFINITY

/**
 * A uid for `workspace`: the one it already holds, else a free one, searched from a hash of its path.
 * Identities whose folders are gone are released first (at most every RELEASE_EVERY_MS), their caches
 * wiped: what one workspace's commands left there is not for the next, and would otherwise stay on the disk.
 * Until then such a uid is merely not given out.
 */
async function claim(workspace: string): Promise<number> {
  if (Date.now() - lastRelease >= RELEASE_EVERY_MS && (await releaseAbandoned(workspace)) < RELEASE_AT_ONCE)
    lastRelease = Date.now()
  const start = createHash('sha256').update(workspace).digest().readUInt32BE(0) % IDENTITY_COUNT
  for (let i = 0; i < IDENTITY_COUNT; i++) {
    const uid = IDENTITY_FIRST + ((start + i) % IDENTITY_COUNT)
    try {
      await symlink(workspace, join(REGISTRY, String(uid)))
      await wipeCaches(uid)
      return uid
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error
    }
    if (claimOf(uid) === workspace) return uid
  }
  throw new SandboxUnavailableError(
    `all ${IDENTITY_COUNT} command identities are in use (${REGISTRY}); delete workspaces of finished runs`,
  )
}

/** Releases up to RELEASE_AT_ONCE identities whose folders are gone; how many it released. */
async function releaseAbandoned(workspace: string): Promise<number> {
  let released = 0
  for (const name of await readdir(REGISTRY)) {
    if (released === RELEASE_AT_ONCE) break
    const uid = Number(name)
    if (!inRange(uid)) continue
    const holder = claimOf(uid)
    if (holder === undefined || holder === workspace || !(await abandoned(holder, uid))) continue
    await unlink(join(REGISTRY, name))
    await wipeCaches(uid)
    released += 1
  }
  return released
}

/**
 * A uid is free again once its folder is gone or has been taken over under another uid. A folder still
 * owned by root may be one whose take-over was cut short: it keeps its uid and finishes next time.
 */
async function abandoned(holder: string, uid: number): Promise<boolean> {
  try {
    const owner = (await lstat(holder)).uid
    return owner !== uid && owner !== 0
  } catch (error) {
    return errorCode(error) === 'ENOENT' || errorCode(error) === 'ENOTDIR'
  }
}

/** One claim at a time on this machine: a lock folder, broken when its holder died long ago. */
async function withLock<T>(work: () => Promise<T>): Promise<T> {
  await mkdir(REGISTRY, { recursive: true, mode: 0o700 })
  const lock = join(REGISTRY, '.lock')
  for (;;) {
    try {
      await mkdir(lock)
      break
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error
      const since =
        Date.now() -
        (await stat(lock).then(
          (s) => s.mtimeMs,
          () => Date.now(),
        ))
      if (since > STALE_LOCK_MS) await rmdir(lock).catch(() => undefined)
      else await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  try {
    return await work()
  } finally {
    await rmdir(lock).catch(() => undefined)
  }
}

/**
 * Gives what `picks` chooses in `folder`'s tree to `to` (uid and gid), without following symlinks or
 * leaving the folder's file system; a chosen folder is walked too. A file with more than one hard link is
 * never given: its other link may be outside the tree. A folder's entries go at once (two calls each on
 * libuv's threads, which then work side by side). Stops walking at `until` (a `performance.now()` time).
 */
async function giveTree(
  folder: string,
  to: number,
  picks: (path: string, stats: Stats) => boolean | Promise<boolean>,
  until = Number.POSITIVE_INFINITY,
): Promise<void> {
  const device = (await lstat(folder)).dev
  const give = async (path: string): Promise<boolean> => {
    const stats = await lstat(path).catch(unlessGone)
    if (!stats || stats.dev !== device || !(await picks(path, stats))) return false
    if (!stats.isDirectory() && stats.nlink > 1) return false
    if (stats.uid !== to || stats.gid !== to) await lchown(path, to, to).catch(unlessGone)
    return stats.isDirectory()
  }
  const walk = async (path: string): Promise<void> => {
    if (performance.now() > until) return
    const names = (await readdir(path).catch(unlessGone)) ?? []
    const folders = await Promise.all(names.map((name) => give(join(path, name))))
    for (const [i, name] of names.entries()) if (folders[i]) await walk(join(path, name))
  }
  await walk(folder)
}

/** Undefined for an entry removed while a walk went (nothing to give); any other failure is thrown. */
function unlessGone(error: unknown): undefined {
  const code = errorCode(error)
  if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
  throw error
}

/**
 * Makes the workspace's files and folders the identity's, without entering a hidden folder. What stays as
 * it is (readable if it was, not writable): what belongs to another user (with everything below it), and a
 * file with more than one hard link. The workspace folder itself goes last: its owner says the take-over is
 * done.
 */
async function takeOver(workspace: string, uid: number, hidden: readonly string[]): Promise<void> {
  await giveTree(
    workspace,
    uid,
    (path, stats) => !hidden.includes(path) && (stats.uid === 0 || inRange(stats.uid)),
  )
  await chown(workspace, uid, uid)
}

/**
 * Gives what was found changed in a taken-over workspace between two of its run's steps (`paths`, relative
 * to it: an edit made outside the run, by root on this machine while the run waited) to its identity, as the
 * take-over gave the rest; a changed folder with what is in it. Otherwise the run's next command could not
 * write a file root made there, or into a folder it made. The walk goes from the workspace down to those
 * paths only, not following links, with the take-over's rules (root's or an identity's; one link). Nothing
 * happens for a worker that is not root or a folder no identity holds.
 */
export async function adoptEdits(folder: string, paths: readonly string[]): Promise<void> {
  if (!isRootWorker() || paths.length === 0) return
  const workspace = realpathSync(folder)
  const uid = (await lstat(workspace)).uid
  if (!inRange(uid) || claimOf(uid) !== workspace) return
  const edited = new Set(paths.map((path) => join(workspace, path)))
  // The folders on the way to an edited path, to walk through; an edited path's own entries, to give.
  const onTheWay = new Set<string>()
  for (const path of edited) {
    for (let up = dirname(path); up !== workspace && within(up, workspace); up = dirname(up)) onTheWay.add(up)
  }
  const inEdited = (path: string) => {
    for (let at = path; at !== workspace && within(at, workspace); at = dirname(at))
      if (edited.has(at)) return true
    return false
  }
  await giveTree(
    workspace,
    uid,
    (path, stats) => (onTheWay.has(path) || inEdited(path)) && (stats.uid === 0 || inRange(stats.uid)),
  )
}

/** How long a run's end may spend handing its workspace back (inside its record's 10 s start-to-close). */
const HAND_BACK_MS = 5_000

/** What a hand-back did: the identity it took the folder from, and the repositories it left to it. */
export interface HandBack {
  uid: number
  /** `.git` entries (relative to the workspace) that stay the identity's, with the folders holding them. */
  kept: string[]
}

/**
 * Gives a taken-over workspace back to root when its run (started at `since`) ends: the folder and what is
 * the identity's in it — what commands made included — become root's again, so root's own tools see it as
 * before the run: git above all, which refuses a repository another user owns ("dubious ownership").
 *
 * Except a repository that would make git run a program: a `.git` that is, or holds, a file written during
 * the run that makes git run one (git-planted.ts) stays the identity's with everything in it, and so does
 * the folder holding it (a bare repository: its own folder), so root's git keeps refusing it — given to
 * root, a `core.fsmonitor` a command planted would run as root. The folder itself and its `.git` go first,
 * then the rest for up to
 * HAND_BACK_MS; what a larger tree has left stays the identity's until the next run takes it over again,
 * under the same identity (the registry keeps the uid for the folder, and with it the identity's caches).
 * A file with more than one hard link stays the identity's: its other link may be in its caches. Nothing
 * happens for a worker that is not root, one whose `TETHER_HAND_BACK` is `0`, or a folder no identity holds.
 */
export async function handBackWorkspace(folder: string, since: Date): Promise<HandBack | undefined> {
  // A worker told to keep folders between runs spares each run's first command the take-over's walk.
  if (!isRootWorker() || process.env.TETHER_HAND_BACK === '0') return undefined
  let workspace: string
  let uid: number
  try {
    workspace = realpathSync(folder)
    uid = (await lstat(workspace)).uid
  } catch {
    return undefined
  }
  if (!inRange(uid) || claimOf(uid) !== workspace) return undefined
  const until = performance.now() + HAND_BACK_MS
  const kept = new Set<string>()
  const ours = async (path: string, stats: Stats) => {
    if (stats.uid !== uid) return false
    const dotGit = basename(path) === '.git'
    // A folder with a HEAD may be a bare repository, which git run inside it takes as one.
    const bare =
      !dotGit && stats.isDirectory() && (await lstat(join(path, 'HEAD')).then(Boolean, () => false))
    if (!(dotGit || bare) || !gitEntryPlanted(path, since)) return true
    kept.add(relative(workspace, path))
    // Given back already (a folder goes before its entries): git also refuses a worktree another user owns.
    if (dotGit) await lchown(dirname(path), uid, uid)
    return false
  }
  await chown(workspace, 0, 0)
  const git = join(workspace, '.git')
  const gitFolder = await lstat(git).catch(() => undefined)
  if (gitFolder?.isDirectory() && (await ours(git, gitFolder))) {
    await lchown(git, 0, 0)
    await giveTree(git, 0, ours, until)
  }
  await giveTree(workspace, 0, ours, until)
  return { uid, kept: [...kept] }
}

/** Whether `path` belongs to a command identity (false when it is gone): what a hand-back kept from root. */
export function heldByIdentity(path: string): boolean {
  try {
    return inRange(lstatSync(path).uid)
  } catch {
    return false
  }
}

/** Whether `uid`/`gid` may write into `folder` by its mode bits (what a bind mount keeps). */
export function mayWrite(folder: string, who: { uid: number; gid: number }): boolean {
  try {
    const stats = lstatSync(folder)
    if (!stats.isDirectory()) return false
    const bits = stats.uid === who.uid ? 0o200 : stats.gid === who.gid ? 0o020 : 0o002
    return (stats.mode & bits) !== 0
  } catch {
    return false
  }
}

/** Cache folders made (and handed to their identity) by this process: checking again costs every command. */
const madeCaches = new Set<string>()

/** The identity's own folder standing in for `path` (made on first use, owned by the identity). */
export async function ownCache(who: CommandIdentity, path: string): Promise<string> {
  const folder = join(who.caches, path)
  if (madeCaches.has(folder)) return folder
  await mkdir(who.caches, { recursive: true, mode: 0o700 })
  await chown(who.caches, who.uid, who.gid)
  await mkdir(folder, { recursive: true })
  await chown(folder, who.uid, who.gid)
  madeCaches.add(folder)
  return folder
}

/** Wipes an identity's caches before its uid goes to another workspace. */
async function wipeCaches(uid: number): Promise<void> {
  const caches = identity(uid).caches
  for (const folder of madeCaches) if (within(folder, caches)) madeCaches.delete(folder)
  await rm(caches, { recursive: true, force: true })
}
