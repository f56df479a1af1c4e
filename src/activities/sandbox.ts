/**
 * How the activities sandbox a run's commands: the policy's sandbox settings, the contract's extra
 * environment names and this worker's facts (its environment, its state folders, the addresses of its
 * Temporal server and audit database) turned into `runCommand`'s options. One place, so the `exec` tool
 * and the verification gate run under the same boundary.
 */
import { realpathSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import {
  type ExecEnv,
  type ExecResult,
  isRootWorker,
  type NetworkAccess,
  type RunCommandOptions,
  rootWorkspaceRefusal,
  type SandboxOptions,
  SandboxUnavailableError,
  sandboxEnvironment,
  sandboxRuntime,
  toolchainBinds,
} from '../exec/index.js'
import { hostPort, type Policy } from '../policy/index.js'
import { credentialFiles, temporalAddress, tetherStateDir } from '../stack/index.js'

export interface SandboxDependencies {
  /** The worker's environment: what commands' variables are drawn from, and the PATH bwrap is found on. */
  env?: NodeJS.ProcessEnv
  /** Host paths no command may see, beyond tether's state folders (which are always hidden). */
  hide?: readonly string[]
  /** `host:port` of services commands must never reach (tether's Temporal server and audit database). */
  blocked?: readonly string[]
  /** The audit database's `host:port`, asked when a command first needs it (the store may open later). */
  auditTarget?: () => string
  /**
   * This worker's floor: a command runs outside the sandbox only when the floor itself says `sandbox: off`,
   * whatever a run's recorded policy says (default: the sandbox is always on).
   */
  floor?: Policy
}

/** `path` with every link followed (one realpath(3) call, as this runs before every action), or undefined. */
function resolved(path: string): string | undefined {
  try {
    return realpathSync.native(path)
  } catch {
    return undefined
  }
}

/** What the sandbox hides in a workspace (CommandSandbox.hiddenIn). */
export interface HiddenPaths {
  /** Relative to the workspace, `/`-separated, links followed. */
  readonly paths: readonly string[]
  /** Whether a workspace-relative path is one of them or lies in one. */
  covers(path: string): boolean
}

/** Why a file tool leaves a hidden path alone. */
export const HIDDEN_REASON = "hidden from the run by the sandbox's `hide` (the policy's or the worker's)"

/** What one command runs with. */
export interface CommandSetup {
  env: ExecEnv
  /** Names of the variables passed (for the audit: names, never values). */
  envNames: string[]
  sandbox?: SandboxOptions
}

export class CommandSandbox {
  private readonly env: NodeJS.ProcessEnv
  private readonly hide: string[]
  private readonly blockedAlways: string[]
  private readonly auditTarget: (() => string) | undefined
  private readonly mayRunOutside: boolean

  constructor(deps: SandboxDependencies = {}) {
    this.env = deps.env ?? process.env
    this.mayRunOutside = deps.floor?.sandbox.mode === 'off'
    this.hide = [...tetherStateFolders(this.env), ...credentialFiles(this.env), ...(deps.hide ?? [])]
    this.blockedAlways = [...(deps.blocked ?? []), temporalAddress(this.env)]
    this.auditTarget = deps.auditTarget
  }

  private get blocked(): string[] {
    return this.auditTarget ? [...this.blockedAlways, this.auditTarget()] : this.blockedAlways
  }

  /** Only the worker's floor can let a command run outside the sandbox (and the run's policy must agree). */
  private outside(policy: Policy): boolean {
    return this.mayRunOutside && policy.sandbox.mode === 'off'
  }

  /** Why this worker cannot run the policy's sandbox, or undefined when it can (or the policy says off). */
  unavailable(policy: Policy): string | undefined {
    if (this.outside(policy)) return undefined
    try {
      sandboxRuntime(this.env.PATH)
      return undefined
    } catch (error) {
      if (error instanceof SandboxUnavailableError) return error.message
      throw error
    }
  }

  /**
   * Why a run of this worker may not work in `workspace`, as it resolves now, or undefined: it is, holds or
   * lies in what is the worker's own (ownedIn), or — for a root worker, whose file tools write as root — it
   * is a folder the worker would not make its commands' own (a system folder, one that holds its home,
   * another user's). Asked before a run's first step and before each of its actions.
   */
  workspaceRefusal(workspace: string): string | undefined {
    const folder = resolved(workspace)
    if (folder === undefined) return undefined
    const owned = this.ownedIn(folder)
    if (owned) {
      const which = owned.path === workspace ? '' : ` ${owned.relation} ${owned.path}, which`
      return (
        `the workspace ${workspace}${which} is the worker's own (tether's state, keys or credentials, or the ` +
        "folder it lays out runs' workspaces in): no run works there; start the run on a project folder, or from a source"
      )
    }
    if (this.mayRunOutside || !isRootWorker()) return undefined
    return rootWorkspaceRefusal(folder, this.env.HOME ?? homedir())
  }

  /**
   * What of the worker's own — its state, keys or credentials, the folder it lays runs' workspaces out in —
   * `folder` (resolved) is, holds or lies in (`path`, and how), or undefined. The sandbox hides these from
   * commands, but the file tools and the snapshots work on the workspace as the worker sees it: a run there
   * could read or rewrite the worker's floor, keys and database, and store them with its trees. Compared as
   * the worker resolves them (links followed); what does not exist holds nothing.
   */
  private ownedIn(folder: string): { path: string; relation: 'is' | 'holds' | 'lies in' } | undefined {
    const within = (inner: string, outer: string) => outer === sep || inner.startsWith(`${outer}${sep}`)
    for (const own of this.hide) {
      const path = resolved(own)
      if (path === undefined) continue
      if (path === folder) return { path, relation: 'is' }
      if (within(path, folder)) return { path, relation: 'holds' }
      if (within(folder, path)) return { path, relation: 'lies in' }
    }
    return undefined
  }

  /**
   * What the sandbox hides that lies in `workspace` (the policy's `hide`, or the worker's own), as the file
   * tools name paths: relative to the workspace, links followed. The file tools and the snapshots, which work
   * outside the sandbox, leave these alone too, so `hide` keeps a path from the run, not only from commands.
   */
  hiddenIn(policy: Policy, workspace: string): HiddenPaths {
    const paths = this.hiddenPathsIn(policy, workspace)
    return {
      paths,
      covers: (path) => paths.some((hidden) => path === hidden || path.startsWith(`${hidden}/`)),
    }
  }

  private hiddenPathsIn(policy: Policy, workspace: string): string[] {
    const root = resolved(workspace)
    if (root === undefined) return []
    const inside: string[] = []
    for (const path of this.hidden(policy)) {
      const real = resolved(path)
      if (real === undefined) continue
      const rel = relative(root, real)
      if (rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)) {
        inside.push(rel.split(sep).join('/'))
      }
    }
    return inside
  }

  /** Every path commands of a run under `policy` do not see (`binds`: the toolchains' for its caches). */
  private hidden(policy: Policy, binds = toolchainBinds(this.env, policy.sandbox.caches)): string[] {
    return [...this.hide, ...binds.hide, ...policy.sandbox.hide]
  }

  /** The environment and sandbox for a command of a run with this policy, workspace and extra names. */
  setup(policy: Policy, run: { workspace: string; env?: readonly string[] | undefined }): CommandSetup {
    const { env, names } = sandboxEnvironment(this.env, run.env ?? [])
    const settings = policy.sandbox
    if (this.outside(policy)) return { env, envNames: names }
    const binds = toolchainBinds(this.env, settings.caches)
    const network = this.networkAccess(policy)
    const sandbox: SandboxOptions = {
      workspace: run.workspace,
      home: this.env.HOME ?? homedir(),
      readOnly: [...binds.readOnly, ...settings.readOnly],
      writable: [...binds.writable, ...settings.writable],
      hide: this.hidden(policy, binds),
      limits: settings.limits,
      runtime: sandboxRuntime(this.env.PATH),
      ...(network ? { network } : {}),
    }
    return { env, envNames: names, sandbox }
  }

  /**
   * What an MCP server of the operator's runs with: a command's setup, but the workspace as the server's
   * profile says, the host paths it lives in visible, and the worker variables the operator named for it
   * (its credentials — whatever their names: the operator chose them, no run did).
   */
  serviceSetup(
    policy: Policy,
    run: { workspace: string },
    server: {
      workspace: 'read-write' | 'read-only' | 'none'
      env: readonly string[]
      readOnly: readonly string[]
    },
  ): CommandSetup {
    const setup = this.setup(policy, { workspace: run.workspace })
    const named: Record<string, string> = {}
    for (const name of server.env) {
      const value = this.env[name]
      if (value !== undefined) named[name] = value
    }
    const env = { ...(setup.env as Record<string, string>), ...named }
    const envNames = [...setup.envNames, ...Object.keys(named)]
    if (!setup.sandbox) return { env, envNames }
    const sandbox: SandboxOptions = {
      ...setup.sandbox,
      workspaceAccess: server.workspace,
      readOnly: [...(setup.sandbox.readOnly ?? []), ...server.readOnly],
    }
    return { env, envNames, sandbox }
  }

  /**
   * The destinations the policy's `net` rules let through (judged as addresses by the egress proxy), or
   * undefined when no rule or default allows any: then nothing is reached at all.
   */
  networkAccess(policy: Policy): NetworkAccess | undefined {
    const mayReachNetwork =
      policy.defaultFor('net') === 'allow' ||
      policy
        .toSpec()
        .layers.some((layer) => layer.rules.some((rule) => rule.act === 'net' && rule.effect === 'allow'))
    if (!mayReachNetwork) return undefined
    return {
      allow: (host: string, port: number) => {
        const verdict = policy.check('net', hostPort(host, port))
        return { allowed: verdict.effect === 'allow', reason: verdict.reason }
      },
      address: (address: string, port: number) => {
        const verdict = policy.check('net', hostPort(address, port))
        const refused = verdict.rule !== undefined && verdict.effect !== 'allow'
        return {
          named: policy.namesAddress(hostPort(address, port)),
          ...(refused ? { refused: verdict.reason } : {}),
        }
      },
      blocked: this.blocked,
    }
  }
}

/** tether's own state: the state folder (Temporal and Postgres data, credentials) and its per-user folders. */
function tetherStateFolders(env: NodeJS.ProcessEnv): string[] {
  const home = env.HOME ?? homedir()
  return [
    tetherStateDir(env),
    // A project-local state folder of older checkouts, and where a root worker keeps PostgreSQL's files.
    resolve('.tether'),
    '/var/lib/tether',
    join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'tether'),
    join(env.XDG_CACHE_HOME ?? join(home, '.cache'), 'tether'),
    ...(env.TETHER_KEYS_DIR ? [resolve(env.TETHER_KEYS_DIR)] : []),
  ]
}

/** A command's setup as `runCommand` takes it. */
export function commandOptions(setup: CommandSetup): Pick<RunCommandOptions, 'env' | 'sandbox'> {
  return { env: setup.env, ...(setup.sandbox ? { sandbox: setup.sandbox } : {}) }
}

/**
 * What the audit keeps of a finished command, the same for an agent's command, the gate and tether's own
 * workspace commands; of the boundary, the names of the variables passed (never values) and the sandbox report.
 */
export function resultRecord(setup: CommandSetup, result: ExecResult, startedAt: Date) {
  return {
    status: result.status,
    ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
    ...(result.signal !== undefined ? { signal: result.signal } : {}),
    durationMs: Math.round(result.durationMs),
    stdout: result.stdout,
    stderr: result.stderr,
    startedAt,
    finishedAt: new Date(),
    sandbox: { mode: setup.sandbox ? 'enforce' : 'off', envNames: setup.envNames, ...result.sandbox },
  }
}
