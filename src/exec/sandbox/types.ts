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
  /** As the command named it (an IPv6 address without its brackets). */
  host: string
  port: number
  allowed: boolean
  /** Why: the policy rule that decided, or the boundary (`loopback (127.0.0.0/8)`, `tether's own service`, …). */
  reason: string
  /** The address the destination resolved to: where the connection went, or the one that was refused. */
  address?: string
}

/**
 * What the policy says of the destinations of one command. The sandbox refuses, whatever this says, the
 * worker itself (loopback, unspecified and its own addresses) and the `blocked` services; it refuses
 * private, link-local, ULA, CGNAT, NAT64 and every other special-purpose address unless `address` says
 * a rule names it.
 */
export interface NetworkAccess {
  /**
   * Judges one destination: `host` is a lower-cased name or an IP address in canonical text (IPv6 without
   * brackets). Only `allowed: true` lets it through.
   */
  allow(host: string, port: number): { allowed: boolean; reason: string }
  /**
   * What the policy says of one address a destination resolved to (canonical text): `refused` when a deny
   * or ask rule meets the address itself (a deny of `10.0.0.0/8` holds whatever name leads there), `named`
   * when an allow rule names the address or a CIDR range holding it (a glob never does). Absent: no rule
   * refuses or names any address.
   */
  address?(address: string, port: number): { refused?: string; named: boolean }
  /**
   * `host:port` of services never reachable whatever `allow` says (tether's Temporal server and audit
   * database), compared as addresses: a host name is resolved, and every spelling of an address meets it.
   */
  blocked?: readonly string[]
}

export interface SandboxOptions {
  /** The host folder commands may write, bound read-write at its own path; `cwd` must be inside it. */
  workspace: string
  /**
   * How the workspace is seen: read-write (every command), read-only, or not at all (hidden, like tether's
   * state) — the profiles an operator gives an MCP server. Default read-write.
   */
  workspaceAccess?: 'read-write' | 'read-only' | 'none'
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
