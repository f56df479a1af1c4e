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
import path from 'node:path'
import { hasEntry, readWorkspaceText } from './io.js'
import { type ShellCommand, shellCommands } from './shell-words.js'
import { formatArgv, packageScripts } from './toolchain.js'

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
    args.includes('-S') || (path.basename(args[0] ?? '') === 'artisan' && args[1] === 'serve')
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
// Unwrapping: wrappers that run another command, and package managers that run package scripts.

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

/** Wrappers → their options that take a value (so the value is not mistaken for the command). */
const WRAPPERS: Record<string, string[]> = {
  env: ['-u', '--unset', '-C', '--chdir'],
  nice: ['-n', '--adjustment'],
  nohup: [],
  time: ['-f', '-o'],
  exec: ['-a'],
  stdbuf: ['-i', '-o', '-e'],
  setsid: [],
  ionice: ['-c', '-n', '-p'],
  sudo: ['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-T'],
  doas: ['-u', '-C'],
  'cross-env': [],
  npx: ['-p', '--package'],
  pnpx: ['-p', '--package'],
  bunx: ['-p', '--package'],
  command: [],
}

/** `<tool> <sub> cmd…` forms that run another program. */
const SUB_WRAPPERS: Record<string, string[]> = {
  uv: ['run'],
  poetry: ['run'],
  pipenv: ['run'],
  pdm: ['run'],
  hatch: ['run'],
  rye: ['run'],
  bundle: ['exec'],
  mise: ['exec', 'x'],
  rtx: ['exec', 'x'],
  pnpm: ['exec', 'dlx'],
  yarn: ['exec', 'dlx'],
  npm: ['exec', 'x'],
  bun: ['x'],
}

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/

/** Index of the first argument that is not an option (or an option's value, or an assignment). */
function commandStart(args: readonly string[], valued: readonly string[], assignments: boolean): number {
  let at = 0
  while (at < args.length) {
    const arg = args[at]!
    if (arg === '--') return at + 1
    if (assignments && ASSIGNMENT.test(arg)) at += 1
    else if (valued.includes(arg)) at += 2
    else if (arg.startsWith('-') && arg.length > 1) at += 1
    else break
  }
  return at
}

type Unwrapped =
  | { kind: 'argv'; argv: string[]; runner?: string[] }
  | { kind: 'shell'; text: string }
  | { kind: 'bounded' }
  | undefined

function unwrap(program: string, args: string[]): Unwrapped {
  if (program === 'timeout' || program === 'gtimeout') return { kind: 'bounded' }
  if (program === 'command' && (args.includes('-v') || args.includes('-V'))) return { kind: 'bounded' }
  if (program === 'env') {
    const split = args.findIndex((arg) => arg === '-S' || arg === '--split-string')
    if (split !== -1) return { kind: 'shell', text: args.slice(split + 1).join(' ') }
  }
  if ((program === 'npx' || program === 'pnpx') && args.includes('-c')) {
    return { kind: 'shell', text: args[args.indexOf('-c') + 1] ?? '' }
  }
  const valued = WRAPPERS[program]
  if (valued && JS_RUNNERS[program]) {
    return { kind: 'argv', argv: args.slice(commandStart(args, valued, false)), runner: JS_RUNNERS[program] }
  }
  if (valued) {
    return {
      kind: 'argv',
      argv: args.slice(commandStart(args, valued, program === 'env' || program === 'cross-env')),
    }
  }
  const subs = SUB_WRAPPERS[program]
  const sub = positional(args)
  if (subs && sub !== undefined && subs.includes(sub)) {
    const rest = args.slice(args.indexOf(sub) + 1)
    const runner = JS_RUNNERS[`${program} ${sub}`]
    return {
      kind: 'argv',
      argv: rest.slice(commandStart(rest, ['--with', '--python', '-p', '--package'], false)),
      ...(runner ? { runner } : {}),
    }
  }
  if (program === 'dotenv')
    return { kind: 'argv', argv: args.slice(commandStart(args, ['-e', '-v', '-c'], false)) }
  if (program === 'cross-env-shell')
    return { kind: 'shell', text: args.filter((arg) => !ASSIGNMENT.test(arg)).join(' ') }
  if (['python', 'python3', 'py', 'python2'].includes(program)) return unwrapPython(args)
  if (program === 'node' || program === 'bun') {
    // `node node_modules/vite/bin/vite.js` is `vite`.
    const script = args[commandStart(args, ['-r', '--require', '--import', '--loader'], false)]
    if (script?.includes('node_modules/')) {
      const name = path.basename(script).replace(/\.[cm]?js$/, '')
      return { kind: 'argv', argv: [name, ...args.slice(args.indexOf(script) + 1)], runner: ['npx'] }
    }
  }
  return undefined
}

function unwrapPython(args: string[]): Unwrapped {
  const start = commandStart(args, ['-X', '-W', '-m', '-c'], false)
  const module = args.indexOf('-m')
  if (module !== -1 && module < start) return { kind: 'argv', argv: args.slice(module + 1) }
  const script = args[start]
  return script && path.basename(script) === 'manage.py'
    ? { kind: 'argv', argv: ['manage.py', ...args.slice(start + 1)] }
    : undefined
}

/** `sh -c TEXT` (also `bash -lc`, `zsh -ec`, …): the text; `bash script.sh`: the script's path. */
function shellPayload(program: string, args: string[]): { text: string } | { file: string } | undefined {
  if (!['sh', 'bash', 'zsh', 'dash', 'ksh', 'ash'].includes(program)) return undefined
  for (let at = 0; at < args.length; at++) {
    const arg = args[at]!
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg)) return { text: args[at + 1] ?? '' }
    if (arg === '-o' || arg === '+o') at += 1
    else if (!arg.startsWith('-') && !arg.startsWith('+')) return { file: arg }
  }
  return undefined
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
      dir = value === undefined ? undefined : path.posix.normalize(value)
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
  root: string,
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
      if (dir !== undefined && !Object.hasOwn(scriptsOf(root, dir), script))
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
  if (dir === undefined || Object.hasOwn(scriptsOf(root, dir), command))
    return { manager, dir, script: command, extra: passThrough(rest) }
  return manager === 'bun'
    ? undefined
    : { kind: 'argv', argv: [command, ...passThrough(rest)], runner: RUNNERS[manager]! }
}

function scriptsOf(root: string, dir: string): Record<string, string> {
  const manifestPath = dir === '.' ? 'package.json' : `${dir}/package.json`
  try {
    return packageScripts(JSON.parse(readWorkspaceText(root, manifestPath) ?? '{}'))
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
  root: string
  trail: string[]
  runner: string[] | undefined
  depth: number
  /** Inside a chain of wrappers, whose outermost spelling is already on the trail. */
  wrapped: boolean
}

/** How deep wrappers and scripts are followed (`npm run a` → `npm run b` → … ). */
const MAX_DEPTH = 8
const SCRIPT_TEXT_SHOWN = 160

function programName(word: string): string {
  return path.basename(word).replace(/\.(exe|cmd|bat)$/i, '')
}

function judgeArgv(argv: readonly string[], context: Context): Found | undefined {
  if (argv.length === 0 || context.depth > MAX_DEPTH) return undefined
  const program = programName(argv[0]!)
  const args = argv.slice(1)
  if (args.includes('--help') || args.includes('--version')) return undefined
  const deeper = (label: string): Context => ({
    ...context,
    depth: context.depth + 1,
    trail: [...context.trail, label],
    wrapped: false,
  })
  const unwrapped = unwrap(program, args)
  if (unwrapped?.kind === 'bounded') return undefined
  if (unwrapped?.kind === 'argv') return judgeUnwrapped(argv, unwrapped, context)
  if (unwrapped?.kind === 'shell') return judgeShell(unwrapped.text, deeper(`\`${formatArgv(argv)}\``))
  const payload = shellPayload(program, args)
  if (payload && 'text' in payload) return judgeShell(payload.text, deeper(`\`${formatArgv(argv)}\``))
  if (payload && 'file' in payload) {
    const text = readWorkspaceText(context.root, payload.file, 256 * 1024)
    return text === undefined
      ? undefined
      : judgeShell(text, deeper(`\`${formatArgv(argv)}\` runs ${payload.file}`))
  }
  if (['npm', 'pnpm', 'yarn', 'bun'].includes(program)) {
    const call = scriptCall(context.root, program, args)
    if (call && 'kind' in call) return judgeUnwrapped(argv, call, context)
    if (call) return judgeScript(call, `\`${formatArgv(argv)}\``, context)
  }
  if (program === 'concurrently') return judgeConcurrently(args, deeper(`\`${formatArgv(argv)}\``))
  if (['run-p', 'run-s', 'npm-run-all'].includes(program))
    return judgeRunAll(args, `\`${formatArgv(argv)}\``, context)
  const finding = NODE_RULES[program]?.(args) ?? SYSTEM_RULES[program]?.(args) ?? genericWatch(program, args)
  return finding ? { argv: [...argv], finding, trail: context.trail, runner: context.runner } : undefined
}

/** Judges what a wrapper runs; the trail shows the outermost spelling once (`npx vitest -w` → `vitest -w`). */
function judgeUnwrapped(
  argv: readonly string[],
  unwrapped: { argv: string[]; runner?: string[] },
  context: Context,
): Found | undefined {
  return judgeArgv(unwrapped.argv, {
    ...context,
    depth: context.depth + 1,
    runner: unwrapped.runner ?? context.runner,
    trail: context.wrapped ? context.trail : [...context.trail, `\`${formatArgv(argv)}\``],
    wrapped: true,
  })
}

function judgeShell(text: string, context: Context): Found | undefined {
  return judgeCommands(shellCommands(text), context)
}

function judgeCommands(commands: ShellCommand[], context: Context): Found | undefined {
  const exits = commands.some((command) => ['break', 'exit', 'return'].includes(command.argv[0]!))
  for (const command of commands) {
    const [first] = command.argv
    if (
      (command.keyword === 'while' && (first === 'true' || first === ':')) ||
      (command.keyword === 'until' && first === 'false')
    ) {
      if (!exits) {
        return {
          argv: [command.keyword, ...command.argv],
          finding: {
            what: 'is an endless loop',
            instead: 'run the loop body once, or loop a bounded number of times',
          },
          trail: context.trail,
          runner: context.runner,
        }
      }
    }
    const found = judgeArgv(command.argv, context)
    if (found) return found
  }
  return undefined
}

function judgeScript(call: ScriptCall, label: string, context: Context): Found | undefined {
  const scripts = call.dir === undefined ? undefined : scriptsOf(context.root, call.dir)
  const text = scripts?.[call.script]
  const scriptContext = (name: string, body: string): Context => ({
    ...context,
    depth: context.depth + 1,
    runner: RUNNERS[call.manager],
    wrapped: false,
    trail: [...context.trail, `${label} runs the package script "${name}" (\`${clipText(body)}\`)`],
  })
  for (const [name, body] of [
    [`pre${call.script}`, scripts?.[`pre${call.script}`]],
    [call.script, text],
  ] as const) {
    if (body === undefined) continue
    const commands = shellCommands(body)
    const last = commands.at(-1)
    if (name === call.script && last && call.extra.length > 0) last.argv.push(...call.extra)
    const found = judgeCommands(commands, scriptContext(name, body))
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
      if (hasEntry(context.root, server)) return byName(`runs \`node server.js\`, which ${SERVES}`, NO_SERVER)
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
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length <= SCRIPT_TEXT_SHOWN ? flat : `${flat.slice(0, SCRIPT_TEXT_SHOWN - 1)}…`
}

const CONCURRENTLY_VALUED = [
  '-n',
  '--names',
  '-c',
  '--prefix-colors',
  '-p',
  '--prefix',
  '-s',
  '--success',
  '--max-processes',
  '-m',
  '--kill-signal',
  '--restart-tries',
  '--restart-after',
  '--timestamp-format',
  '-t',
  '--handle-input',
  '--default-input-target',
  '--cwd',
  '--prefix-length',
  '-l',
]

function judgeConcurrently(args: string[], context: Context): Found | undefined {
  for (let at = 0; at < args.length; at++) {
    const arg = args[at]!
    if (CONCURRENTLY_VALUED.includes(arg)) {
      at += 1
      continue
    }
    if (arg.startsWith('-')) continue
    // `npm:watch` is concurrently's shorthand for `npm run watch`.
    const shorthand = /^(npm|pnpm|yarn|bun):(.+)$/.exec(arg)
    const found = shorthand
      ? judgeScriptNames(shorthand[2]!, shorthand[1]!, `\`${shorthand[1]} run ${shorthand[2]}\``, context)
      : judgeShell(arg, context)
    if (found) return found
  }
  return undefined
}

function judgeRunAll(args: string[], label: string, context: Context): Found | undefined {
  for (const pattern of args.filter((arg) => !arg.startsWith('-'))) {
    const found = judgeScriptNames(pattern, 'npm', label, context)
    if (found) return found
  }
  return undefined
}

/** The scripts a name or an npm-run-all style pattern (`watch:*`) stands for, judged one by one. */
function judgeScriptNames(
  pattern: string,
  manager: string,
  label: string,
  context: Context,
): Found | undefined {
  const names = pattern.includes('*')
    ? Object.keys(scriptsOf(context.root, '.')).filter(scriptNamePattern(pattern))
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
 * Whether `argv`, run in the workspace at `root`, is a command that never exits by design; if so, why and
 * what to run instead. Reads the workspace's package.json to follow package scripts.
 */
export function longRunningCommand(root: string, argv: readonly string[]): LongRunning | undefined {
  const found = judgeArgv(argv, { root, trail: [], runner: undefined, depth: 0, wrapped: false })
  if (!found) return undefined
  // `npm run dev` runs the package script "dev" (`vite`) → `vite` starts a server that runs until it is stopped
  const reason =
    found.argv.length > 0
      ? [...found.trail, `\`${formatArgv(found.argv)}\` ${found.finding.what}`].join(' → ')
      : `${found.trail.join(' → ')} ${found.finding.what}`
  return { reason, alternative: alternativeOf(found) }
}
