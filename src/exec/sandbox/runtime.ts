/**
 * Finding what the sandbox is built from on this machine: `bwrap` (bubblewrap) on PATH, able to create
 * the namespaces we ask for, and `prlimit` for the resource limits. Probed once per PATH value and cached;
 * a machine that cannot sandbox gets one line saying what to install, never a silent fallback.
 */
import { execFileSync } from 'node:child_process'
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import { type CgroupSupport, detectCgroups } from './cgroup.js'

export interface SandboxRuntime {
  /** Absolute path of `bwrap`. */
  bwrap: string
  /** Absolute path of `prlimit` (util-linux); without it no rlimits are set. */
  prlimit: string | undefined
  /** Writable cgroup hierarchies for per-command process and memory limits, when this machine has them. */
  cgroups: CgroupSupport | undefined
}

/** The sandbox cannot be built here. The message is one line: what is missing and what to do. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError'
}

const INSTALL_HINT =
  'install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; ' +
  'Alpine: apk add bubblewrap; Arch: pacman -S bubblewrap)'
const OFF_HINT = "or have the policy's first layer set `sandbox: off`"

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
  const bwrap = findOnPath('bwrap', path)
  if (!bwrap) {
    throw new SandboxUnavailableError(
      `the command sandbox needs bwrap, which is not on PATH; ${INSTALL_HINT}, ${OFF_HINT}`,
    )
  }
  try {
    execFileSync(
      bwrap,
      [
        '--unshare-all',
        '--die-with-parent',
        '--ro-bind',
        '/',
        '/',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--',
        bwrap,
        '--version',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000, env: { PATH: path ?? '' } },
    )
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '')
      .trim()
      .split('\n')[0]
    throw new SandboxUnavailableError(
      `${bwrap} cannot create the sandbox's namespaces here (${stderr || (error as Error).message}); ` +
        'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu ' +
        `kernel.apparmor_restrict_unprivileged_userns=0) or run the worker where they are permitted, ${OFF_HINT}`,
    )
  }
  return { bwrap, prlimit: findOnPath('prlimit', path), cgroups: detectCgroups() }
}
