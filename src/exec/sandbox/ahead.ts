/**
 * Sandboxes built ahead of their command, so that a sandboxed command starts about as fast as a spawn.
 *
 * Building a command's sandbox (launch.ts) takes a shell that sets its limits and joins its cgroup, bwrap
 * making its namespaces and mounts and, for a root worker, setpriv: milliseconds on a quiet machine, tens on
 * a loaded one, where a bare spawn takes one. A run's commands come one after another in one workspace
 * under one policy, with a model turn between them. So when a command ends, the sandbox for the next one is
 * built at once — the same launch, with a cgroup and a proxy of its own — except that what it runs last is a
 * small shell, the trampoline, waiting for the command on its stdin. The next command whose sandbox would be
 * the same takes it: the trampoline goes to the command's folder, answers one byte and becomes the command
 * (exec: the command is the process bwrap watches, as always).
 *
 * Why one sandbox per command built early, rather than one per run with a server inside forking each
 * command: every property of the boundary stays what it was, by construction. Each command still has its
 * own PID namespace (nothing it leaves running outlives it), its own /tmp, /run, /dev/shm and home, its own
 * cgroup and rlimits, its own environment, its own proxy judging by its own policy; and nothing long-lived
 * runs inside a sandbox for a command to tamper with (a server of the commands' own uid can be rewritten
 * through /proc/PID/mem, no ptrace needed). A waiting sandbox is three small processes, not a Node process;
 * it costs the CPU a sandbox always cost, spent while the model thinks.
 *
 * Failing closed: a waiting sandbox is taken only when the plan worked out for the command (identity, the
 * disk's reserve, git's folders, what to hide) gives the very same launch and environment, every path that
 * launch names is still there or still missing as it was, and every mount the launch makes is still in its
 * mount table (a folder removed or replaced on the host takes its mount with it, in every namespace, and
 * the new one may even get the old inode number). Otherwise it is thrown away and the command gets a
 * sandbox built for it, as before. One that ends before it answers has run nothing: the command gets one
 * built for it too. One that answers anything but its byte is killed, and the command fails with
 * ExecSpawnError (the activity retries it). Nothing ever runs outside a sandbox on this path.
 */
import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs'
import { resolve } from 'node:path'
import { ExecSpawnError } from '../errors.js'
import { type LaunchedProcess, launch } from '../launcher.js'
import { guardProcessGroup } from '../orphan-guard.js'
import { ProcessTree } from '../process-tree.js'
import {
  coldLaunch,
  launchArgv,
  planSandbox,
  type SandboxedLaunch,
  type SandboxParts,
  type SandboxPlan,
  SandboxResources,
} from './launch.js'
import type { SandboxOptions } from './types.js'

/** `$0` of the trampoline (and of the launch shell): what its complaints begin with. */
const NAME = 'tether-sandbox'
/**
 * The trampoline. It reads two lines from its stdin: the command's environment (environmentLine), sent as
 * soon as it starts, and kept in a variable that no process's environment shows — after which it says it
 * is ready —, then, when a command takes the sandbox, the command (commandLine), which it runs. `NL` holds
 * a newline, which a line cannot, for the values that do. Whatever fails before the exec ends it without
 * its answer.
 */
const TRAMPOLINE = [
  'IFS= read -r tether_env || exit 125',
  'printf r >&0 || exit 125',
  'IFS= read -r tether_line || exit 125',
  "NL='\n'",
  'eval "$tether_line"',
  'exit 125',
].join('\n')
/** What the trampoline writes to its stdin once it is ready. */
const READY = 0x72
/** The trampoline's answer, written to its stdin right before it becomes the command. */
const ANSWER = 0x2e
/** Longer command lines get a sandbox of their own: the shell reads its line a byte at a time. */
const MOST_LINE_BYTES = 4096
/** A larger environment is not sent ahead (it is read a byte at a time too, if while nobody waits). */
const MOST_ENVIRONMENT_BYTES = 64 * 1024
/** The names a shell can export. */
const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** How long a sandbox waits for a command before it is taken down. */
const IDLE_MS = 10 * 60_000
/**
 * Sandboxes waiting at once, in all workspaces (about 0.6 MB of memory each); the one waiting longest goes
 * first. Above a worker's active runs (its workflow cache holds about 500 on 4 GiB of heap), so that runs
 * taking turns never throw each other's sandboxes away: with 256, 500 runs at once built every command's
 * sandbox cold (bench/run --concurrent 500: the command `true` took 1.1 s at the median).
 */
const MOST_WAITING = 1024
/** How long a killed sandbox's processes may take to go before its cgroup is given back all the same. */
const END_MS = 2_000
/** How long a command waits for a sandbox still being built for it before it builds its own. */
const READY_MS = 5_000
/**
 * How many times a sandbox is built ahead when the builds fail (a launch refused on a loaded machine, a
 * sandbox that ended before it was ready), and the pause before each build after the first.
 */
const BUILDS = 2
const REBUILD_MS = 250

/** `text` as one shell word on one line. */
function quote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`).replaceAll('\n', `'"$NL"'`)}'`
}

/**
 * The environment as the line the trampoline keeps, or undefined when a shell cannot export it. `NL` comes
 * last, should the command have one: its value is what the others' newlines are spelled with.
 */
function environmentLine(env: Record<string, string>): string | undefined {
  const names = Object.keys(env).sort((a, b) => Number(a === 'NL') - Number(b === 'NL'))
  if (!names.every((name) => SHELL_NAME.test(name))) return undefined
  const line =
    names.length === 0 ? ':\n' : `export ${names.map((name) => `${name}=${quote(env[name]!)}`).join(' ')}\n`
  return Buffer.byteLength(line) <= MOST_ENVIRONMENT_BYTES ? line : undefined
}

/**
 * What the trampoline runs: go to the folder, take the command's arguments and then its environment,
 * answer, and become the command with stdin the null device. (`cd` sets OLDPWD, which a command started in
 * its folder has only from its environment.)
 */
function commandLine(cwd: string, argv: readonly string[], env: Record<string, string>): string {
  const words = argv.map(quote).join(' ')
  const oldpwd = env.OLDPWD === undefined ? ' && unset OLDPWD' : ''
  return `cd -P -- ${quote(cwd)} && set -- "$@" ${words} && eval "$tether_env"${oldpwd} && printf . >&0 && exec "$@" </dev/null\n`
}

/** What a waiting sandbox of `plan` runs inside: the trampoline, the bridge to the proxy as its arguments. */
function trampoline(plan: SandboxPlan): string[] {
  return ['/bin/sh', '-c', TRAMPOLINE, NAME, ...plan.bridge]
}

/** Stands for each sandbox's own cgroup files in a key. */
const CGROUP = '<cgroup>'
/** Stands for each sandbox's own proxy socket in a key. */
const PROXY = '<proxy>'

/** The launch of a waiting sandbox of `plan`, with stand-ins for what each one has of its own. */
function anyLaunch(plan: SandboxPlan): string[] {
  const { cgroups } = plan.runtime
  const cgroup = cgroups && { procsFiles: [CGROUP], capsMemory: cgroups.memory !== undefined }
  const parts = { cgroup, proxySocket: plan.network ? PROXY : undefined }
  return launchArgv(plan, parts, plan.workspace, trampoline(plan))
}

/** `argv`, a waiting sandbox's launch, with stand-ins for its own cgroup files and proxy socket. */
function anonymous(argv: string[], own: SandboxParts): string[] {
  const cgroupFiles = new Set(own.cgroup?.procsFiles)
  return argv
    .map((arg) => (cgroupFiles.has(arg) ? CGROUP : arg === own.proxySocket ? PROXY : arg))
    .filter((arg, index, all) => arg !== CGROUP || all[index - 1] !== CGROUP)
}

/** The key of a sandbox of `plan` launched by `argv` (with stand-ins): the launch, the environment, the limits. */
function keyOf(plan: SandboxPlan, argv: string[]): string {
  return JSON.stringify([argv, plan.env, plan.limits])
}

/** What every path `argv` names is now: device and inode, or missing (each once: a bind names most twice). */
function filesOf(argv: string[]): string {
  return [...new Set(argv.filter((arg) => arg.startsWith('/')))]
    .map((path) => {
      try {
        const stat = lstatSync(path, { throwIfNoEntry: false })
        return stat ? `${stat.dev}:${stat.ino}` : '-'
      } catch {
        return '?'
      }
    })
    .join(' ')
}

/** Sandboxes waiting for a command, by key. */
const waiting = new Map<string, Waiting>()
/** Sandboxes being built ahead, until they wait. */
const building = new Map<Promise<void>, string>()
let killsAtExit = false

/** One sandbox built ahead: waiting for a command, then that command's. */
class Waiting {
  /** Its process once started; undefined when it could not be. */
  private readonly started: Promise<LaunchedProcess | undefined>
  /** Its process once ready for a command; undefined when it will not be. */
  private readonly ready: Promise<LaunchedProcess | undefined>
  private pid: number | undefined
  private taken = false
  /** Taken down on purpose (idle, pushed out, its workspace's run over), not failed. */
  private dismissed = false
  private answered = false
  private ended: Promise<void> | undefined
  private idle: NodeJS.Timeout | undefined
  private unguard: () => void = () => {}

  constructor(
    readonly key: string,
    readonly files: string,
    private readonly resources: SandboxResources,
    private readonly argv: string[],
    environment: string,
  ) {
    this.started = this.start(argv).catch(() => undefined)
    this.ready = this.started
      .then((child) => child && this.prepare(child, environment))
      .catch(() => undefined)
      .then((child) => {
        if (!child) void this.discard()
        return child
      })
  }

  get workspace(): string {
    return this.resources.plan.workspace
  }

  private async start(argv: string[]): Promise<LaunchedProcess> {
    // Its processes' own environment is empty: the command's is only the trampoline's to keep.
    const child = await launch(argv[0] as string, argv.slice(1), {
      cwd: this.workspace,
      env: {},
      stdin: true,
      background: true,
    })
    const failed = await new Promise<unknown>((resolve) => {
      child.once('spawn', () => resolve(undefined))
      child.once('error', (error) => resolve(error ?? new Error('not started')))
    })
    if (failed !== undefined) throw failed
    const pid = child.pid as number
    this.pid = pid
    // Should this process die, the guard kills the sandbox along with the commands.
    this.unguard = guardProcessGroup(pid)
    child.once('exit', () => {
      if (!this.taken) void this.discard()
    })
    this.idle = setTimeout(() => void this.dismiss(), IDLE_MS).unref()
    return child
  }

  /** Sends it the command's environment and waits until it is ready. */
  private async prepare(child: LaunchedProcess, environment: string): Promise<LaunchedProcess> {
    const stdin = child.stdin as NonNullable<LaunchedProcess['stdin']>
    stdin.on('error', () => stdin.destroy())
    const said = nextChunk(stdin)
    stdin.write(environment)
    if (!isByte(await said, READY)) throw new Error('the sandbox built ahead did not become ready')
    return child
  }

  /**
   * Whether it failed: ended before it was ready, while no command took it and nobody took it down; false
   * too once it has not said within READY_MS.
   */
  async failed(): Promise<boolean> {
    const child = await Promise.race([this.ready, after(READY_MS).then(() => false as const)])
    return child === undefined && !this.taken && !this.dismissed
  }

  /** Takes it for a command whose launch names `files` as they are now; undefined when it cannot serve. */
  async take(files: string): Promise<LaunchedProcess | undefined> {
    this.taken = true
    clearTimeout(this.idle)
    // One still being built is on its way; one that takes too long is not waited for.
    const child =
      files === this.files ? await awaited(Promise.race([this.ready, after(READY_MS)])) : undefined
    if (
      !child?.stdin ||
      child.ended ||
      child.stdin.readableEnded ||
      child.stdin.destroyed ||
      !mountsIntact(child.pid as number, this.argv, this.resources.plan.runtime.bwrap)
    ) {
      void this.discard()
      return undefined
    }
    child.hold()
    return child
  }

  /**
   * What the runner gets for its command: `line`, and `network`, what the command's own policy says of its
   * destinations. `closed` runs once the command is over.
   */
  launch(
    child: LaunchedProcess,
    line: string,
    network: SandboxPlan['network'],
    closed: (() => void) | undefined,
  ): SandboxedLaunch {
    const { resources } = this
    return {
      program: '',
      args: [],
      env: resources.plan.env,
      ahead: { child, start: () => this.hand(child, line, network) },
      watch: (stop) => resources.watch(stop),
      report: (exit) => ({ ...resources.report(exit), warm: true }),
      close: async () => {
        // One that ended without starting its command (or said something else) goes, and leaves the next
        // sandbox to the one built for the command now.
        if (!this.answered) {
          killGroup(this.pid)
          for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy()
        }
        this.unguard()
        await resources.release()
        if (this.answered) closed?.()
      },
    }
  }

  /** Writes the command line; true once the trampoline answers, false when it ended without answering. */
  private async hand(
    child: LaunchedProcess,
    line: string,
    network: SandboxPlan['network'],
  ): Promise<boolean> {
    const stdin = child.stdin as NonNullable<LaunchedProcess['stdin']>
    // The command's own policy judges its destinations, from its first connection on.
    if (network) this.resources.proxy?.serve(network)
    const said = nextChunk(stdin)
    stdin.write(line)
    const answer = await said
    stdin.destroy()
    if (answer === undefined) return false
    if (isByte(answer, ANSWER)) {
      this.answered = true
      return true
    }
    killGroup(this.pid)
    throw new ExecSpawnError(
      `the sandbox built for this command answered ${JSON.stringify(answer.toString('latin1').slice(0, 40))} ` +
        'instead of starting it, and was killed; run the command again',
    )
  }

  /** Takes it down on purpose (see discard): its failing then is no reason to build another. */
  dismiss(): Promise<void> {
    this.dismissed = true
    return this.discard()
  }

  /** Takes it down, once: its processes, streams, cgroup and proxy. */
  discard(): Promise<void> {
    if (waiting.get(this.key) === this) waiting.delete(this.key)
    clearTimeout(this.idle)
    this.ended ??= (async () => {
      const child = await awaited(this.started)
      if (child?.pid !== undefined) {
        if (this.resources.cgroup) {
          // Its cgroup holds every process of it, and giving the cgroup back (below) kills them and waits:
          // only the leader may not have joined it yet, and it leads its own process group.
          killGroup(child.pid)
        } else {
          // Every process of it, bwrap's child and the shell in a session of its own too, found while bwrap
          // lives: a walk of the machine's process table, linear in its size.
          const tree = new ProcessTree(child.pid)
          tree.signal('SIGKILL', child.ended === undefined)
          await tree.waitUntilGone(END_MS)
        }
      }
      for (const stream of [child?.stdin, child?.stdout, child?.stderr]) stream?.destroy()
      this.unguard()
      await this.resources.release()
    })()
    return this.ended
  }

  /** At this process's exit, when nothing can be awaited any more. */
  killNow(): void {
    killGroup(this.pid)
  }
}

/** What comes next on `stream` (left paused after it), or undefined when it ends first. */
function nextChunk(stream: NonNullable<LaunchedProcess['stdin']>): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const data = (chunk: Buffer) => {
      stop()
      stream.pause()
      resolve(chunk)
    }
    const ended = () => {
      stop()
      resolve(undefined)
    }
    const stop = () => {
      stream.off('data', data)
      stream.off('end', ended)
      stream.off('close', ended)
    }
    stream.on('data', data)
    stream.once('end', ended)
    stream.once('close', ended)
    stream.resume()
  })
}

function isByte(chunk: Buffer | undefined, byte: number): boolean {
  return chunk?.length === 1 && chunk[0] === byte
}

/** bwrap's options that mount something at their last argument, and how many arguments they take. */
const MOUNTS = new Map([
  ['--bind', 2],
  ['--ro-bind', 2],
  ['--dev-bind', 2],
  ['--bind-try', 2],
  ['--ro-bind-try', 2],
  ['--dev-bind-try', 2],
  ['--tmpfs', 1],
  ['--proc', 1],
  ['--dev', 1],
  ['--mqueue', 1],
])

/** Where the bwrap of `argv` mounts something: each `-try` one whose source is there. */
function mountPoints(argv: string[], bwrap: string): string[] {
  const points: string[] = []
  for (
    let index = argv.indexOf(bwrap) + 1;
    index > 0 && index < argv.length && argv[index] !== '--';
    index++
  ) {
    const taken = MOUNTS.get(argv[index] as string)
    if (taken === undefined) continue
    const source = argv[index + 1] as string
    if (!argv[index]!.endsWith('-try') || existsSync(source)) points.push(argv[index + taken] as string)
    index += taken
  }
  return points
}

/**
 * Whether every mount the bwrap of `argv`, launched as `pid`, makes is in the mount table inside (bwrap's
 * one child is in its namespaces); false when that cannot be read.
 */
function mountsIntact(pid: number, argv: string[], bwrap: string): boolean {
  try {
    const inside = readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').trim().split(' ')
    if (inside.length !== 1 || inside[0] === '') return false
    const table = readFileSync(`/proc/${inside[0]}/mountinfo`, 'latin1')
    // The fifth field is the mount point, with space, tab, newline and backslash written in octal.
    const mounted = new Set(
      table
        .split('\n')
        .map((line) => line.split(' ')[4])
        .filter((point) => point !== undefined)
        .map((point) =>
          point.replace(/\\([0-7]{3})/g, (_, octal: string) =>
            String.fromCharCode(Number.parseInt(octal, 8)),
          ),
        ),
    )
    return mountPoints(argv, bwrap).every((point) => mounted.has(point))
  } catch {
    return false
  }
}

/**
 * `promise`, keeping this process alive until it settles: what it waits for (a sandbox built in the
 * background) does not.
 */
async function awaited<T>(promise: Promise<T>): Promise<T> {
  const alive = setInterval(() => {}, 60_000)
  try {
    return await promise
  } finally {
    clearInterval(alive)
  }
}

/** Undefined, after `ms`; a timer that keeps nothing alive. */
function after(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms).unref())
}

function killGroup(pid: number | undefined): void {
  try {
    if (pid !== undefined) process.kill(-pid, 'SIGKILL')
  } catch {
    // Gone already.
  }
}

/**
 * Whether `argv` has bwrap put an empty folder or file over a path in the workspace (a hidden path there, a
 * planted `commondir`): bwrap makes such a mount point when it is missing, so built while nobody waits —
 * the workspace being removed, say — it could leave one behind.
 */
function makesMountPoints(plan: SandboxPlan, argv: string[]): boolean {
  return argv.some((arg, index) => {
    const target =
      arg === '--tmpfs'
        ? argv[index + 1]
        : arg === '--ro-bind' && argv[index + 1] === '/dev/null'
          ? argv[index + 2]
          : undefined
    return target !== undefined && (target === plan.workspace || target.startsWith(`${plan.workspace}/`))
  })
}

/**
 * Builds the next sandbox of `plan` and lets it wait, unless one with its key already does (or it would not
 * serve): the one it built, if any.
 */
async function buildAhead(plan: SandboxPlan): Promise<Waiting | undefined> {
  const shape = anyLaunch(plan)
  const key = keyOf(plan, shape)
  const environment = environmentLine(plan.env)
  if (waiting.has(key) || environment === undefined || makesMountPoints(plan, shape)) return
  const resources = await SandboxResources.acquire(plan)
  let argv: string[]
  let named: string[]
  try {
    argv = resources.argv(plan.workspace, trampoline(plan))
    named = anonymous(argv, resources.parts)
  } catch (error) {
    await resources.release()
    throw error
  }
  // A twin was quicker, or this one came out otherwise than a command's would (the cgroup refused, a
  // folder appeared): no command would take it.
  if (waiting.has(key) || keyOf(plan, named) !== key) {
    await resources.release()
    return
  }
  if (!killsAtExit) {
    killsAtExit = true
    process.once('exit', () => {
      for (const entry of waiting.values()) entry.killNow()
    })
  }
  resources.proxy?.standBy()
  const entry = new Waiting(key, filesOf(named), resources, argv, environment)
  waiting.set(key, entry)
  // The one waiting longest makes room.
  if (waiting.size > MOST_WAITING) void waiting.values().next().value?.dismiss()
  return entry
}

/**
 * Builds the next sandbox of `plan` in the background, and once more should that fail; failing twice only
 * means the next command builds its own. The build counts as under way until its sandbox is ready (or
 * READY_MS have passed), so that closeWarmSandboxes never misses one built again.
 */
function ahead(plan: SandboxPlan): void {
  const build = (async () => {
    for (let attempt = 1; attempt <= BUILDS; attempt++) {
      if (attempt > 1) await after(REBUILD_MS)
      const entry = await buildAhead(plan).then(
        (built) => built ?? 'not needed',
        () => undefined,
      )
      if (entry === 'not needed' || (entry && !(await entry.failed()))) return
    }
  })().finally(() => building.delete(build))
  building.set(build, plan.workspace)
}

/**
 * The sandbox for one command (see SandboxedLaunch): one built ahead for it when one waits with the same
 * launch, else one built now. With `options.warm` (the default), the workspace's next sandbox is built as
 * soon as this command is over. `takeWaiting: false` builds one now whatever waits.
 */
export async function prepareSandbox(
  options: SandboxOptions,
  argv: readonly string[],
  env: Record<string, string>,
  cwd: string,
  takeWaiting = true,
): Promise<SandboxedLaunch> {
  const plan = await planSandbox(options, env)
  const warm = options.warm ?? process.env.TETHER_SANDBOX_WARM !== '0'
  const next = warm ? () => ahead(plan) : undefined
  const line = commandLine(cwd, argv, plan.env)
  if (warm && takeWaiting && waiting.size > 0 && Buffer.byteLength(line) <= MOST_LINE_BYTES) {
    const shape = anyLaunch(plan)
    const key = keyOf(plan, shape)
    const entry = waiting.get(key)
    if (entry) {
      waiting.delete(key)
      const child = await entry.take(filesOf(shape))
      if (child) return entry.launch(child, line, plan.network, next)
    }
  }
  return coldLaunch(plan, argv, cwd, next)
}

/**
 * Takes down the sandboxes waiting for commands of `workspace` (all, without one), with their processes,
 * cgroups and proxies; resolves once they are gone. Call it when a run ends; a sandbox nobody takes goes by
 * itself after 10 minutes, and all of them when this process exits.
 */
export async function closeWarmSandboxes(workspace?: string): Promise<void> {
  let folder: string | undefined
  if (workspace !== undefined) {
    try {
      folder = realpathSync(workspace)
    } catch {
      folder = resolve(workspace)
    }
  }
  const ours = (where: string) => folder === undefined || where === folder
  // Only this workspace's builds: under many runs some build is always under way. Awaited keeping the
  // process alive, which a build in the background does not: else a script's last await never settles.
  await awaited(Promise.all([...building].filter(([, where]) => ours(where)).map(([build]) => build)))
  const closing = [...waiting.values()].filter((entry) => ours(entry.workspace))
  await Promise.all(closing.map((entry) => entry.dismiss()))
}
