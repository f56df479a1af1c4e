/** The sandbox's public types. Pure declarations: workflow code and the audit may import them. */
import type { SandboxRuntime } from './runtime.js'

/** Per-command resource limits. */
export interface SandboxLimits {
  /** Processes and threads the command may have at once (cgroup `pids.max`; RLIMIT_NPROC as a backstop). */
  processes: number
  /** Memory in bytes (cgroup memory limit; RLIMIT_DATA as a backstop). */
  memoryBytes: number
  /** Largest file the command may write, in bytes (RLIMIT_FSIZE). */
  fileSizeBytes: number
  /** CPU seconds per process (RLIMIT_CPU); unset = no limit beyond the command's timeout. */
  cpuSeconds?: number
}

/** One destination a sandboxed command asked the egress proxy for, and the answer. */
export interface NetworkDecision {
  host: string
  port: number
  allowed: boolean
  /** Why: the policy rule that decided, or the boundary (`loopback`, `tether's own service`, …). */
  reason: string
}

export interface NetworkAccess {
  /** Judges one destination as the command named it; only `allowed: true` lets it through. */
  allow(host: string, port: number): { allowed: boolean; reason: string }
  /**
   * `host:port` pairs never reachable whatever `allow` says (tether's Temporal server and audit database).
   * Loopback, link-local (cloud metadata) and unspecified addresses are always unreachable.
   */
  blocked?: readonly string[]
}

export interface SandboxOptions {
  /** The host folder commands may write, bound read-write at its own path; `cwd` must be inside it. */
  workspace: string
  /** The worker's home folder; inside, it is an empty private folder (default: `os.homedir()`). */
  home?: string
  /** Host paths kept visible read-only although a hidden folder (home) holds them: toolchains. */
  readOnly?: readonly string[]
  /** Extra host paths bound read-write: toolchain caches. */
  writable?: readonly string[]
  /** Host paths replaced by an empty folder (or an empty file): tether's state, credentials. */
  hide?: readonly string[]
  /** Egress through a policy-judging proxy; absent = no network at all (the sandbox's own loopback only). */
  network?: NetworkAccess
  /** Defaults: see DEFAULT_SANDBOX_LIMITS. */
  limits?: Partial<SandboxLimits>
  /** What the sandbox is built from; default: `sandboxRuntime` of the PATH the command runs with. */
  runtime?: SandboxRuntime
}

/** What the sandbox saw of one command, for the result and the audit. */
export interface SandboxReport {
  /** The limits the command ran under, and what enforced the process and memory caps. */
  limits: SandboxLimits & { enforcedBy: 'cgroup' | 'rlimit' }
  /**
   * The limit the command ran into, if any; its status says how it ended. `memory` covers its in-memory
   * folders (/tmp, /run, home, /dev/shm) filling up; `disk` the reserve kept free on the workspace's and
   * caches' file systems (a command found the disk under it already is not started: status `unavailable`).
   */
  limitHit?: 'processes' | 'memory' | 'file-size' | 'cpu-time' | 'disk'
  /** With `limitHit: 'disk'`: which file system, how much was free, how much it keeps. */
  disk?: string
  /** The unprivileged uid and gid a root worker ran the command as (absent: the worker's own). */
  identity?: { uid: number; gid: number }
  /** Destinations the command asked for (only when the policy grants some network). */
  network?: NetworkDecision[]
}
