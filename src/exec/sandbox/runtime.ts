/**
 * Finding what the sandbox is built from on this machine: `bwrap` (bubblewrap) on PATH, able to create
 * the namespaces we ask for and to load the system-call filter, `prlimit` for the resource limits, and
 * for a root worker `setpriv`, which makes its commands an unprivileged identity. Probed once per PATH
 * value and cached; a machine that cannot sandbox gets one line saying what to install, never a silent
 * fallback.
 */
import { execFileSync } from 'node:child_process'
import { accessSync, closeSync, constants, openSync, statSync } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import { type CgroupSupport, detectCgroups } from './cgroup.js'
import { OFF_HINT, SandboxUnavailableError } from './errors.js'
import { isRootWorker } from './identity.js'
import { filterArch, seccompFilterFile } from './seccomp.js'

export interface SandboxRuntime {
  /** Absolute path of `bwrap`. */
  bwrap: string
  /** Absolute path of `prlimit` (util-linux); without it no rlimits are set. */
  prlimit: string | undefined
  /** Absolute path of `setpriv` (util-linux): how a root worker's commands become their identity. */
  setpriv: string | undefined
  /** Writable cgroup hierarchies for per-command process and memory limits, when this machine has them. */
  cgroups: CgroupSupport | undefined
}

export { SandboxUnavailableError }

const INSTALL_HINT =
  'install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; ' +
  'Alpine: apk add bubblewrap; Arch: pacman -S bubblewrap)'

export const SETPRIV_MISSING =
  'a root worker runs commands as an unprivileged identity with setpriv (util-linux), which is not on PATH; ' +
  `install util-linux (Alpine: apk add setpriv) or run the worker as a user that is not root, ${OFF_HINT}`

/** Finds `name` on `path` (a PATH value), like the shell does; undefined when absent. */
export function findOnPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue
    const candidate = join(dir, name)
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // not here
    }
  }
  return undefined
}

const cache = new Map<string, SandboxRuntime | SandboxUnavailableError>()

/**
 * The sandbox runtime for a worker whose PATH is `path`; throws SandboxUnavailableError when the sandbox
 * cannot be built. The first call per PATH runs `bwrap` once to prove the namespaces work (~10 ms).
 */
export function sandboxRuntime(path: string | undefined): SandboxRuntime {
  const key = path ?? ''
  let found = cache.get(key)
  if (!found) {
    try {
      found = probe(path)
    } catch (error) {
      if (!(error instanceof SandboxUnavailableError)) throw error
      found = error
    }
    cache.set(key, found)
  }
  if (found instanceof SandboxUnavailableError) throw found
  return found
}

function probe(path: string | undefined): SandboxRuntime {
  if (process.platform !== 'linux') {
    throw new SandboxUnavailableError(
      `the command sandbox is built on Linux namespaces and this worker runs on ${process.platform}; run workers on Linux, ${OFF_HINT}`,
    )
  }
  filterArch()
  const bwrap = findOnPath('bwrap', path)
  if (!bwrap) {
    throw new SandboxUnavailableError(
      `the command sandbox needs bwrap, which is not on PATH; ${INSTALL_HINT}, ${OFF_HINT}`,
    )
  }
  const root = isRootWorker()
  const setpriv = findOnPath('setpriv', path)
  if (root && !setpriv) throw new SandboxUnavailableError(SETPRIV_MISSING)
  // The namespaces and the filter every command gets (launch.ts), around `bwrap --version`.
  const namespaces = root
    ? ['--unshare-ipc', '--unshare-pid', '--unshare-net', '--unshare-uts']
    : ['--unshare-all', '--unshare-user', '--disable-userns']
  const filter = openSync(seccompFilterFile(), 'r')
  try {
    execFileSync(
      bwrap,
      [
        ...namespaces,
        '--die-with-parent',
        '--seccomp',
        '3',
        '--ro-bind',
        '/',
        '/',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        ...['--perms', '1777', '--size', '1048576', '--tmpfs', '/tmp'],
        '--',
        bwrap,
        '--version',
      ],
      { stdio: ['ignore', 'ignore', 'pipe', filter], timeout: 10_000, env: { PATH: path ?? '' } },
    )
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '')
      .trim()
      .split('\n')[0]
    throw new SandboxUnavailableError(
      `${bwrap} cannot create the sandbox's namespaces here (${stderr || (error as Error).message}); ` +
        'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu ' +
        'kernel.apparmor_restrict_unprivileged_userns=0) or run the worker where they are permitted, and use ' +
        `bubblewrap 0.8.0 or later, ${OFF_HINT}`,
    )
  } finally {
    closeSync(filter)
  }
  return { bwrap, prlimit: findOnPath('prlimit', path), setpriv, cgroups: detectCgroups() }
}
