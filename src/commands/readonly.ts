/**
 * The read-only list: commands that only read and print, which a policy can auto-allow with
 * `include: [read-only]`, and the one list of secret files that serves both its exclusions and the
 * presets' `builtin-secrets` layer.
 *
 * A listed command is not read-only when an option changes what it does (the analyser marks those as
 * risks: `sort -o`, `find -delete`, `git -c`, …), when it prints the environment (`jq env`, `ps e`,
 * `/proc/*\/environ`), when an argument names a secret, in the per-command forms below (a second operand
 * of `uniq` is its output file, `git branch NAME` creates a branch, `git config KEY VALUE --get` sets a
 * key), when git would act on another repository than the workspace's own (its configuration names
 * programs git runs), or when it reads recursively through a part of the workspace that holds files the
 * policy denies reading.
 */
import { gitConfigReads, gitGlobals, READ_ONLY_GIT_GLOBALS } from './git.js'
import { globToRegExpSource } from './glob.js'
import { normalisePath } from './paths.js'

/** What the policy cannot know by itself when it judges a command (the policy stays pure: the caller asks). */
export interface ExecContext {
  /**
   * Whether the workspace at this path (a file, or a directory and everything under it; relative to the
   * workspace root) holds a file the policy denies reading. Recursive readers (`grep -r`, `rg`) are
   * read-only only where it does not; without an answer they are never read-only.
   */
  holdsDenied?: (path: string) => boolean
  /**
   * The workspace root (absolute), where the command starts: `git -C <root>` is the same repository as
   * plain `git`. Without it, only `git -C .` is.
   */
  workspace?: string
}

// ---- secrets

/** Secret files by name: matched against a path's last segment, case-insensitively. */
const SECRET_NAMES = [
  '.env',
  '.env.*',
  '*.pem',
  '*.key',
  '*.p12',
  '*.pfx',
  '*.keystore',
  '*.jks',
  '*.ppk',
  '*.kdbx',
  '*.tfstate',
  '*.tfstate.backup',
  'id_rsa',
  'id_dsa',
  'id_ecdsa',
  'id_ed25519',
  'id_ecdsa_sk',
  'id_ed25519_sk',
  '.npmrc',
  '.yarnrc.yml',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.pgpass',
  '.my.cnf',
  '.htpasswd',
  '.vault-token',
  '.dockercfg',
  'credentials.json',
  'master.key',
  '.boto',
  '.s3cfg',
  'kubeconfig',
  'shadow',
  'gshadow',
  'sudoers',
]
/** Directories whose every file is a secret: matched as path segments. */
const SECRET_DIRECTORIES = [
  '.ssh',
  '.aws',
  '.gnupg',
  '.azure',
  '.kube',
  '.docker',
  '.config/gcloud',
  '.config/gh',
  '.config/hub',
  '.terraform.d',
  '.password-store',
  '.local/share/keyrings',
]
/** Secret files named by a directory and a name (`.cargo/credentials`). */
const SECRET_FILES = ['.cargo/credentials', '.cargo/credentials.toml', '.gem/credentials']

/**
 * The `builtin-secrets` layer's patterns (denied for read and write by the tiered and strict presets): the
 * names as they are (a pattern also matches a path's last segment), directories and files anywhere.
 */
export const SECRET_PATTERNS: readonly string[] = [
  ...SECRET_NAMES,
  ...SECRET_DIRECTORIES.flatMap((dir) => [`${dir}/*`, `*/${dir}/*`]),
  ...SECRET_FILES.flatMap((file) => [file, `*/${file}`]),
]

const SECRET_NAME = new RegExp(`^(${SECRET_NAMES.map(globToRegExpSource).join('|')})$`, 'iu')
const SECRET_PATH = new RegExp(
  `(^|/)(${[...SECRET_DIRECTORIES, ...SECRET_FILES].map(globToRegExpSource).join('|')})(/|$)`,
  'iu',
)
/** A cheap first look: every secret name or path contains one of these. */
const MAYBE_SECRET =
  /env|pem|key|p12|pfx|jks|ppk|kdbx|tfstate|id_|rc|netrc|credential|pgpass|cnf|htpasswd|token|docker|cfg|boto|kube|shadow|sudoers|ssh|aws|gnupg|azure|gcloud|config|terraform|password|keyring|proc/i

/**
 * Whether a word (or the value inside `--opt=value`, `rev:path`) names a path holding secrets, under any
 * spelling: `~/.ssh/id_rsa`, `config//.env`, `/proc/self/root/home/u/.aws/credentials`, any process's
 * `environ` (`//proc/1/environ`, `/proc/./self/environ`).
 */
export function namesSensitivePath(word: string): boolean {
  if (!MAYBE_SECRET.test(word)) return false
  for (const piece of word.split(/[=:,]/)) {
    // `/proc/PID/root/…` is the root directory again; `/proc/PID/cwd/…` a working directory.
    const path = normalisePath(piece.replace(/^~/, '')).replace(/^\/proc\/[^/]+\/(root|cwd)(?=\/|$)/, '')
    const last = path.slice(path.lastIndexOf('/') + 1)
    if (SECRET_NAME.test(last) || SECRET_PATH.test(path) || last.toLowerCase() === 'environ') return true
  }
  return false
}

// ---- the list

interface ReadOnlyEntry {
  /** Arguments (exact, or `--name` matching `--name=…`) that make the command not read-only. */
  excluded?: readonly string[]
  /** At most this many operands (words not starting with `-`). */
  maxOperands?: number
  /** A check of the whole argv for forms the lists above cannot express. */
  refuse?: (args: readonly string[]) => boolean
  /** The paths it reads recursively, when it does (see ExecContext). */
  recursive?: (args: readonly string[]) => readonly string[] | undefined
}

/** `grep -r` and friends: the operands it reads through (the working directory without one). */
function recursiveWith(flags: RegExp): (args: readonly string[]) => readonly string[] | undefined {
  return (args) => {
    if (!args.some((a) => flags.test(a))) return undefined
    return operandsOf(args)
  }
}

function operandsOf(args: readonly string[]): readonly string[] {
  const operands = args.filter((a) => !a.startsWith('-'))
  return operands.length > 0 ? operands : ['.']
}

const GREP_RECURSIVE =
  /^(-[A-Za-z0-9]*[rR][A-Za-z0-9]*|--recursive|--dereference-recursive|--directories=recurse|--rec\w*|--deref\w*)$/

const ENTRIES: Record<string, ReadOnlyEntry> = {
  ls: {},
  cat: {},
  head: {},
  tail: {},
  wc: {},
  pwd: {},
  echo: {},
  printf: { excluded: ['-v'] },
  true: {},
  false: {},
  ':': {},
  test: {},
  '[': {},
  whoami: {},
  id: {},
  groups: {},
  uname: {},
  nproc: {},
  arch: {},
  uptime: {},
  free: {},
  ps: {},
  pgrep: {},
  date: {},
  hostname: { maxOperands: 0 },
  which: {},
  type: {},
  file: {},
  stat: {},
  du: {},
  df: {},
  tree: {},
  realpath: {},
  readlink: {},
  basename: {},
  dirname: {},
  // The first operand of grep is its pattern, not a path it reads.
  diff: { recursive: recursiveWith(/^(-[A-Za-z]*r[A-Za-z]*|--recursive)$/) },
  cmp: {},
  comm: {},
  grep: { recursive: grepRecursive },
  egrep: { recursive: grepRecursive },
  fgrep: { recursive: grepRecursive },
  rg: {
    recursive: (args) => (args.some((a) => /^--(files|type-list)$/.test(a)) ? undefined : searched(args)),
  },
  find: {},
  fd: {},
  sort: {},
  uniq: { maxOperands: 1 },
  cut: {},
  tr: {},
  nl: {},
  column: {},
  jq: {},
  md5sum: {},
  sha1sum: {},
  sha256sum: {},
  sha512sum: {},
  b2sum: {},
  cksum: {},
  od: {},
  hexdump: {},
  strings: {},
  xxd: { maxOperands: 1 },
  base64: {},
  cd: {},
  pushd: {},
  popd: {},
  sleep: {},
  sed: {},
}

function grepRecursive(args: readonly string[]): readonly string[] | undefined {
  return args.some((a) => GREP_RECURSIVE.test(a)) ? searched(args) : undefined
}

/** The paths a grep-like search reads: its operands after the pattern (the working directory without any). */
function searched(args: readonly string[]): readonly string[] {
  const operands = args.filter((a) => !a.startsWith('-'))
  const hasPattern = !args.some((a) => /^(-e|-f|--regexp|--file)/.test(a))
  const paths = hasPattern ? operands.slice(1) : operands
  return paths.length > 0 ? paths : ['.']
}

/** git subcommands that only read, each with its own exclusions (options are the analyser's risks). */
const GIT: Record<string, ReadOnlyEntry> = {
  status: {},
  log: {},
  diff: {},
  show: {},
  blame: {},
  shortlog: {},
  describe: {},
  'rev-parse': {},
  'rev-list': {},
  'ls-files': {},
  'ls-tree': {},
  'cat-file': {},
  'show-ref': {},
  'for-each-ref': {},
  'merge-base': {},
  'name-rev': {},
  'count-objects': {},
  grep: {
    recursive: (args) => (args.some((a) => a === '--untracked' || a === '--no-index') ? ['.'] : undefined),
  },
  // Listing only: any operand (outside --list patterns) creates a branch or tag; deleting, moving, signing and
  // the like are the analyser's risks.
  branch: { refuse: createsRef },
  tag: { refuse: createsRef },
  // `git remote show` contacts the remote, so only listing and `get-url` count.
  remote: { refuse: (args) => ![undefined, 'get-url'].includes(args.find((a) => !a.startsWith('-'))) },
  // Read exactly as git reads it: `git config core.fsmonitor CMD --get` sets the key.
  config: { refuse: (args) => !gitConfigReads(args) },
  stash: { refuse: (args) => !['list', 'show'].includes(args.find((a) => !a.startsWith('-')) ?? '') },
  reflog: { refuse: (args) => !['show', undefined].includes(args.find((a) => !a.startsWith('-'))) },
  worktree: { refuse: (args) => args.find((a) => !a.startsWith('-')) !== 'list' },
  submodule: { refuse: (args) => args.find((a) => !a.startsWith('-')) !== 'status' },
  version: {},
}

function createsRef(args: readonly string[]): boolean {
  return !args.some((a) => a === '-l' || a === '--list') && args.some((a) => !a.startsWith('-'))
}

/** Commands whose arguments are data whatever they turn out to be (`[ $i -lt 3 ]`, `echo "$f"`). */
const DATA_ONLY = new Set(['echo', 'test', '[', 'true', 'false', ':', 'sleep', 'basename', 'dirname', 'pwd'])
const PRINTS = new Set(['echo', 'basename', 'dirname'])

/** npm subcommands that only read the project (the registry is the network: `npm view` is not here). */
const NPM = new Set(['ls', 'list', 'll', 'la', 'root', 'prefix', 'explain', 'why'])

function allowedBy(entry: ReadOnlyEntry, args: readonly string[], context: ExecContext | undefined): boolean {
  for (const arg of args) if (entry.excluded?.includes(arg.split('=')[0]!)) return false
  if (entry.maxOperands !== undefined && args.filter((a) => !a.startsWith('-')).length > entry.maxOperands)
    return false
  if (entry.refuse?.(args)) return false
  const recursive = entry.recursive?.(args)
  return !recursive || recursive.every((path) => readableThrough(path, context))
}

/** A recursive read stays read-only only through workspace paths known to hold no denied file. */
function readableThrough(path: string, context: ExecContext | undefined): boolean {
  const normal = normalisePath(path.replace(/^~/, '/~'))
  if (normal.startsWith('/') || normal === '..' || normal.startsWith('../')) return false
  return context?.holdsDenied ? !context.holdsDenied(normal) : false
}

/**
 * The read-only name of a command (`ls`, `git status`), or undefined when it is not read-only as given.
 * The caller has already ruled out options the analyser marked as risks. The program must be a bare name:
 * `./ls` is whatever file that is.
 */
export function readOnlyCommand(
  argv: readonly string[],
  context?: ExecContext,
  dynamic?: readonly boolean[],
  environment?: boolean,
): string | undefined {
  const program = argv[0]
  if (!program || program.includes('/')) return undefined
  // Words only known at run time are data only to commands that do nothing else with them, and those that
  // print them must not print the environment (`echo $TOKEN`; a loop's `echo $f` is fine).
  if (dynamic) {
    if (dynamic[0] || !DATA_ONLY.has(program)) return undefined
    return environment && PRINTS.has(program) ? undefined : program
  }
  const args = argv.slice(1)
  if (args.some(namesSensitivePath)) return undefined
  if (program === 'git') return gitReadOnly(args, context)
  if (program === 'npm') {
    const sub = args.find((a) => !a.startsWith('-'))
    if (sub === undefined)
      return args.length > 0 && args.every((a) => a === '-v' || a === '--version')
        ? 'npm --version'
        : undefined
    return NPM.has(sub) && args.indexOf(sub) === args.findIndex((a) => !a.startsWith('-'))
      ? `npm ${sub}`
      : undefined
  }
  const entry = Object.hasOwn(ENTRIES, program) ? ENTRIES[program] : undefined
  return entry && allowedBy(entry, args, context) ? program : undefined
}

function gitReadOnly(args: readonly string[], context: ExecContext | undefined): string | undefined {
  const globals = gitGlobals(args)
  if (!globals) return undefined
  for (const { name, value } of globals.options) {
    if (name === '-C' ? !startDirectory(value!, context) : !READ_ONLY_GIT_GLOBALS.has(name)) return undefined
  }
  const sub = args[globals.index]
  if (sub === undefined) return undefined
  const entry = Object.hasOwn(GIT, sub) ? GIT[sub] : undefined
  return entry && allowedBy(entry, args.slice(globals.index + 1), context) ? `git ${sub}` : undefined
}

/** Whether `git -C DIR` stays where the command starts: `.`, or the workspace root spelled as the caller gave it. */
function startDirectory(dir: string, context: ExecContext | undefined): boolean {
  const trimmed = (path: string) => path.replace(/(?<=.)\/+$/, '')
  return (
    trimmed(dir) === '.' || (context?.workspace !== undefined && trimmed(dir) === trimmed(context.workspace))
  )
}
