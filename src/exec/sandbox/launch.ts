/**
 * Turning one command into a sandboxed launch:
 * `sh -c <limits, filter, cgroups> [prlimit …] bwrap … [setpriv …] [node bridge] argv`.
 * In two parts: the plan (what the sandbox is made of, the same for every command of a workspace and policy)
 * and the resources one sandbox takes (its cgroup, its egress proxy), so that ahead.ts can build a
 * command's sandbox before the command is known.
 *
 * Inside: the host's root read-only; the workspace read-write; private `/tmp`, `/run`, `/dev/shm` and home,
 * in memory and sized to fit the memory limit; toolchain folders and caches as given; tether's state and
 * host credentials replaced by empty ones; its own PID, network, IPC and UTS namespaces with every
 * capability dropped, so nothing it starts outlives it and the worker's loopback (the audit database,
 * Temporal) is out of reach; no network unless the policy grants some, and then only through the egress
 * proxy; a system-call filter (seccomp.ts) that refuses new namespaces, mounts and other kernel surface.
 *
 * Who the command is: a worker that is not root runs bwrap unprivileged, in a user namespace of its own
 * where further user namespaces are disabled. A root worker cannot do that (bwrap would map the command's
 * uid to host root, whose files it could then read), so bwrap runs privileged without a user namespace and
 * `setpriv` makes the command the workspace's own unprivileged identity (identity.ts) just before it starts.
 */
import { existsSync, lstatSync, realpathSync, rmSync, statSync } from 'node:fs'
import { homedir, totalmem } from 'node:os'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { pinGitConfig } from '../env.js'
import type { LaunchedProcess } from '../launcher.js'
import { socketFolder, socketRoot } from '../sockets.js'
import { CommandCgroup } from './cgroup.js'
import { diskShortfall } from './disk.js'
import { hiddenNames, linkedFolders, within } from './folders.js'
import { gitBinds } from './git.js'
import { type CommandIdentity, commandIdentity, isRootWorker, mayWrite, ownCache } from './identity.js'
import { BRIDGE, EgressProxy } from './proxy.js'
import { type SandboxRuntime, SandboxUnavailableError, SETPRIV_MISSING, sandboxRuntime } from './runtime.js'
import { seccompFilterFile } from './seccomp.js'
import type { NetworkAccess, SandboxLimits, SandboxOptions, SandboxReport } from './types.js'

const GiB = 1024 ** 3
export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  processes: 4096,
  memoryBytes: Math.min(8 * GiB, Math.floor(totalmem() / 2)),
  fileSizeBytes: 16 * GiB,
})

/** The port the bridge listens on inside the sandbox's own network namespace. */
const PROXY_PORT = 3128
/** Where the proxy's socket appears inside the sandbox (its private /tmp). */
const PROXY_SOCKET_INSIDE = '/tmp/.tether-egress.sock'

const PRLIMIT_MISSING =
  'this machine gives the worker no cgroups to limit processes and memory, and prlimit (util-linux) is not on ' +
  'PATH for the rlimits that would do it instead; install util-linux, or run the worker where it may create cgroups'

/** What a root worker's bwrap keeps until setpriv makes the command its identity (which drops them all). */
const IDENTITY_CAPS = ['CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP', 'CAP_DAC_READ_SEARCH']
/** What setpriv drops besides the uid: capabilities a later program could inherit, and the bounding set. */
const DROP_CAPS = ['--inh-caps=-all', '--bounding-set=-all']

/** Host files that a root worker could otherwise read through the read-only root. */
const HOST_SECRETS = ['/etc/shadow', '/etc/gshadow', '/etc/sudoers']

/** What to spawn instead of the bare argv, and how to finish up afterwards. */
export interface SandboxedLaunch {
  program: string
  args: string[]
  env: Record<string, string>
  /** Set when the sandbox was built ahead and waits for the command: start it there instead (ahead.ts). */
  ahead?: AheadStart
  /** Checks the disk bound while the command runs, calling `stop` once the reserve is eaten; returns the unwatch. */
  watch(stop: () => void): () => void
  /** Limits hit and network decisions; call once the command's tree is gone. */
  report(exit: { signal?: string | undefined; output: string }): SandboxReport
  /** Releases the cgroup, the proxy and the temporary folder. */
  close(): Promise<void>
}

/** A sandbox built ahead of its command, handed to the runner. */
export interface AheadStart {
  /** The sandbox's process: running, its streams the command's. */
  child: LaunchedProcess
  /**
   * Hands it the command. Resolves true once the command is starting, false when the sandbox ended before
   * it could start it (nothing ran: build another); rejects when the sandbox answered nonsense (it is killed).
   */
  start(): Promise<boolean>
}

/** Nothing was started: a bound was reached before the command could be (the disk's reserve). */
export class SandboxBoundError extends Error {
  override name = 'SandboxBoundError'
  constructor(
    message: string,
    readonly report: SandboxReport,
  ) {
    super(message)
  }
}

/**
 * Without a memory cgroup to count them against the memory limit, each in-memory folder gets a share of
 * it, so that all of them together stay inside; with one, each may grow to the limit and the cgroup counts
 * what they hold along with the processes' memory.
 */
const MEMORY_SHARES = { tmp: 1 / 2, home: 1 / 4, shm: 1 / 8, run: 1 / 16 }
/** How long a command's leftover processes may take to die before its cgroup is given back all the same. */
const VACATE_MS = 2_000
/** How often the disk bound is checked while a command runs. */
const DISK_WATCH_MS = 250
/** What a full file system says, in every libc's words. */
const NO_SPACE = /No space left on device/i

/** Folders first, shallow before deep, so a deeper mount lands on top of its parent's. */
function byDepth(paths: Iterable<string>): string[] {
  return [...new Set(paths)]
    .filter((path) => isAbsolute(path) && path !== '/')
    .sort((a, b) => a.split(sep).length - b.split(sep).length || a.localeCompare(b))
}

/**
 * Mounts (by depth) without those inside an earlier one, whose tree already shows them as they are (a
 * read-only bind is recursive) or hides them (nothing below an emptied folder is there): each costs bwrap
 * a read of the whole mount table (PATH entries such as ~/.cargo/bin beside ~/.cargo made a tenth of a
 * sandbox's start). One reached through a symlink, or not there, stays, and so does one `stays` names.
 */
export function withoutNested(
  paths: readonly string[],
  stays: (path: string, outer: string) => boolean = () => false,
): string[] {
  const kept: string[] = []
  for (const path of paths) {
    const outer = kept.find((folder) => path !== folder && within(path, folder))
    if (!outer || stays(path, outer) || !realInside(path, outer)) kept.push(path)
  }
  return kept
}

/** Whether `path` is, on disk, where its name puts it in `outer`'s real tree (no symlink on the way down). */
function realInside(path: string, outer: string): boolean {
  try {
    return realpathSync(path) === join(realpathSync(outer), relative(outer, path))
  } catch {
    return false
  }
}

/** The folders strictly between `workspace` and each path of `hidden` inside it, top down, each once. */
function holders(workspace: string, hidden: readonly string[]): string[] {
  const folders = new Set<string>()
  for (const path of hidden) {
    if (path === workspace || !within(path, workspace)) continue
    for (
      let folder = dirname(path);
      folder !== workspace && within(folder, workspace);
      folder = dirname(folder)
    )
      folders.add(folder)
  }
  // Real folders only: a symlink's mount would land where it leads, and a missing one has nothing to move.
  return byDepth(folders).filter((folder) => lstatSync(folder, { throwIfNoEntry: false })?.isDirectory())
}

function isDirectory(path: string): boolean | undefined {
  try {
    // Asked for each launch about paths that are often missing: an exception each would cost more.
    return statSync(path, { throwIfNoEntry: false })?.isDirectory()
  } catch {
    return undefined
  }
}

/**
 * Writable folders as bind pairs; missing ones are left out. A folder the command's identity may not write
 * (a root worker's caches in root's home) is replaced by a folder of the identity's own at the same place.
 */
async function writableBinds(
  paths: readonly string[],
  identity: CommandIdentity | undefined,
): Promise<Array<[source: string, target: string]>> {
  const binds: Array<[string, string]> = []
  for (const path of byDepth(paths)) {
    if (!existsSync(path)) continue
    binds.push([identity && !mayWrite(path, identity) ? await ownCache(identity, path) : path, path])
  }
  return binds
}

/**
 * What a workspace's sandbox is made of under one policy, worked out before each command (a take-over,
 * the disk's reserve, git's folders, what to hide): everything but the command and the folder it starts in.
 */
export interface SandboxPlan {
  runtime: SandboxRuntime
  limits: SandboxLimits
  workspace: string
  identity: CommandIdentity | undefined
  /** The file systems that keep their reserve: the workspace's and the writable caches'. */
  diskPaths: string[]
  /** The command's environment inside. */
  env: Record<string, string>
  network: NetworkAccess | undefined
  /** What runs the command inside when it has network: the bridge to the proxy (empty without). */
  bridge: string[]
  privateHome: string | undefined
  readOnly: string[]
  writable: Array<[source: string, target: string]>
  hidden: string[]
  workspaceAccess: NonNullable<SandboxOptions['workspaceAccess']>
  /** Git's configuration read-only (git.ts): bwrap arguments, for a workspace bound read-write. */
  gitArgs: string[]
}

/**
 * The plan for a command run with `options` and `env` (see SandboxPlan). Throws SandboxBoundError when
 * the disk's reserve is eaten, SandboxUnavailableError when the workspace cannot be given an identity.
 */
export async function planSandbox(
  options: SandboxOptions,
  env: Record<string, string>,
): Promise<SandboxPlan> {
  const runtime = options.runtime ?? sandboxRuntime(env.PATH)
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits }
  const workspace = resolve(options.workspace)
  const home = options.home ?? homedir()
  // The home folder is emptied (the binds below bring back what commands need, the workspace among them).
  // A workspace that *is* the home folder, or holds it, keeps it: the operator chose to expose it.
  const privateHome = home && isAbsolute(home) && home !== '/' && !within(home, workspace) ? home : undefined
  // tether's sockets are in the host's /tmp, which the sandbox replaces; a bind that brings it back hides them.
  const sockets = socketRoot()
  const showsSockets = [workspace, ...(options.readOnly ?? []), ...(options.writable ?? [])].some((path) =>
    within(sockets, path),
  )
  // Each is hidden under every name the sandbox shows it by. A hidden path inside a hidden folder stays
  // hidden on its own only inside the workspace that folder holds (the workspace is bound back into it).
  // Only a folder bound inside one the sandbox replaces can show another name: elsewhere its mount lands
  // where its own symlinks lead.
  const replaced = ['/tmp', '/dev/shm', '/run', ...(privateHome ? [privateHome] : [])]
  const linked = linkedFolders(
    [workspace, ...(options.readOnly ?? []), ...(options.writable ?? [])].filter((folder) =>
      replaced.some((root) => folder !== root && within(folder, root)),
    ),
  )
  const hidden = withoutNested(
    byDepth(
      [...HOST_SECRETS, ...(options.hide ?? []), ...(showsSockets ? [sockets] : [])].flatMap((path) =>
        hiddenNames(resolve(path), linked),
      ),
    ),
    (path, outer) => within(path, workspace) && within(workspace, outer),
  )
  const identity = isRootWorker() ? await commandIdentity(workspace, { home, hidden }) : undefined
  const writable = await writableBinds(options.writable ?? [], identity)
  const diskPaths = [workspace, ...writable.map(([source]) => source)]
  const full = diskShortfall(diskPaths)
  if (full) {
    throw new SandboxBoundError(full, {
      limits: { ...limits, enforcedBy: 'rlimit' },
      ...(identity ? { identity: { uid: identity.uid, gid: identity.gid } } : {}),
      limitHit: 'disk',
      disk: full,
    })
  }
  const innerEnv: Record<string, string> = { ...env, TMPDIR: '/tmp' }
  pinGitConfig(innerEnv)
  if (home) innerEnv.HOME = home
  let bridge: string[] = []
  if (options.network) {
    const url = `http://127.0.0.1:${PROXY_PORT}`
    Object.assign(innerEnv, {
      HTTP_PROXY: url,
      HTTPS_PROXY: url,
      http_proxy: url,
      https_proxy: url,
      NO_PROXY: 'localhost,127.0.0.1,::1',
      no_proxy: 'localhost,127.0.0.1,::1',
    })
    bridge = [process.execPath, '-e', BRIDGE, '--', String(PROXY_PORT), PROXY_SOCKET_INSIDE, '--']
  }
  const workspaceAccess = options.workspaceAccess ?? 'read-write'
  return {
    runtime,
    limits,
    workspace,
    identity,
    diskPaths,
    env: innerEnv,
    network: options.network,
    bridge,
    privateHome,
    readOnly: withoutNested(byDepth(options.readOnly ?? [])),
    writable,
    hidden,
    workspaceAccess,
    gitArgs: workspaceAccess === 'read-write' ? gitBinds(workspace) : [],
  }
}

/** The parts of one sandbox that are its own: what its launch names, and so what its key leaves out. */
export interface SandboxParts {
  /** The files that put a process into its cgroup(s), and whether the cgroup caps memory. */
  cgroup: { procsFiles: string[]; capsMemory: boolean } | undefined
  /** The egress proxy's socket on the host. */
  proxySocket: string | undefined
}

/**
 * The launch of a sandbox made of `plan` and `parts`, starting in `chdir` (a folder of the workspace) with
 * `command` as what runs inside (after setpriv, for a root worker).
 */
export function launchArgv(
  plan: SandboxPlan,
  parts: SandboxParts,
  chdir: string,
  command: string[],
): string[] {
  const { runtime, limits, identity, cgroup } = { ...plan, ...parts }
  const size = (share: number) =>
    String(cgroup?.capsMemory ? limits.memoryBytes : Math.max(1, Math.floor(limits.memoryBytes * share)))
  // Namespaces: see the module comment for why a root worker's bwrap has no user namespace.
  const args = identity
    ? ['--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts', '--unshare-cgroup-try']
    : ['--unshare-all', '--unshare-user', '--disable-userns']
  args.push('--cap-drop', 'ALL')
  // Until setpriv makes it the identity (which drops every capability and empties the bounding set): what
  // it takes to become it, and to enter the identity's workspace (mode 700, say) for --chdir.
  if (identity) for (const cap of IDENTITY_CAPS) args.push('--cap-add', cap)
  args.push('--die-with-parent', '--new-session', '--hostname', 'tether-sandbox')
  // The launch shell opens the filter on descriptor 3; bwrap reads it and closes it.
  args.push('--seccomp', '3', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc')
  const mounts = new MountPlan(args)
  mounts.tmpfs('/dev/shm', '1777', size(MEMORY_SHARES.shm))
  mounts.tmpfs('/tmp', '1777', size(MEMORY_SHARES.tmp))
  if (isDirectory('/run')) mounts.tmpfs('/run', '0755', size(MEMORY_SHARES.run))
  if (plan.privateHome) mounts.tmpfs(plan.privateHome, '1777', size(MEMORY_SHARES.home))
  for (const path of plan.readOnly) mounts.bind('--ro-bind-try', path, path)
  for (const [source, target] of plan.writable) mounts.bind('--bind', source, target)
  // A hidden folder that holds the workspace is emptied first and the workspace bound back into it;
  // every other one is hidden last, so it covers whatever the binds above brought back.
  const { workspace, hidden } = plan
  for (const path of hidden.filter((path) => within(workspace, path))) mounts.hide(path)
  if (plan.workspaceAccess === 'none') mounts.hide(workspace)
  else if (plan.workspaceAccess === 'read-only') mounts.bind('--ro-bind', workspace, workspace)
  else {
    mounts.bind('--bind', workspace, workspace)
    // Git's configuration, hooks and info inside it read-only (git.ts): bound on the workspace's own content.
    args.push(...plan.gitArgs)
  }
  // Every folder between the workspace and what is hidden in it is a mount point of its own, which no
  // command can rename: a folder moved would take the hidden file to a name the next sandbox leaves open.
  if (plan.workspaceAccess === 'read-write')
    for (const folder of holders(workspace, hidden)) mounts.bind('--bind', folder, folder)
  for (const path of hidden.filter((path) => !within(workspace, path))) mounts.hide(path)
  // The empty folders that hide, and /dev, are bwrap's own tmpfs: read-only, or a command could fill them.
  for (const path of hidden.filter((path) => isDirectory(path))) args.push('--remount-ro', path)
  args.push('--remount-ro', '/dev')

  let inside = command
  if (parts.proxySocket) {
    args.push('--bind', parts.proxySocket, PROXY_SOCKET_INSIDE)
    if (isAbsolute(process.execPath)) args.push('--ro-bind-try', process.execPath, process.execPath)
  }
  if (identity) {
    // The bridge connects to the proxy's socket as the identity, which does not own it.
    if (parts.proxySocket) args.push('--chmod', '0666', PROXY_SOCKET_INSIDE)
    if (!runtime.setpriv) throw new SandboxUnavailableError(SETPRIV_MISSING)
    const { uid, gid } = identity
    inside = [
      runtime.setpriv,
      `--reuid=${uid}`,
      `--regid=${gid}`,
      '--clear-groups',
      ...DROP_CAPS,
      '--',
      ...inside,
    ]
  }
  args.push('--chdir', chdir, '--', ...inside)

  let launch: string[] = [runtime.bwrap, ...args]
  // What the cgroup does not cap, rlimits do. RLIMIT_NPROC counts the processes of the command's uid, which
  // for a root worker is the workspace's identity (root itself is never held to it).
  const rlimits = [
    ...(cgroup ? [] : [`--nproc=${limits.processes}`]),
    ...(cgroup?.capsMemory ? [] : [`--data=${limits.memoryBytes}`]),
  ]
  if (rlimits.length > 0) {
    if (!runtime.prlimit) throw new SandboxUnavailableError(PRLIMIT_MISSING)
    launch = [runtime.prlimit, ...rlimits, '--', ...launch]
  }
  // One shell sets the limits every shell can set, opens the system-call filter for bwrap and joins the
  // command's cgroups, then becomes the launch: nothing the command starts runs outside them. (`ulimit -f`
  // counts 512-byte blocks.)
  return [
    '/bin/sh',
    '-c',
    'ulimit -f "$1" && ulimit -c 0 || exit 125; [ "$2" = - ] || ulimit -t "$2" || exit 125; ' +
      'exec 3<"$3" || exit 125; shift 3; ' +
      'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"',
    'tether-sandbox',
    String(Math.max(1, Math.floor(limits.fileSizeBytes / 512))),
    limits.cpuSeconds ? String(limits.cpuSeconds) : '-',
    seccompFilterFile(),
    ...(cgroup?.procsFiles ?? []),
    '--',
    ...launch,
  ]
}

/**
 * What one sandbox holds while it exists — its cgroup, its egress proxy and the proxy's folder — and what
 * it says of its command once that has ended.
 */
export class SandboxResources {
  private diskHit: string | undefined

  private constructor(
    readonly plan: SandboxPlan,
    readonly cgroup: CommandCgroup | undefined,
    readonly proxy: EgressProxy | undefined,
    private readonly folder: string | undefined,
  ) {}

  /** Takes a cgroup and starts a proxy for a sandbox of `plan`; the proxy judges by `plan.network`. */
  static async acquire(plan: SandboxPlan): Promise<SandboxResources> {
    const cgroup = plan.runtime.cgroups ? CommandCgroup.acquire(plan.runtime.cgroups, plan.limits) : undefined
    let folder: string | undefined
    try {
      let proxy: EgressProxy | undefined
      if (plan.network) {
        folder = socketFolder('egress-')
        proxy = await EgressProxy.start(join(folder, 'proxy.sock'), plan.network)
      }
      return new SandboxResources(plan, cgroup, proxy, folder)
    } catch (error) {
      cgroup?.release()
      if (folder) rmSync(folder, { recursive: true, force: true })
      throw error
    }
  }

  get parts(): SandboxParts {
    const { cgroup, proxy, folder } = this
    return {
      cgroup: cgroup && { procsFiles: cgroup.procsFiles, capsMemory: cgroup.capsMemory },
      proxySocket: proxy && folder ? join(folder, 'proxy.sock') : undefined,
    }
  }

  /** The launch of this sandbox (see launchArgv). */
  argv(chdir: string, command: string[]): string[] {
    return launchArgv(this.plan, this.parts, chdir, command)
  }

  watch(stop: () => void): () => void {
    const timer = setInterval(() => {
      this.diskHit = diskShortfall(this.plan.diskPaths)
      if (!this.diskHit) return
      clearInterval(timer)
      stop()
    }, DISK_WATCH_MS)
    return () => clearInterval(timer)
  }

  report({ signal, output }: { signal?: string | undefined; output: string }): SandboxReport {
    const { cgroup, proxy, plan } = this
    const hits = cgroup?.hits()
    // "No space left on device" is the disk when it is under its reserve, else an in-memory folder.
    const noSpace = NO_SPACE.test(output)
    const disk = this.diskHit ?? (noSpace ? diskShortfall(plan.diskPaths) : undefined)
    const limitHit = hits?.memory
      ? 'memory'
      : hits?.processes
        ? 'processes'
        : disk
          ? 'disk'
          : signal === 'SIGXFSZ'
            ? 'file-size'
            : signal === 'SIGXCPU'
              ? 'cpu-time'
              : noSpace
                ? 'memory'
                : undefined
    return {
      limits: { ...plan.limits, enforcedBy: cgroup ? 'cgroup' : 'rlimit' },
      ...(plan.identity ? { identity: { uid: plan.identity.uid, gid: plan.identity.gid } } : {}),
      ...(limitHit ? { limitHit } : {}),
      ...(limitHit === 'disk' ? { disk } : {}),
      ...(proxy ? { network: [...proxy.decisions] } : {}),
    }
  }

  /** Gives the cgroup back (what is left in it killed and gone) and closes the proxy. */
  async release(): Promise<void> {
    await this.cgroup?.vacate(VACATE_MS)
    await this.proxy?.close()
    if (this.folder) rmSync(this.folder, { recursive: true, force: true })
  }
}

/** A sandbox built for `argv` now, from `plan` (see SandboxedLaunch). */
export async function coldLaunch(
  plan: SandboxPlan,
  argv: readonly string[],
  cwd: string,
  closed: () => void = () => {},
): Promise<SandboxedLaunch> {
  const resources = await SandboxResources.acquire(plan)
  let launch: string[]
  try {
    launch = resources.argv(cwd, [...plan.bridge, ...argv])
  } catch (error) {
    await resources.release()
    throw error
  }
  return {
    program: launch[0] as string,
    args: launch.slice(1),
    env: plan.env,
    watch: (stop) => resources.watch(stop),
    report: (exit) => resources.report(exit),
    close: async () => {
      await resources.release()
      closed()
    },
  }
}

/**
 * bwrap's mounts, in order. bwrap makes the missing folders above a mount point mode 700 (root's, when it
 * runs as root), which a root worker's command identity could not pass or write in (`~/.cache/pip` next
 * to a bound `~/.cache/go-build`): those are made first, as open as the tmpfs they are on.
 */
class MountPlan {
  private readonly tmpfsRoots: string[] = []
  private readonly bound: string[] = []
  private readonly made = new Set<string>()

  constructor(private readonly args: string[]) {}

  tmpfs(path: string, perms: string, size?: string): void {
    this.parents(path)
    this.args.push('--perms', perms, ...(size ? ['--size', size] : []), '--tmpfs', path)
    this.tmpfsRoots.push(path)
  }

  bind(op: '--bind' | '--ro-bind' | '--ro-bind-try', source: string, target: string): void {
    this.parents(target)
    this.args.push(op, source, target)
    this.bound.push(target)
  }

  /** Replaces a host path by an empty folder, or an existing file by an empty one. */
  hide(path: string): void {
    const directory = isDirectory(path)
    if (directory === undefined) return
    if (directory) this.tmpfs(path, '0755')
    else this.bind('--ro-bind', '/dev/null', path)
  }

  /** The folders above `target` that lie on a tmpfs of ours (not on a bound host folder), top down. */
  private parents(target: string): void {
    const above: string[] = []
    for (let folder = dirname(target); folder !== dirname(folder); folder = dirname(folder))
      above.unshift(folder)
    for (const folder of above) {
      if (this.made.has(folder) || !this.tmpfsRoots.some((root) => folder !== root && within(folder, root)))
        continue
      if (this.bound.some((bound) => within(folder, bound))) continue
      this.args.push('--perms', '1777', '--dir', folder)
      this.made.add(folder)
    }
  }
}
