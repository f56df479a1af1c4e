/**
 * The read-only list: commands that only read and print, which a policy can auto-allow with
 * `include: [read-only]`. Each entry names the argument forms that are *not* read-only (they write, delete,
 * launch another program or change state) and those forms are not auto-allowed. Nothing is auto-allowed
 * when an argument names a sensitive path (`.env`, keys, `~/.ssh`, cloud and package-manager credentials).
 * Interpreters, shells, pagers and anything that prints the environment are never on the list.
 */

interface ReadOnlyEntry {
  /** Arguments (exact, or `--name` matching `--name=…`) that make the command not read-only. */
  excluded?: readonly string[]
  /** Argument prefixes that make it not read-only (`-o` also covers `-ofile`). */
  excludedPrefixes?: readonly string[]
  /** At most this many operands (words not starting with `-`). */
  maxOperands?: number
  /** A check of the whole argv for forms the lists above cannot express. */
  refuse?: (args: readonly string[]) => boolean
}

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
  date: { excluded: ['-s', '--set'], excludedPrefixes: ['-s'] },
  hostname: { maxOperands: 0 },
  which: {},
  type: {},
  file: { excluded: ['-C', '--compile'] },
  stat: {},
  du: {},
  df: {},
  tree: { excluded: ['-o'], excludedPrefixes: ['-o'] },
  realpath: {},
  readlink: {},
  basename: {},
  dirname: {},
  diff: {},
  cmp: {},
  comm: {},
  grep: {},
  egrep: {},
  fgrep: {},
  rg: { excluded: ['--pre', '--hostname-bin', '--search-zip', '-z'] },
  find: {
    excluded: ['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls'],
  },
  fd: { excluded: ['-x', '--exec', '-X', '--exec-batch'] },
  sort: { excluded: ['-o', '--output', '--compress-program'], excludedPrefixes: ['-o'] },
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
  xxd: { excluded: ['-r', '-revert'], maxOperands: 1 },
  base64: { excluded: ['-o', '--output'] },
  cd: {},
  pushd: {},
  popd: {},
  sleep: {},
  sed: { excluded: ['-i', '--in-place'], excludedPrefixes: ['-i', '--in-place', '-f', '--file'] },
}

/**
 * git subcommands that only read, each with its own exclusions. Global options that change what git runs
 * (`-c`, `--exec-path`, `--config-env`, `-p`/`--paginate`) and `--output`/`--ext-diff` exclude any of them.
 */
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
  grep: { excluded: ['-O', '--open-files-in-pager'], excludedPrefixes: ['-O', '--open'] },
  branch: {
    // Listing only: any operand (outside --list patterns) creates a branch.
    excluded: [
      '-d',
      '-D',
      '--delete',
      '-m',
      '-M',
      '--move',
      '-c',
      '-C',
      '--copy',
      '-f',
      '--force',
      '-u',
      '--set-upstream-to',
      '--unset-upstream',
      '--edit-description',
      '--track',
      '--no-track',
    ],
    refuse: (args) => !args.some((a) => a === '-l' || a === '--list') && args.some((a) => !a.startsWith('-')),
  },
  tag: {
    excluded: ['-d', '--delete', '-a', '--annotate', '-s', '--sign', '-f', '--force', '-m', '-F', '-u', '-e'],
    refuse: (args) => !args.some((a) => a === '-l' || a === '--list') && args.some((a) => !a.startsWith('-')),
  },
  // `git remote show` contacts the remote, so only listing and `get-url` count.
  remote: { refuse: (args) => ![undefined, 'get-url'].includes(args.find((a) => !a.startsWith('-'))) },
  config: {
    refuse: (args) =>
      !args.some((a) => /^(--get|--get-all|--get-regexp|--list|-l)$/.test(a) || a === 'get' || a === 'list'),
  },
  stash: { refuse: (args) => !['list', 'show'].includes(args.find((a) => !a.startsWith('-')) ?? '') },
  reflog: { refuse: (args) => !['show', undefined].includes(args.find((a) => !a.startsWith('-'))) },
  worktree: { refuse: (args) => args.find((a) => !a.startsWith('-')) !== 'list' },
  submodule: { refuse: (args) => args.find((a) => !a.startsWith('-')) !== 'status' },
  version: {},
}
const GIT_EXCLUDED_GLOBAL = /^(-c|--exec-path|--config-env|-p|--paginate|--git-dir|--work-tree)(=|$)|^-c./
const GIT_EXCLUDED_ANYWHERE = ['--output', '--ext-diff', '--textconv', '--upload-pack', '--exec']

/** npm subcommands that only read the project or the registry. */
const NPM = new Set([
  'ls',
  'list',
  'll',
  'la',
  'view',
  'info',
  'show',
  'outdated',
  'root',
  'prefix',
  'explain',
  'why',
])

const SENSITIVE_NAME =
  /^(\.env(\..*)?|.*\.(pem|key|p12|pfx|keystore|jks|ppk|gpg|asc|kdbx|tfstate)|id_(rsa|dsa|ecdsa|ed25519)(_sk)?(\.pub)?|\.npmrc|\.yarnrc(\.yml)?|\.pypirc|\.netrc|_netrc|\.git-credentials|\.pgpass|\.my\.cnf|credentials(\.json|\.db)?|\.htpasswd|\.vault-token|kubeconfig|\.dockercfg|secrets?(\..*)?|shadow|gshadow|sudoers|master\.key|\.boto|\.s3cfg)$/i
const SENSITIVE_PATH =
  /(^|\/)(\.ssh|\.aws|\.gnupg|\.azure|\.kube|\.docker|\.config\/gcloud|\.config\/gh|\.config\/hub|\.cargo\/credentials|\.gem\/credentials|\.terraform\.d|\.password-store|\.local\/share\/keyrings)(\/|$)|^\/proc\/[^/]+\/environ$|^\/etc\/(shadow|gshadow|sudoers)/i

/** A cheap first look: every sensitive name or path contains one of these. */
const MAYBE_SENSITIVE =
  /env|pem|key|p12|pfx|jks|ppk|gpg|asc|kdbx|tfstate|id_|rc|pypirc|netrc|credential|pgpass|cnf|htpasswd|token|kubeconfig|cfg|secret|shadow|sudoers|boto|ssh|aws|gnupg|azure|kube|docker|gcloud|config|cargo|gem|terraform|password|keyring|proc/i

/** Whether a word (or the value inside `--opt=value`) names a path holding secrets. */
export function namesSensitivePath(word: string): boolean {
  if (!MAYBE_SENSITIVE.test(word)) return false
  for (const piece of word.split(/[=:,]/)) {
    const path = piece.replace(/^~/, '')
    const last = path.replace(/\/+$/, '').split('/').pop() ?? ''
    if (SENSITIVE_NAME.test(last) || SENSITIVE_PATH.test(path)) return true
  }
  return false
}

function allowedBy(entry: ReadOnlyEntry, args: readonly string[]): boolean {
  for (const arg of args) {
    const name = arg.split('=')[0]!
    if (entry.excluded?.includes(name)) return false
    if (entry.excludedPrefixes?.some((p) => arg.startsWith(p))) return false
  }
  if (entry.maxOperands !== undefined && args.filter((a) => !a.startsWith('-')).length > entry.maxOperands)
    return false
  return !entry.refuse?.(args)
}

/**
 * The read-only name of a command (`ls`, `git status`), or undefined when it is not read-only as given.
 * The program must be a bare name: `./ls` is whatever file that is.
 */
export function readOnlyName(argv: readonly string[]): string | undefined {
  const program = argv[0]
  if (!program || program.includes('/')) return undefined
  const args = argv.slice(1)
  if (args.some(namesSensitivePath)) return undefined
  if (program === 'git') return gitReadOnly(args)
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
  return entry && allowedBy(entry, args) ? program : undefined
}

function gitReadOnly(args: readonly string[]): string | undefined {
  let i = 0
  while (i < args.length && args[i]!.startsWith('-')) {
    if (GIT_EXCLUDED_GLOBAL.test(args[i]!)) return undefined
    i += args[i] === '-C' ? 2 : 1
  }
  const sub = args[i]
  if (sub === undefined) return undefined
  const rest = args.slice(i + 1)
  if (rest.some((a) => GIT_EXCLUDED_ANYWHERE.some((x) => a === x || a.startsWith(`${x}=`)))) return undefined
  const entry = Object.hasOwn(GIT, sub) ? GIT[sub] : undefined
  return entry && allowedBy(entry, rest) ? `git ${sub}` : undefined
}
