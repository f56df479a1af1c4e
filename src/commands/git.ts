/**
 * git: its global options and `git config`'s action, read exactly as git reads them (the read-only list
 * relies on these readings too), and the handler that judges a git command — configuration that launches
 * programs, subcommands that run scripts, and git run in another directory than the one the call starts in.
 *
 * git runs programs its repository's configuration names (`core.fsmonitor` on `git status`, a diff
 * driver's `textconv` on `git log -p`), so git in another repository is only as harmless as that
 * repository: git there is never counted read-only (see ../readonly.ts), and rules judge it as usual.
 */
import { type Analysis, handle, type Risk, words } from './engine.js'
import { risk, tabled } from './launch-options.js'
import { parseCommand, programOptions } from './programs.js'

// ---- global options (git.c handle_options)

/**
 * Global options that keep git on the workspace's own repository and change nothing it runs. `-C` counts
 * only to the directory the command starts in; `--bare`, `--git-dir`, `--work-tree`, `-c` and the rest
 * are not read-only (git in another repository runs what that repository's configuration names).
 */
export const READ_ONLY_GIT_GLOBALS: ReadonlySet<string> = new Set([
  '-P',
  '--no-pager',
  '--no-replace-objects',
  '--literal-pathspecs',
  '--glob-pathspecs',
  '--noglob-pathspecs',
  '--icase-pathspecs',
  '--no-optional-locks',
  '--no-lazy-fetch',
  '--no-advice',
])

/** Global options that take no value. */
const GLOBAL_FLAGS = new Set([
  '-p',
  '--paginate',
  '-P',
  '--no-pager',
  '--no-replace-objects',
  '--bare',
  '--literal-pathspecs',
  '--glob-pathspecs',
  '--noglob-pathspecs',
  '--icase-pathspecs',
  '--no-optional-locks',
  '--no-lazy-fetch',
  '--no-advice',
  '--html-path',
  '--man-path',
  '--info-path',
  '-v',
  '--version',
  '-h',
  '--help',
])
/** Global options whose value is the next word, or (long ones) follows `=`. */
const GLOBAL_VALUED = new Set([
  '-C',
  '-c',
  '--git-dir',
  '--work-tree',
  '--namespace',
  '--super-prefix',
  '--config-env',
  '--attr-source',
])

export interface GitGlobals {
  /** The global options in order, with their values (`-C` may come more than once; each one counts). */
  options: Array<{ name: string; value?: string }>
  /** Where the subcommand is (`args.length` when there is none). */
  index: number
}

/**
 * git's global options at the start of `args` (the words after `git`), or undefined when a word there is
 * not one git takes: git refuses it, and tether does not guess.
 */
export function gitGlobals(args: readonly string[]): GitGlobals | undefined {
  const options: GitGlobals['options'] = []
  let i = 0
  for (; i < args.length && args[i]!.startsWith('-'); i++) {
    const arg = args[i]!
    const eq = arg.indexOf('=')
    const name = arg.startsWith('--') && eq !== -1 ? arg.slice(0, eq) : arg
    if (GLOBAL_FLAGS.has(arg)) options.push({ name: arg })
    else if (name === '--exec-path' || name === '--list-cmds') {
      options.push(eq === -1 ? { name } : { name, value: arg.slice(eq + 1) })
    } else if (GLOBAL_VALUED.has(name) && name !== arg) options.push({ name, value: arg.slice(eq + 1) })
    else if (GLOBAL_VALUED.has(arg) && i + 1 < args.length) options.push({ name: arg, value: args[++i]! })
    else return undefined
  }
  return { options, index: i }
}

// ---- git config

/** Options that take a value (the next word, or after `=` for long ones), whatever the form. */
const CONFIG_VALUED = new Set([
  '-f',
  '--file',
  '--blob',
  '-t',
  '--type',
  '--default',
  '--value',
  '--url',
  '--comment',
])
/** Where to read and how to show it: options of every reading form. */
const CONFIG_READING = [
  '--global',
  '--system',
  '--local',
  '--worktree',
  '-f',
  '--file',
  '--blob',
  '-z',
  '--null',
  '--name-only',
  '--show-origin',
  '--show-scope',
  '--show-names',
  '-t',
  '--type',
  '--bool',
  '--int',
  '--bool-or-int',
  '--bool-or-str',
  '--path',
  '--expiry-date',
  '--includes',
  '--no-includes',
]
/** The actions of `git config [options] <operands>` that only read, with the operands each takes. */
const CONFIG_READ_ACTIONS: Readonly<Record<string, readonly [number, number]>> = {
  '--get': [1, 2],
  '--get-all': [1, 2],
  '--get-regexp': [1, 2],
  '--get-urlmatch': [2, 2],
  '--get-color': [1, 2],
  '--get-colorbool': [1, 2],
  '--list': [0, 0],
  '-l': [0, 0],
}
const CONFIG_WRITE_ACTIONS = new Set([
  '--add',
  '--replace-all',
  '--unset',
  '--unset-all',
  '--rename-section',
  '--remove-section',
  '-e',
  '--edit',
])
const LEGACY_READING = new Set([
  ...CONFIG_READING,
  '--default',
  '--fixed-value',
  ...Object.keys(CONFIG_READ_ACTIONS),
])
const GET_READING = new Set([
  ...CONFIG_READING,
  '--default',
  '--fixed-value',
  '--all',
  '--regexp',
  '--value',
  '--url',
])
const LIST_READING = new Set(CONFIG_READING)

interface ConfigWords {
  /** Option names as given (`--file`, not `--file=x`). */
  options: string[]
  operands: string[]
  /** A word git reads otherwise than tether would (a cluster of short options, a value where none goes, `--`). */
  unclear: boolean
}

/**
 * Reads `git config`'s words from `from` as git's option parser does: options until the first operand (or
 * anywhere, when `permute`), and the operands. `--` and `--end-of-options` count as unclear: git versions
 * disagree on what follows them (git 2.46's subcommand parser drops a leading `--`, so `git config -- --add
 * k v` adds).
 */
function configWords(args: readonly string[], from: number, permute: boolean): ConfigWords {
  const out: ConfigWords = { options: [], operands: [], unclear: false }
  let i = from
  for (; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--' || arg === '--end-of-options') {
      out.unclear = true
      return out
    }
    if (!arg.startsWith('-') || arg === '-') {
      if (!permute) break
      out.operands.push(arg)
      continue
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1
    const name = eq === -1 ? arg : arg.slice(0, eq)
    if (!arg.startsWith('--') && arg.length !== 2) out.unclear = true
    if (CONFIG_VALUED.has(name)) {
      if (eq === -1 && ++i >= args.length) out.unclear = true
    } else if (eq !== -1) out.unclear = true
    out.options.push(name)
  }
  out.operands.push(...args.slice(i))
  return out
}

/**
 * Whether `git config …` (`args` are the words after `config`) only reads, as git ≥ 2.46 and older gits
 * alike parse it: the `get` and `list` subcommands (only as the very first word), or exactly one reading
 * action among the options before the first operand — `git config core.fsmonitor CMD --get` sets the key,
 * since `--get` there is an operand. Every option must be one that reads, spelled in full (git also takes
 * abbreviations, which tether does not guess at).
 */
export function gitConfigReads(args: readonly string[]): boolean {
  if (args[0] === 'get' || args[0] === 'list') {
    const get = args[0] === 'get'
    const read = configWords(args, 1, !get)
    const allowed = get ? GET_READING : LIST_READING
    return (
      !read.unclear && read.options.every((o) => allowed.has(o)) && read.operands.length === (get ? 1 : 0)
    )
  }
  const read = configWords(args, 0, false)
  if (read.unclear || !read.options.every((o) => LEGACY_READING.has(o))) return false
  const actions = new Set(read.options.filter((o) => Object.hasOwn(CONFIG_READ_ACTIONS, o)))
  if (actions.size !== 1) return false
  const [least, most] = CONFIG_READ_ACTIONS[[...actions][0]!]!
  return read.operands.length >= least && read.operands.length <= most
}

/** The key and value a writing `git config` sets, when it sets one (`set`, `--add`, `--replace-all`, bare). */
function configSetting(args: readonly string[]): { key: string; value: string } | undefined {
  const set = args[0] === 'set'
  const read = configWords(args, set ? 1 : 0, false)
  const writes = read.options.filter((o) => CONFIG_WRITE_ACTIONS.has(o))
  const adds = writes.every((o) => o === '--add' || o === '--replace-all')
  const [key, value] = read.operands
  if (!adds || key === undefined || value === undefined) return undefined
  return { key, value }
}

const GIT_LAUNCH_KEYS =
  /^(core\.(pager|editor|sshcommand|askpass|fsmonitor|gitproxy|alternaterefscommand)|sequence\.editor|diff\.external|pager\..+|credential\.(.+\.)?helper|gpg\.(.+\.)?program|.+\.(textconv|command|cmd|driver|clean|smudge|process|uploadpack|receivepack)|uploadpack\.packobjectshook|interactive\.difffilter)$/
const GIT_REDIRECT_KEYS =
  /^(core\.hookspath|core\.worktree|init\.templatedir|include\.path|includeif\..+|protocol\..+|url\..+|safe\..+)$/

/** One `key=value` of git configuration: a value that names a program is a launch. */
function gitConfig(a: Analysis, pair: string, depth: number, cap: string | undefined): void {
  const eq = pair.indexOf('=')
  const key = (eq === -1 ? pair : pair.slice(0, eq)).toLowerCase()
  const value = eq === -1 ? '' : pair.slice(eq + 1)
  gitConfigValue(a, key, value, pair, depth, cap)
}

function gitConfigValue(
  a: Analysis,
  key: string,
  value: string,
  shown: string,
  depth: number,
  cap: string | undefined,
): void {
  if (key.startsWith('alias.')) {
    if (value.startsWith('!')) a.script(value.slice(1), depth, cap)
    else if (value) a.script(`git ${value}`, depth, cap)
  } else if (GIT_REDIRECT_KEYS.test(key)) {
    a.opaque(
      depth,
      shown,
      `git configuration ${key} changes where git finds hooks, configuration or transports`,
    )
  } else if (GIT_LAUNCH_KEYS.test(key) && !(key === 'core.fsmonitor' && /^(true|false)$/i.test(value))) {
    if (value) a.script(value, depth, cap)
  }
}

/** The risk of a `git config` that writes the configuration (or opens an editor); none when it only reads. */
function gitConfigCommand(
  a: Analysis,
  args: readonly string[],
  depth: number,
  cap: string | undefined,
): Risk[] {
  if (gitConfigReads(args)) return []
  // `git config core.pager 'rm -rf /'` installs a launch for every later git command: judge it now.
  const setting = configSetting(args)
  if (setting) {
    const { key, value } = setting
    gitConfigValue(a, key.toLowerCase(), value, `${key}=${value}`, depth, cap)
  }
  // A rule names the write by the first word that makes it one (`git config user.name*`, `git config --add*`).
  const naming = args.find((x) => !LEGACY_READING.has(x.split('=')[0]!)) ?? 'config'
  return [{ option: naming, names: [naming], what: 'writes git configuration (or opens an editor)' }]
}

// ---- the handler

handle('git', {
  analyse(a, w, depth, cap) {
    const program = programOptions('git')!
    const parsed = parseCommand(w.argv, program)
    const { sub, subIndex } = parsed
    const argv = w.argv
    const rest = subIndex === -1 ? [] : argv.slice(subIndex + 1)
    const risks: Risk[] = []
    const after: Array<() => void> = []
    switch (sub) {
      case 'bisect':
        if (rest[0] === 'run') {
          risks.push(risk('run', 'exec'))
          after.push(() => a.run(words(rest.slice(1)), depth + 1, cap))
        }
        break
      case 'submodule': {
        const at = rest.indexOf('foreach')
        if (at !== -1) {
          risks.push(risk('foreach', 'exec'))
          const script = rest.slice(at + 1).filter((x) => !/^(--recursive|-q|--quiet)$/.test(x))
          after.push(() => a.script(script.join(' '), depth + 1, cap))
        }
        break
      }
      case 'filter-branch':
        for (let i = 0; i < rest.length; i++) {
          const filter = /^--(env|tree|index|parent|msg|commit|tag-name)-filter$|^--setup$/.exec(rest[i]!)
          if (!filter || rest[i + 1] === undefined) continue
          risks.push(risk(rest[i]!, 'sh'))
          const script = rest[++i]!
          after.push(() => a.script(script, depth + 1, cap))
        }
        break
      case 'config':
        risks.push(...gitConfigCommand(a, rest, depth + 1, cap))
        break
    }
    // Judged again without its global options, so `git -C x --no-pager push` meets `deny git push*`.
    const forms = subIndex > 1 && sub !== undefined ? [['git', ...argv.slice(subIndex)].join(' ')] : undefined
    const result = tabled(a, w, depth, cap, 'git', {
      forms,
      extraRisks: risks,
      parsed,
      // After a `cd` (or under `env -C`) git may act on another repository, whose configuration can name
      // programs it runs: like an interpreter's, never counted read-only (rules still judge it).
      interpreter: a.elsewhere !== undefined || undefined,
    })
    if (!result) return
    for (const found of result.options) {
      const def = found.defs[0]
      if (!def || found.value === undefined) continue
      if (def.canonical === '-c') gitConfig(a, found.value, depth + 1, cap)
      if (def.canonical === '--config-env') {
        a.opaque(depth + 1, found.value, 'git --config-env takes a configuration value from the environment')
      }
      if (def.canonical === '-O' && result.sub === 'grep' && found.value !== '')
        a.script(found.value, depth + 1, cap)
    }
    for (const run of after) run()
  },
})
