/**
 * Turning one command into a sandboxed launch: `[sh -c <join cgroups>] prlimit … bwrap … [node bridge] argv`.
 *
 * Inside: the host's root read-only; the workspace read-write; private `/tmp`, `/run` and home; toolchain
 * folders and caches as given; tether's state and host credentials replaced by empty ones; its own user,
 * PID, network, IPC and UTS namespaces with every capability dropped, so nothing it starts outlives it and
 * the worker's loopback (the audit database, Temporal) is out of reach; no network unless the policy
 * grants some, and then only through the egress proxy.
 */
import { rmSync, statSync } from 'node:fs'
import { homedir, totalmem } from 'node:os'
import { isAbsolute, join, resolve, sep } from 'node:path'
import { pinGitConfig } from '../env.js'
import { socketFolder, socketRoot } from '../sockets.js'
import { CommandCgroup } from './cgroup.js'
import { gitBinds } from './git.js'
import { BRIDGE, EgressProxy } from './proxy.js'
import { SandboxUnavailableError, sandboxRuntime } from './runtime.js'
import type { SandboxLimits, SandboxOptions, SandboxReport } from './types.js'

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

/** Host files that a root worker could otherwise read through the read-only root. */
const HOST_SECRETS = ['/etc/shadow', '/etc/gshadow', '/etc/sudoers']

/** What to spawn instead of the bare argv, and how to finish up afterwards. */
export interface SandboxedLaunch {
  program: string
  args: string[]
  env: Record<string, string>
  /** Limits hit and network decisions; call once the command's tree is gone. */
  report(exit: { signal?: string | undefined }): SandboxReport
  /** Releases the cgroup, the proxy and the temporary folder. */
  close(): Promise<void>
}

function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep)
}

/** Folders first, shallow before deep, so a deeper mount lands on top of its parent's. */
function byDepth(paths: Iterable<string>): string[] {
  return [...new Set(paths)]
    .filter((path) => isAbsolute(path) && path !== '/')
    .sort((a, b) => a.split(sep).length - b.split(sep).length || a.localeCompare(b))
}

function isDirectory(path: string): boolean | undefined {
  try {
    return statSync(path).isDirectory()
  } catch {
    return undefined
  }
}

export async function prepareSandbox(
  options: SandboxOptions,
  argv: readonly string[],
  env: Record<string, string>,
  cwd: string,
): Promise<SandboxedLaunch> {
  const runtime = options.runtime ?? sandboxRuntime(env.PATH)
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, ...options.limits }
  const workspace = resolve(options.workspace)
  const home = options.home ?? homedir()
  // The home folder is emptied (the binds below bring back what commands need, the workspace among them).
  // A workspace that *is* the home folder, or holds it, keeps it: the operator chose to expose it.
  const privateHome = home && isAbsolute(home) && home !== '/' && !within(home, workspace) ? home : undefined

  const args = [
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--hostname',
    'tether-sandbox',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
  ]
  if (isDirectory('/run')) args.push('--tmpfs', '/run')
  if (privateHome) args.push('--tmpfs', privateHome)
  for (const path of byDepth(options.readOnly ?? [])) args.push('--ro-bind-try', path, path)
  for (const path of byDepth(options.writable ?? [])) args.push('--bind-try', path, path)
  // A hidden folder that holds the workspace is emptied first and the workspace bound back into it;
  // every other one is hidden last, so it covers whatever the binds above brought back.
  // tether's sockets are in the host's /tmp, which the sandbox replaces; a bind that brings it back hides them.
  const sockets = socketRoot()
  const showsSockets = [workspace, ...(options.readOnly ?? []), ...(options.writable ?? [])].some((path) =>
    within(sockets, path),
  )
  const hidden = byDepth([...HOST_SECRETS, ...(options.hide ?? []), ...(showsSockets ? [sockets] : [])])
  for (const path of hidden.filter((path) => within(workspace, path))) pushHide(args, path)
  args.push('--bind', workspace, workspace)
  args.push(...gitBinds(workspace))
  for (const path of hidden.filter((path) => !within(workspace, path))) pushHide(args, path)

  const innerEnv: Record<string, string> = { ...env, TMPDIR: '/tmp' }
  pinGitConfig(innerEnv)
  if (home) innerEnv.HOME = home
  let proxy: EgressProxy | undefined
  let folder: string | undefined
  let command = [...argv]
  try {
    if (options.network) {
      folder = socketFolder('egress-')
      const socket = join(folder, 'proxy.sock')
      proxy = await EgressProxy.start(socket, options.network)
      args.push('--bind', socket, PROXY_SOCKET_INSIDE)
      if (isAbsolute(process.execPath)) args.push('--ro-bind-try', process.execPath, process.execPath)
      const url = `http://127.0.0.1:${PROXY_PORT}`
      Object.assign(innerEnv, {
        HTTP_PROXY: url,
        HTTPS_PROXY: url,
        http_proxy: url,
        https_proxy: url,
        NO_PROXY: 'localhost,127.0.0.1,::1',
        no_proxy: 'localhost,127.0.0.1,::1',
      })
      command = [process.execPath, '-e', BRIDGE, '--', String(PROXY_PORT), PROXY_SOCKET_INSIDE, '--', ...argv]
    }
    args.push('--chdir', cwd, '--', ...command)

    const cgroup = runtime.cgroups ? CommandCgroup.acquire(runtime.cgroups, limits) : undefined
    let launch: string[] = [runtime.bwrap, ...args]
    // What the cgroup does not cap, rlimits do (RLIMIT_NPROC binds only a worker that is not root).
    const rlimits = [
      ...(cgroup ? [] : [`--nproc=${limits.processes}`]),
      ...(cgroup?.capsMemory ? [] : [`--data=${limits.memoryBytes}`]),
    ]
    if (rlimits.length > 0) {
      if (!runtime.prlimit) throw new SandboxUnavailableError(PRLIMIT_MISSING)
      launch = [runtime.prlimit, ...rlimits, '--', ...launch]
    }
    // One shell sets the limits every shell can set and joins the command's cgroups, then becomes the
    // launch: nothing the command starts runs outside them. (`ulimit -f` counts 512-byte blocks.)
    launch = [
      '/bin/sh',
      '-c',
      'ulimit -f "$1" && ulimit -c 0 || exit 125; [ "$2" = - ] || ulimit -t "$2" || exit 125; shift 2; ' +
        'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"',
      'tether-sandbox',
      String(Math.max(1, Math.floor(limits.fileSizeBytes / 512))),
      limits.cpuSeconds ? String(limits.cpuSeconds) : '-',
      ...(cgroup?.procsFiles ?? []),
      '--',
      ...launch,
    ]
    const release = async () => {
      cgroup?.release()
      await proxy?.close()
      if (folder) rmSync(folder, { recursive: true, force: true })
    }
    return {
      program: launch[0] as string,
      args: launch.slice(1),
      env: innerEnv,
      report: ({ signal }) => {
        const hits = cgroup?.hits()
        const limitHit = hits?.memory
          ? 'memory'
          : hits?.processes
            ? 'processes'
            : signal === 'SIGXFSZ'
              ? 'file-size'
              : signal === 'SIGXCPU'
                ? 'cpu-time'
                : undefined
        return {
          limits: { ...limits, enforcedBy: cgroup ? 'cgroup' : 'rlimit' },
          ...(limitHit ? { limitHit } : {}),
          ...(proxy ? { network: [...proxy.decisions] } : {}),
        }
      },
      close: release,
    }
  } catch (error) {
    await proxy?.close()
    if (folder) rmSync(folder, { recursive: true, force: true })
    throw error
  }
}

/** Replaces a host path inside the sandbox by an empty folder, or an existing file by an empty one. */
function pushHide(args: string[], path: string): void {
  const directory = isDirectory(path)
  if (directory === undefined) return
  if (directory) args.push('--tmpfs', path)
  else args.push('--ro-bind', '/dev/null', path)
}
