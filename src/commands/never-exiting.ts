/**
 * Commands that never exit by design — watch modes, development servers, `tail -f` — would hold a run's
 * exec until its timeout and teach the model nothing. They are recognised before they start, also when a
 * package script leads to one (`npm run dev` → `vite`), and refused with the one-shot form to run instead.
 *
 * Decisions:
 * - Bare `vitest` is not refused: without a terminal (tether's exec gives commands none) it runs once.
 *   `vitest watch`, `vitest dev`, `--watch` and `-w` are refused.
 * - A package script named `start`, `dev`, `serve`, `watch`, … is refused by its name even when its text is
 *   not recognised (`node server.js`): projects give those names to commands that keep running. The
 *   refusal names the script's text, so the model can run it directly if it does exit.
 * - `timeout N cmd` is never refused: it ends by construction.
 */
import { clip, formatArgv, quoteWord } from '../present/index.js'
import { type AnalysedNode, analyseArgv, analyseScript, basename } from './analyse.js'
import { packageScripts } from './packages.js'
import { normalisePath } from './paths.js'

/**
 * What the check reads of the workspace: a file's text (package.json, a script it names) and whether an
 * entry exists. The workspace adapter gives it the run's workspace; the check itself stays pure.
 */
export interface WorkspaceFiles {
  /** The text of a workspace file, or undefined when it is missing, not a file or over `maxBytes`. */
  read(relPath: string, maxBytes?: number): string | undefined
  has(relPath: string): boolean
}

export interface LongRunning {
  /** What the command is and why it would not exit. */
  reason: string
  /** The one-shot form to run instead (or what to do when a server has none). */
  alternative: string
}

interface Finding {
  what: string
  /** A command to run instead, or advice when there is no such command. */
  instead: string[] | string
}

type Rule = (args: string[]) => Finding | undefined

const WATCHES = 'watches for changes and never exits'
const SERVES = 'starts a server that runs until it is stopped'
const FOLLOWS = 'follows its output and never exits'
const NO_SERVER =
  'a server has no one-shot form: build or run the tests instead, and if a test needs the server, let the test start and stop it'
const ONCE = 'run the watched command once, directly'

const OFF_VALUE = /=(false|0|no|off)$/i

function on(args: readonly string[], ...names: string[]): boolean {
  const before = args.includes('--') ? args.slice(0, args.indexOf('--')) : args
  return before.some((arg) =>
    names.some((name) => arg === name || (arg.startsWith(`${name}=`) && !OFF_VALUE.test(arg))),
  )
}

function drop(args: readonly string[], ...names: string[]): string[] {
  return args.filter((arg) => !names.some((name) => arg === name || arg.startsWith(`${name}=`)))
}

function positional(args: readonly string[]): string | undefined {
  return args.find((arg) => !arg.startsWith('-'))
}

function without(args: readonly string[], word: string): string[] {
  const at = args.indexOf(word)
  return at === -1 ? [...args] : [...args.slice(0, at), ...args.slice(at + 1)]
}

/** A rule for tools whose subcommands `serves` start a server and `build` is the one-shot form. */
function serverSubcommands(program: string, serves: string[], build: string[], bareServes = false): Rule {
  return (args) => {
    const sub = positional(args)
    const serving = sub === undefined ? bareServes : serves.includes(sub)
    return serving ? { what: SERVES, instead: [program, ...build] } : undefined
  }
}

const always =
  (finding: Finding): Rule =>
  () =>
    finding

/** JavaScript tools: run from node_modules/.bin, so a package script's alternative goes through npx & co. */
const NODE_RULES: Record<string, Rule> = {
  vitest: (args) => {
    const sub = positional(args)
    if (sub === 'watch' || sub === 'dev')
      return { what: WATCHES, instead: ['vitest', 'run', ...without(args, sub)] }
    if (!on(args, '--watch') && !args.includes('-w')) return undefined
    const rest = drop(args, '--watch', '-w')
    return { what: WATCHES, instead: sub === 'run' ? ['vitest', ...rest] : ['vitest', 'run', ...rest] }
  },
  jest: (args) =>
    on(args, '--watch', '--watchAll')
      ? { what: WATCHES, instead: ['jest', '--ci', ...drop(args, '--watch', '--watchAll')] }
      : undefined,
  'react-scripts': (args) => {
    const sub = positional(args)
    if (sub === 'start') return { what: SERVES, instead: ['react-scripts', 'build'] }
    if (sub === 'test' && !args.includes('--watchAll=false')) {
      return { what: WATCHES, instead: ['react-scripts', ...args, '--watchAll=false'] }
    }
    return undefined
  },
  ng: (args) => {
    const sub = positional(args)
    if (sub === 'serve' || sub === 's') return { what: SERVES, instead: ['ng', 'build'] }
    if ((sub === 'test' || sub === 't') && !args.includes('--watch=false') && !args.includes('--no-watch')) {
      return { what: WATCHES, instead: ['ng', ...args, '--watch=false'] }
    }
    return undefined
  },
  vite: (args) => {
    const sub = positional(args)
    return sub === 'build' || sub === 'optimize' ? undefined : { what: SERVES, instead: ['vite', 'build'] }
  },
  next: serverSubcommands('next', ['dev', 'start'], ['build']),
  nuxt: serverSubcommands('nuxt', ['dev', 'preview', 'start'], ['build']),
  nuxi: serverSubcommands('nuxi', ['dev', 'preview', 'start'], ['build']),
  astro: serverSubcommands('astro', ['dev', 'preview', 'start'], ['build']),
  remix: serverSubcommands('remix', ['dev'], ['build']),
  gatsby: serverSubcommands('gatsby', ['develop', 'serve'], ['build']),
  'vue-cli-service': serverSubcommands('vue-cli-service', ['serve'], ['build']),
  docusaurus: serverSubcommands('docusaurus', ['start', 'serve'], ['build']),
  storybook: serverSubcommands('storybook', ['dev', 'start'], ['build']),
  'start-storybook': always({ what: SERVES, instead: ['build-storybook'] }),
  ember: serverSubcommands('ember', ['serve', 's', 'server'], ['build']),
  'svelte-kit': serverSubcommands('svelte-kit', ['dev', 'preview'], ['build']),
  webpack: serverSubcommands('webpack', ['serve', 's', 'server'], []),
  'webpack-dev-server': always({ what: SERVES, instead: ['webpack'] }),
  parcel: (args) =>
    positional(args) === 'build'
      ? undefined
      : { what: SERVES, instead: ['parcel', 'build', ...args.filter((a) => a !== 'serve' && a !== 'watch')] },
  nodemon: (args) => ({ what: WATCHES, instead: ['node', ...args] }),
  'node-dev': (args) => ({ what: WATCHES, instead: ['node', ...args] }),
  'ts-node-dev': (args) => ({ what: WATCHES, instead: ['ts-node', ...args] }),
  tsnd: (args) => ({ what: WATCHES, instead: ['ts-node', ...args] }),
  tsx: (args) =>
    positional(args) === 'watch' ? { what: WATCHES, instead: ['tsx', ...without(args, 'watch')] } : undefined,
  'tsc-watch': always({ what: WATCHES, instead: ['tsc', '--noEmit'] }),
  onchange: always({ what: WATCHES, instead: ONCE }),
  chokidar: always({ what: WATCHES, instead: ONCE }),
  'npm-watch': always({ what: WATCHES, instead: ONCE }),
  'live-server': always({ what: SERVES, instead: NO_SERVER }),
  'http-server': always({ what: SERVES, instead: NO_SERVER }),
  serve: always({ what: SERVES, instead: NO_SERVER }),
  'lite-server': always({ what: SERVES, instead: NO_SERVER }),
  'browser-sync': always({ what: SERVES, instead: NO_SERVER }),
  'json-server': always({ what: SERVES, instead: NO_SERVER }),
}

/** `-f`/`--follow`, also inside a cluster (`-fu nginx`, `-n5f`): the command follows its output forever. */
function follows(program: readonly string[], letters = 'f'): Rule {
  const cluster = new RegExp(`^-[a-zA-Z0-9]*[${letters}][a-zA-Z0-9]*$`)
  const isFollow = (arg: string) => arg === '--follow' || arg.startsWith('--follow=') || cluster.test(arg)
  return (args) => {
    if (!args.some(isFollow)) return undefined
    const kept = args.flatMap((arg) => {
      if (!isFollow(arg)) return [arg]
      const rest = arg.startsWith('--') ? '' : arg.replace(new RegExp(`[${letters}]`, 'g'), '')
      return rest === '-' || rest === '' ? [] : [rest]
    })
    return { what: FOLLOWS, instead: [...program, ...kept] }
  }
}

const INTERACTIVE: Finding = {
  what: 'is interactive and waits for a terminal that commands here do not have',
  instead: 'read_file, write_file and edit_file for files; a non-interactive command for anything else',
}

const SYSTEM_RULES: Record<string, Rule> = {
  cargo: (args) => (positional(args) === 'watch' ? cargoWatch(without(args, 'watch')) : undefined),
  'cargo-watch': (args) => cargoWatch(args),
  watchexec: always({ what: WATCHES, instead: ONCE }),
  entr: always({ what: WATCHES, instead: ONCE }),
  watch: always({ what: 'repeats a command forever', instead: ONCE }),
  'http.server': always({ what: SERVES, instead: NO_SERVER }),
  flask: (args) => (positional(args) === 'run' ? { what: SERVES, instead: NO_SERVER } : undefined),
  uvicorn: always({ what: SERVES, instead: NO_SERVER }),
  gunicorn: always({ what: SERVES, instead: NO_SERVER }),
  hypercorn: always({ what: SERVES, instead: NO_SERVER }),
  daphne: always({ what: SERVES, instead: NO_SERVER }),
  'waitress-serve': always({ what: SERVES, instead: NO_SERVER }),
  puma: always({ what: SERVES, instead: NO_SERVER }),
  unicorn: always({ what: SERVES, instead: NO_SERVER }),
  rackup: always({ what: SERVES, instead: NO_SERVER }),
  thin: always({ what: SERVES, instead: NO_SERVER }),
  air: always({ what: WATCHES, instead: ['go', 'build', './...'] }),
  streamlit: (args) => (positional(args) === 'run' ? { what: SERVES, instead: NO_SERVER } : undefined),
  jupyter: (args) =>
    ['notebook', 'lab', 'server'].includes(positional(args) ?? '')
      ? { what: SERVES, instead: NO_SERVER }
      : undefined,
  'manage.py': (args) =>
    positional(args) === 'runserver'
      ? { what: SERVES, instead: ['python3', 'manage.py', 'test'] }
      : undefined,
  'django-admin': (args) =>
    positional(args) === 'runserver' ? { what: SERVES, instead: ['django-admin', 'test'] } : undefined,
  pytest: (args) =>
    on(args, '-f', '--looponfail')
      ? { what: WATCHES, instead: ['pytest', ...drop(args, '-f', '--looponfail')] }
      : undefined,
  ptw: always({ what: WATCHES, instead: ['pytest'] }),
  'pytest-watch': always({ what: WATCHES, instead: ['pytest'] }),
  rails: serverSubcommands('bin/rails', ['s', 'server'], ['test']),
  guard: always({ what: WATCHES, instead: ['bundle', 'exec', 'rake', 'test'] }),
  php: (args) =>
    args.includes('-S') || (basename(args[0] ?? '') === 'artisan' && args[1] === 'serve')
      ? { what: SERVES, instead: NO_SERVER }
      : undefined,
  symfony: (args) =>
    ['serve', 'server:start'].includes(positional(args) ?? '') && !on(args, '-d', '--daemon')
      ? { what: SERVES, instead: NO_SERVER }
      : undefined,
  mix: (args) => {
    if (args.includes('phx.server')) return { what: SERVES, instead: ['mix', 'compile'] }
    return positional(args) === 'test.watch' ? { what: WATCHES, instead: ['mix', 'test'] } : undefined
  },
  iex: (args) => (args.includes('phx.server') ? { what: SERVES, instead: ['mix', 'compile'] } : undefined),
  dotnet: (args) => {
    if (positional(args) !== 'watch') return undefined
    const rest = without(args, 'watch')
    return { what: WATCHES, instead: ['dotnet', ...(rest.length > 0 ? rest : ['build'])] }
  },
  gradle: gradleRule('gradle'),
  gradlew: gradleRule('./gradlew'),
  mvn: mavenRule('mvn'),
  mvnw: mavenRule('./mvnw'),
  sbt: (args) =>
    args.some((arg) => arg.startsWith('~'))
      ? { what: WATCHES, instead: ['sbt', ...args.map((arg) => arg.replace(/^~\s*/, ''))] }
      : undefined,
  hugo: serverSubcommands('hugo', ['server', 'serve'], []),
  jekyll: serverSubcommands('jekyll', ['serve', 's', 'server'], ['build']),
  mkdocs: serverSubcommands('mkdocs', ['serve'], ['build']),
  mdbook: serverSubcommands('mdbook', ['serve', 'watch'], ['build']),
  zola: serverSubcommands('zola', ['serve'], ['build']),
  deno: serverSubcommands('deno', ['serve'], ['check', '.']),
  docker: (args) => containerRule('docker', args),
  podman: (args) => containerRule('podman', args),
  'docker-compose': (args) => composeRule(['docker-compose'], args),
  'podman-compose': (args) => composeRule(['podman-compose'], args),
  kubectl: (args) => {
    const sub = positional(args)
    if (sub === 'port-forward' || sub === 'proxy') return { what: SERVES, instead: NO_SERVER }
    return sub === 'logs' || sub === 'attach' ? follows(['kubectl'])(args) : undefined
  },
  tail: follows(['tail'], 'fF'),
  journalctl: follows(['journalctl']),
  sleep: (args) =>
    args.some((arg) => /^inf(inity)?$/i.test(arg))
      ? {
          what: 'never wakes up',
          instead: 'a bounded `sleep N`, or a command that exits once what you wait for is ready',
        }
      : undefined,
  yes: always({
    what: 'prints forever',
    instead: "the program's own non-interactive flag (for example `--yes`)",
  }),
  ping: (args) =>
    args.some((arg) => /^-[a-zA-Z]*c/.test(arg) || arg.startsWith('--count'))
      ? undefined
      : { what: 'pings until it is stopped', instead: ['ping', '-c', '3', ...args] },
  nc: netcatRule,
  netcat: netcatRule,
  ncat: netcatRule,
  vi: always(INTERACTIVE),
  vim: always(INTERACTIVE),
  nvim: always(INTERACTIVE),
  nano: always(INTERACTIVE),
  emacs: (args) => (args.includes('--batch') || args.includes('--script') ? undefined : INTERACTIVE),
  top: always({ ...INTERACTIVE, instead: ['ps', '-ef'] }),
  htop: always({ ...INTERACTIVE, instead: ['ps', '-ef'] }),
}

function cargoWatch(args: string[]): Finding {
  const command = args[args.indexOf('-x') + 1]
  return {
    what: WATCHES,
    instead: ['cargo', ...(args.includes('-x') && command ? command.split(' ') : ['build'])],
  }
}

function gradleRule(program: string): Rule {
  return (args) => {
    if (on(args, '--continuous') || args.includes('-t')) {
      return { what: WATCHES, instead: [program, ...drop(args, '--continuous', '-t')] }
    }
    return args.includes('bootRun') ? { what: SERVES, instead: [program, 'build'] } : undefined
  }
}

function mavenRule(program: string): Rule {
  return (args) =>
    args.some((arg) => ['spring-boot:run', 'jetty:run', 'quarkus:dev', 'tomcat7:run'].includes(arg))
      ? { what: SERVES, instead: [program, '-B', 'package'] }
      : undefined
}

function composeRule(program: string[], args: string[]): Finding | undefined {
  const sub = positional(args)
  if (sub === 'up' && !on(args, '-d', '--detach')) {
    return {
      what: SERVES,
      instead: `\`${formatArgv([...program, ...args, '--detach'])}\` starts the services in the background (stop them with \`${formatArgv([...program, 'down'])}\`)`,
    }
  }
  return sub === 'logs' ? follows(program)(args) : undefined
}

function containerRule(program: string, args: string[]): Finding | undefined {
  if (args[0] === 'compose') return composeRule([program, 'compose'], args.slice(1))
  return positional(args) === 'logs' ? follows([program])(args) : undefined
}

function netcatRule(args: string[]): Finding | undefined {
  return args.some((arg) => arg === '--listen' || /^-[a-zA-Z]*l/.test(arg))
    ? { what: SERVES, instead: NO_SERVER }
    : undefined
}

/** Flags that mean "watch" for any program; text tools are exempt (`--watch` there is just data). */
const WATCH_FLAGS = ['--watch', '--watchAll', '--watch-all', '--hot', '--continuous']
/** Programs for which `-w` means `--watch`. */
const SHORT_WATCH = new Set([
  'tsc',
  'vitest',
  'webpack',
  'rollup',
  'babel',
  'mocha',
  'sass',
  'ava',
  'coffee',
  'kubectl',
])
const TEXT_TOOLS = new Set([
  'git',
  'echo',
  'printf',
  'grep',
  'egrep',
  'rg',
  'ag',
  'sed',
  'awk',
  'cat',
  'jq',
  'find',
  'ls',
  'head',
  'wc',
  'sort',
  'diff',
])

function genericWatch(program: string, args: string[]): Finding | undefined {
  if (TEXT_TOOLS.has(program)) return undefined
  const short = SHORT_WATCH.has(program) && args.includes('-w')
  if (!short && !on(args, ...WATCH_FLAGS)) return undefined
  return { what: WATCHES, instead: [program, ...drop(args, ...WATCH_FLAGS, ...(short ? ['-w'] : []))] }
}

// ---------------------------------------------------------------------------------------------------------
// Runners and package scripts. What a command runs through wrappers, shells and runners is the policy's
// analysis (the same one that judges it), so the two cannot disagree; package scripts are read here.

/** How each package manager runs a JavaScript tool installed in the project. */
const RUNNERS: Record<string, string[]> = {
  npm: ['npx'],
  pnpm: ['pnpm', 'exec'],
  yarn: ['yarn'],
  bun: ['bunx'],
}
/** Wrappers that run a project's JavaScript tool, and how to spell that again in an alternative. */
const JS_RUNNERS: Record<string, string[]> = {
  npx: ['npx'],
  pnpx: ['pnpx'],
  bunx: ['bunx'],
  'npm exec': ['npx'],
  'npm x': ['npx'],
  'pnpm exec': ['pnpm', 'exec'],
  'pnpm dlx': ['pnpm', 'dlx'],
  'yarn exec': ['yarn'],
  'yarn dlx': ['yarn', 'dlx'],
  'bun x': ['bunx'],
}

/** A package script call: `npm run dev`, `pnpm test`, `yarn build`, `bun run watch`. */
interface ScriptCall {
  manager: string
  /** Workspace-relative directory holding the package.json; undefined when it cannot be told. */
  dir: string | undefined
  script: string
  /** Arguments the manager appends to the script's command. */
  extra: string[]
}

const LIFECYCLE: Record<string, string> = {
  start: 'start',
  test: 'test',
  t: 'test',
  tst: 'test',
  stop: 'stop',
  restart: 'restart',
}
const PNPM_BUILTINS = new Set([
  'add',
  'install',
  'i',
  'remove',
  'rm',
  'update',
  'up',
  'list',
  'ls',
  'why',
  'publish',
  'pack',
  'link',
  'unlink',
  'outdated',
  'audit',
  'store',
  'config',
  'init',
  'import',
  'rebuild',
  'prune',
  'fetch',
  'patch',
  'deploy',
  'env',
  'setup',
  'create',
  'licenses',
  'root',
  'bin',
])
const YARN_BUILTINS = new Set([
  'add',
  'install',
  'remove',
  'upgrade',
  'up',
  'init',
  'info',
  'cache',
  'config',
  'global',
  'link',
  'unlink',
  'pack',
  'publish',
  'why',
  'workspaces',
  'workspace',
  'outdated',
  'audit',
  'bin',
  'set',
  'plugin',
  'npm',
  'constraints',
  'version',
])
const BUN_BUILTINS = new Set([
  'install',
  'i',
  'add',
  'remove',
  'rm',
  'update',
  'build',
  'test',
  'create',
  'upgrade',
  'pm',
  'init',
  'link',
  'unlink',
  'outdated',
  'publish',
  'patch',
  'repl',
  'exec',
])

/** Manager flags before the command: where they point, and which take a value. */
function managerPrefix(args: string[]): { at: number; dir: string | undefined } {
  let dir: string | undefined = '.'
  let at = 0
  while (at < args.length && args[at]!.startsWith('-')) {
    const arg = args[at]!
    const [name, inline] = arg.split('=', 2) as [string, string | undefined]
    const value = inline ?? args[at + 1]
    const consumed = inline === undefined ? 2 : 1
    if (['--prefix', '-C', '--dir', '--cwd'].includes(name)) {
      dir = value === undefined ? undefined : normalisePath(value)
      at += consumed
    } else if (['-w', '--workspace', '--filter', '-F'].includes(name)) {
      dir = undefined
      at += consumed
    } else {
      if (['-r', '--recursive', '--workspaces', '-ws'].includes(name)) dir = undefined
      at += 1
    }
  }
  return { at, dir }
}

function scriptCall(
  files: WorkspaceFiles,
  manager: string,
  args: string[],
): ScriptCall | { kind: 'argv'; argv: string[]; runner: string[] } | undefined {
  const { at, dir } = managerPrefix(args)
  const command = args[at]
  const rest = args.slice(at + 1)
  const afterDashes = (list: string[]) => (list.includes('--') ? list.slice(list.indexOf('--') + 1) : [])
  const passThrough = (list: string[]) => (list[0] === '--' ? list.slice(1) : list)
  if (command === undefined) return undefined
  if (
    command === 'run' ||
    command === 'run-script' ||
    (manager === 'npm' && (command === 'rum' || command === 'urn'))
  ) {
    const nameAt = rest.findIndex((arg) => !arg.startsWith('-'))
    if (nameAt === -1) return undefined
    const script = rest[nameAt]!
    const extra = manager === 'npm' ? afterDashes(rest) : passThrough(rest.slice(nameAt + 1))
    if (manager === 'bun' || manager === 'yarn') {
      if (dir !== undefined && !Object.hasOwn(scriptsOf(files, dir), script))
        return { kind: 'argv', argv: [script, ...extra], runner: RUNNERS[manager]! }
    }
    return { manager, dir, script, extra }
  }
  const lifecycle = LIFECYCLE[command]
  if (lifecycle && !(manager === 'bun' && command === 'test')) {
    return {
      manager,
      dir,
      script: lifecycle,
      extra: manager === 'npm' ? afterDashes(rest) : passThrough(rest),
    }
  }
  if (manager === 'npm') return undefined
  const builtins = manager === 'pnpm' ? PNPM_BUILTINS : manager === 'yarn' ? YARN_BUILTINS : BUN_BUILTINS
  if (builtins.has(command)) return undefined
  // `pnpm dev`, `yarn dev`, `bun dev`: the script of that name, else the program of that name.
  if (dir === undefined || Object.hasOwn(scriptsOf(files, dir), command))
    return { manager, dir, script: command, extra: passThrough(rest) }
  return manager === 'bun'
    ? undefined
    : { kind: 'argv', argv: [command, ...passThrough(rest)], runner: RUNNERS[manager]! }
}

function scriptsOf(files: WorkspaceFiles, dir: string): Record<string, string> {
  const manifestPath = dir === '.' ? 'package.json' : `${dir}/package.json`
  try {
    return packageScripts(JSON.parse(files.read(manifestPath) ?? '{}'))
  } catch {
    return {}
  }
}

/** Names projects give to scripts that keep running. */
function namedLikeLongRunning(script: string): boolean {
  return script
    .split(/[:_-]/)
    .some((part) => ['start', 'dev', 'develop', 'serve', 'server', 'watch', 'preview'].includes(part))
}

/** `build:*` (npm-run-all's glob over script names, `:` separated) as a test on names. */
function scriptNamePattern(pattern: string): (name: string) => boolean {
  const source = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((piece) => piece.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^:]*'),
    )
    .join('.*')
  const regex = new RegExp(`^${source}$`)
  return (name) => regex.test(name)
}

// ---------------------------------------------------------------------------------------------------------
// Judging

interface Found {
  argv: string[]
  finding: Finding
  /** How the command was reached: `npm run dev` → the script's text → … */
  trail: string[]
  /** How JavaScript tools were run on the way here (`npx`, `pnpm exec`, a package script's manager). */
  runner: string[] | undefined
}

interface Context {
  files: WorkspaceFiles
  trail: string[]
  runner: string[] | undefined
  depth: number
}

/** How deep package scripts and script files are followed (`npm run a` → `npm run b` → … ). */
const MAX_DEPTH = 8
const SCRIPT_TEXT_SHOWN = 160
const SCRIPT_FILE_LIMIT = 256 * 1024

function programName(word: string): string {
  return basename(word).replace(/\.(exe|cmd|bat)$/i, '')
}

function judgeArgv(argv: readonly string[], context: Context): Found | undefined {
  if (argv.length === 0 || context.depth > MAX_DEPTH) return undefined
  return judgeNodes(analyseArgv(argv), context)
}

function judgeText(text: string, context: Context): Found | undefined {
  if (context.depth > MAX_DEPTH) return undefined
  return judgeNodes(analyseScript(text), context)
}

/**
 * Judges every command of an analysed call. Wrappers are followed by the analysis; a command under
 * `timeout` ends by construction; the trail shows the outermost spelling once (`npx -y vitest -w` → `vitest -w`).
 */
function judgeNodes(nodes: readonly AnalysedNode[], context: Context): Found | undefined {
  const exits = nodes.some(
    (n) => n.kind === 'command' && !n.probe && ['break', 'exit', 'return'].includes(n.argv[0] ?? ''),
  )
  const ancestors: AnalysedNode[] = []
  for (const node of nodes) {
    if (node.probe || (node.kind !== 'command' && node.kind !== 'wrapper')) continue
    while (ancestors.length > 0 && ancestors.at(-1)!.depth >= node.depth) ancestors.pop()
    if (ancestors.some((a) => ['timeout', 'gtimeout'].includes(programName(a.argv[0]!)))) continue
    if (node.kind === 'wrapper') {
      // Some wrappers never exit themselves (`watch`, `nodemon`, `entr`), whatever they run.
      const program = programName(node.argv[0]!)
      const finding = NODE_RULES[program]?.(node.argv.slice(1)) ?? SYSTEM_RULES[program]?.(node.argv.slice(1))
      if (finding) return { argv: [...node.argv], finding, trail: context.trail, runner: context.runner }
      ancestors.push(node)
      continue
    }
    const here: Context = {
      ...context,
      runner: runnerOf(ancestors) ?? context.runner,
      trail:
        ancestors.length > 0 ? [...context.trail, `\`${formatArgv(ancestors[0]!.argv)}\``] : context.trail,
    }
    const found = judgeCommand(node, ancestors.at(-1), here, exits)
    if (found) return found
  }
  return undefined
}

/** How the wrappers above a command run JavaScript tools (`npx`, `pnpm exec`, …), for an alternative. */
function runnerOf(ancestors: readonly AnalysedNode[]): string[] | undefined {
  for (let i = ancestors.length - 1; i >= 0; i--) {
    const argv = ancestors[i]!.argv
    const program = programName(argv[0]!)
    const sub = argv.slice(1).find((arg) => !arg.startsWith('-'))
    const runner = JS_RUNNERS[program] ?? (sub === undefined ? undefined : JS_RUNNERS[`${program} ${sub}`])
    if (runner) return runner
  }
  return undefined
}

function judgeCommand(
  node: AnalysedNode,
  parent: AnalysedNode | undefined,
  context: Context,
  exits: boolean,
): Found | undefined {
  const argv = [...node.argv]
  const [first] = argv
  const endless =
    (node.loop === 'while' && (first === 'true' || first === ':')) ||
    (node.loop === 'until' && first === 'false')
  if (endless && !exits) {
    const finding = {
      what: 'is an endless loop',
      instead: 'run the loop body once, or loop a bounded number of times',
    }
    return { argv: [node.loop!, ...argv], finding, trail: context.trail, runner: context.runner }
  }
  const program = programName(first!)
  const args = argv.slice(1)
  if (args.includes('--help') || args.includes('--version')) return undefined
  const deeper = (label: string, runner = context.runner): Context => ({
    ...context,
    depth: context.depth + 1,
    runner,
    trail: [...context.trail, label],
  })
  // `bash script.sh`: the script file's commands.
  if (parent?.note === 'runs a script file') {
    const text = context.files.read(first!, SCRIPT_FILE_LIMIT)
    if (text === undefined) return undefined
    // The trail already shows the shell call: it is the one that runs the file.
    const shell = context.trail.at(-1) ?? `\`${formatArgv(argv)}\``
    return judgeText(text, {
      ...deeper(''),
      trail: [...context.trail.slice(0, -1), `${shell} runs ${first}`],
    })
  }
  const interpreted = interpretedTool(program, args)
  if (interpreted)
    return judgeArgv(interpreted.argv, {
      ...deeper(`\`${formatArgv(argv)}\``),
      runner: interpreted.runner ?? context.runner,
    })
  if (['npm', 'pnpm', 'yarn', 'bun'].includes(program)) {
    const call = scriptCall(context.files, program, args)
    if (call && 'kind' in call) return judgeArgv(call.argv, deeper(`\`${formatArgv(argv)}\``, call.runner))
    if (call?.script.includes('*'))
      return judgeScriptNames(call.script, program, `\`${formatArgv(argv)}\``, context)
    if (call) return judgeScript(call, `\`${formatArgv(argv)}\``, context)
  }
  const finding = NODE_RULES[program]?.(args) ?? SYSTEM_RULES[program]?.(args) ?? genericWatch(program, args)
  return finding ? { argv, finding, trail: context.trail, runner: context.runner } : undefined
}

/** Interpreters running a known tool: `python -m http.server`, `python manage.py`, `node node_modules/vite/…`. */
function interpretedTool(program: string, args: string[]): { argv: string[]; runner?: string[] } | undefined {
  if (/^(python|pypy)[0-9.]*$|^py$/.test(program)) {
    let i = 0
    while (i < args.length && args[i]!.startsWith('-') && args[i] !== '-m')
      i += /^-[WXQ]$/.test(args[i]!) ? 2 : 1
    if (args[i] === '-m' && args[i + 1] !== undefined) return { argv: args.slice(i + 1) }
    if (args[i] !== undefined && basename(args[i]!) === 'manage.py')
      return { argv: ['manage.py', ...args.slice(i + 1)] }
    return undefined
  }
  if (program === 'node' || program === 'bun') {
    // `node node_modules/vite/bin/vite.js` is `vite`.
    let i = 0
    while (i < args.length && args[i]!.startsWith('-'))
      i += /^(-r|--require|--import|--loader)$/.test(args[i]!) ? 2 : 1
    const script = args[i]
    if (script?.includes('node_modules/')) {
      const name = basename(script).replace(/\.[cm]?js$/, '')
      return { argv: [name, ...args.slice(i + 1)], runner: ['npx'] }
    }
  }
  return undefined
}

function judgeScript(call: ScriptCall, label: string, context: Context): Found | undefined {
  const scripts = call.dir === undefined ? undefined : scriptsOf(context.files, call.dir)
  const text = scripts?.[call.script]
  const scriptContext = (name: string, body: string): Context => ({
    ...context,
    depth: context.depth + 1,
    runner: RUNNERS[call.manager],
    trail: [...context.trail, `${label} runs the package script "${name}" (\`${clipText(body)}\`)`],
  })
  for (const [name, body] of [
    [`pre${call.script}`, scripts?.[`pre${call.script}`]],
    [call.script, text],
  ] as const) {
    if (body === undefined) continue
    // The manager appends the extra arguments to the script's text and runs it with a shell.
    const extra = name === call.script ? call.extra.map((arg) => ` ${quoteWord(arg)}`).join('') : ''
    const found = judgeText(`${body}${extra}`, scriptContext(name, body))
    if (found) return found
  }
  const byName = (what: string, instead: string): Found => ({
    argv: [],
    finding: { what, instead },
    trail: [...context.trail, label],
    runner: RUNNERS[call.manager],
  })
  if (text === undefined) {
    // `npm start` without a start script runs `node server.js` when that file exists.
    if (
      call.script === 'start' &&
      call.manager === 'npm' &&
      call.dir !== undefined &&
      scripts !== undefined
    ) {
      const server = call.dir === '.' ? 'server.js' : `${call.dir}/server.js`
      if (context.files.has(server)) return byName(`runs \`node server.js\`, which ${SERVES}`, NO_SERVER)
    }
    if (scripts === undefined && namedLikeLongRunning(call.script)) {
      return byName(
        `runs a script named "${call.script}" in a package tether could not read; projects give that name to commands that keep running`,
        'run the command the script stands for directly, if it exits by itself',
      )
    }
    return undefined
  }
  if (namedLikeLongRunning(call.script)) {
    return byName(
      `runs the package script "${call.script}" (\`${clipText(text)}\`); projects give that name to commands that keep running (servers, watchers)`,
      `if it exits by itself, run its command directly: \`${clipText(text)}\``,
    )
  }
  return undefined
}

function clipText(text: string): string {
  return clip(text.replace(/\s+/g, ' ').trim(), SCRIPT_TEXT_SHOWN)
}

/** The scripts a name or an npm-run-all style pattern (`watch:*`) stands for, judged one by one. */
function judgeScriptNames(
  pattern: string,
  manager: string,
  label: string,
  context: Context,
): Found | undefined {
  const names = pattern.includes('*')
    ? Object.keys(scriptsOf(context.files, '.')).filter(scriptNamePattern(pattern))
    : [pattern]
  for (const script of names) {
    const found = judgeScript({ manager, dir: '.', script, extra: [] }, label, context)
    if (found) return found
  }
  return undefined
}

/** JavaScript tools without a rule of their own (their `--watch` is caught by the generic check). */
const NODE_BINARIES = new Set([
  'tsc',
  'rollup',
  'tsup',
  'babel',
  'mocha',
  'sass',
  'ava',
  'esbuild',
  'eslint',
  'prettier',
  'ts-node',
  'coffee',
  'eleventy',
])

function alternativeOf(found: Found): string {
  const { instead } = found.finding
  if (typeof instead === 'string') return instead
  const program = instead[0] ?? ''
  // A JavaScript tool reached through npx or a package script lives in node_modules/.bin, not on PATH.
  const local = NODE_RULES[program] !== undefined || NODE_BINARIES.has(program)
  return `\`${formatArgv([...(local && found.runner ? found.runner : []), ...instead])}\``
}

/**
 * Whether `argv`, run in the workspace `files` show, is a command that never exits by design; if so, why
 * and what to run instead. Reads the workspace's package.json to follow package scripts.
 */
export function neverExitingCommand(files: WorkspaceFiles, argv: readonly string[]): LongRunning | undefined {
  const found = judgeArgv(argv, { files, trail: [], runner: undefined, depth: 0 })
  if (!found) return undefined
  // `npm run dev` runs the package script "dev" (`vite`) → `vite` starts a server that runs until it is stopped
  const reason =
    found.argv.length > 0
      ? [...found.trail, `\`${formatArgv(found.argv)}\` ${found.finding.what}`].join(' → ')
      : `${found.trail.join(' → ')} ${found.finding.what}`
  return { reason, alternative: alternativeOf(found) }
}
