/**
 * Exec analysis: turns one argv into the tree of everything it would run, read and write. Pure and
 * independent of any policy, so the result of analysing a script can be cached and judged by many policies.
 *
 * - Transparent wrappers (`env`, `nice`, `timeout`, `command`, …) become `wrapper` nodes and their payload
 *   is analysed in turn; context-changing ones (`sudo`, `xargs`, `ssh`, `find -exec`, login shells, `env`
 *   with assignments, …) also carry a `cap`: whatever they run is asked about at least.
 * - Options that launch programs (`git -c core.pager=…`, `tar --to-command=…`, `rg --pre …`, `sed e`, …)
 *   become nodes for the launched command or script.
 * - `sh -c SCRIPT` is parsed (see ../shell/parse.ts) and each command in it analysed.
 * - Anything that cannot be reduced to static commands becomes an `opaque` node, which is never allowed.
 */

import { parseScript, type ShellAssignment, type ShellWord, staticWords } from '../shell/parse.js'
import type { ExecNodeKind } from '../types.js'
import { longOptionValues, optionSpec, type ParsedOption, scanOptions, shortOptionValues } from './options.js'
import { sedEffects } from './sed.js'

export interface AnalysedNode {
  kind: ExecNodeKind
  depth: number
  act: 'exec' | 'read' | 'write' | 'net'
  /** The command (for `command` and `wrapper` nodes). */
  argv: readonly string[]
  /** Which argv words are only known at run time (from a script). */
  dynamic?: readonly boolean[] | undefined
  /** The file or host of a `file` node; the text a problem was found in for `opaque` nodes. */
  target: string
  /** More spellings of the command that deny and ask rules also see (e.g. git without its global options). */
  forms?: readonly string[] | undefined
  /** Why an allowed command is asked about anyway (it runs in a changed context). */
  cap?: string | undefined
  /** Why the node is opaque, or what a wrapper does. */
  note?: string | undefined
  /** A command whose program runs code given to it (never auto-allowed by the read-only list). */
  interpreter?: boolean | undefined
}

type NodeExtra = Pick<AnalysedNode, 'forms' | 'note' | 'interpreter'>

const MAX_NODES = 400
const MAX_DEPTH = 12

interface Words {
  argv: readonly string[]
  dynamic: readonly boolean[] | undefined
}

function words(argv: readonly string[], dynamic?: readonly boolean[]): Words {
  return { argv, dynamic: dynamic?.some(Boolean) ? dynamic : undefined }
}

function from(w: Words, start: number): Words {
  return words(w.argv.slice(start), w.dynamic?.slice(start))
}

export function basename(program: string): string {
  if (!program.includes('/')) return program
  const trimmed = program.replace(/\/+$/, '')
  const slash = trimmed.lastIndexOf('/')
  return slash === -1 ? trimmed : trimmed.slice(slash + 1)
}

/** The name handlers are looked up by: basename, case-folded (deny-side generosity: `ENV rm` unwraps). */
function handlerName(program: string): string {
  return basename(program).toLowerCase()
}

export class Analysis {
  readonly nodes: AnalysedNode[] = []

  private add(node: AnalysedNode): boolean {
    if (this.nodes.length >= MAX_NODES || node.depth > MAX_DEPTH) {
      if (this.nodes.at(-1)?.note !== LIMIT) {
        this.nodes.push({ kind: 'opaque', depth: node.depth, act: 'exec', argv: [], target: '', note: LIMIT })
      }
      return false
    }
    this.nodes.push(node)
    return true
  }

  opaque(depth: number, target: string, note: string): void {
    this.add({ kind: 'opaque', depth, act: 'exec', argv: [], target, note })
  }

  file(depth: number, act: 'read' | 'write', target: string, dynamic: boolean, cap?: string): void {
    if (dynamic) {
      this.opaque(
        depth,
        target,
        `the file it ${act === 'read' ? 'reads' : 'writes'} is only known at run time`,
      )
    } else this.add({ kind: 'file', depth, act, argv: [], target, cap })
  }

  net(depth: number, target: string, cap?: string): void {
    this.add({ kind: 'file', depth, act: 'net', argv: [], target, cap })
  }

  /** The node for a program that is judged as it stands (its launch options were analysed separately). */
  command(depth: number, w: Words, cap: string | undefined, extra?: NodeExtra): boolean {
    return this.execNode('command', depth, w, cap, extra)
  }

  wrapper(depth: number, w: Words, cap: string | undefined, note: string): boolean {
    return this.execNode('wrapper', depth, w, cap, { note })
  }

  private execNode(
    kind: 'command' | 'wrapper',
    depth: number,
    w: Words,
    cap: string | undefined,
    extra?: NodeExtra,
  ): boolean {
    // Every exec node has the same fields in the same order (one object shape for the judge).
    return this.add({
      kind,
      depth,
      act: 'exec',
      argv: w.argv,
      dynamic: w.dynamic,
      target: '',
      cap,
      forms: extra?.forms,
      note: extra?.note,
      interpreter: extra?.interpreter,
    })
  }

  /**
   * Reads a command's options (see `scanOptions`); when they cannot be read the command becomes an opaque
   * node and the result is undefined.
   */
  options(
    w: Words,
    depth: number,
    table: string,
    start = 1,
    looseLong = false,
  ): { index: number; options: ParsedOption[] } | undefined {
    const scan = scanOptions(w.argv, start, optionSpec(table), w.dynamic, looseLong)
    if (scan.ok) return scan
    this.opaque(depth, w.argv.join(' '), scan.problem)
    return undefined
  }

  /** Analyses one command and everything it launches. */
  run(w: Words, depth: number, cap?: string): void {
    if (w.argv.length === 0) return
    if (w.dynamic?.[0]) {
      this.opaque(depth, w.argv.join(' '), `the command name ${w.argv[0]} is only known at run time`)
      return
    }
    if (w.argv[0]!.startsWith('-')) {
      // No program is named like an option: the words before it were misread, so nothing here is certain.
      this.opaque(depth, w.argv.join(' '), `the command would start with the option-like word ${w.argv[0]}`)
      return
    }
    const handler = handlerFor(w.argv[0]!)
    if (!handler) {
      this.command(depth, w, cap)
      return
    }
    if (w.dynamic && !handler.dynamicArgsOk) {
      this.opaque(
        depth,
        w.argv.join(' '),
        `${w.argv[0]} can launch other programs through its options, and some of its words are only known at run time`,
      )
      return
    }
    handler.analyse(this, w, depth, cap)
  }

  /** Parses `source` as a bash script and analyses every command in it, one level below `depth`. */
  script(source: string, depth: number, cap: string | undefined): void {
    const parsed = cachedParse(source)
    let scriptCap = cap
    for (const item of parsed.items) {
      const at = depth + item.depth
      if (item.type === 'command') {
        const assigned = assignedVariables(item)
        this.assignments(assigned, at, scriptCap)
        // A standalone assignment or export changes the environment of every later command.
        const sensitive =
          (item.words.length === 0 || isDeclaration(item.words)) &&
          assigned.find((v) => SENSITIVE_VARIABLE.test(v.name))
        if (sensitive) scriptCap ??= `the script sets ${sensitive.name}, which changes how later commands run`
        if (item.words.length === 0) continue
        const here =
          item.assigns.length > 0
            ? (scriptCap ??
              `it runs with environment variables set (${item.assigns.map((v) => v.name).join(', ')})`)
            : scriptCap
        const problem = builtinProblem(item.words)
        if (problem) this.opaque(at, joinWords(item.words), problem)
        this.run(
          words(
            item.words.map((word) => word.text),
            item.words.map((word) => word.dynamic),
          ),
          at,
          here,
        )
      } else if (item.type === 'redirect') {
        this.file(at, item.act, item.target.text, item.target.dynamic, scriptCap)
      } else if (item.type === 'net') {
        this.net(at, item.target, scriptCap)
      } else {
        this.opaque(at, source.length > 80 ? `${source.slice(0, 77)}...` : source, item.reason)
      }
    }
  }

  /**
   * Environment assignments whose value is code: variables bash itself runs (`PS4`, `BASH_ENV`, …) are
   * opaque; variables that name a command for a program to run (`GIT_SSH_COMMAND`, `PAGER`, …) have that
   * command judged.
   */
  assignments(assigned: readonly ShellAssignment[], depth: number, cap: string | undefined): void {
    for (const { name, value } of assigned) {
      if (CODE_VARIABLE.test(name))
        this.opaque(depth, `${name}=${value.text}`, `bash runs the value of ${name} as code`)
      else if (COMMAND_VARIABLE.test(name) && value.text !== '') {
        if (value.dynamic)
          this.opaque(depth, `${name}=${value.text}`, `${name} names a command only known at run time`)
        else this.script(value.text, depth + 1, cap)
      }
    }
  }
}

const LIMIT = 'the command is too large or too deeply nested to analyse'

const DECLARATIONS = new Set(['export', 'declare', 'typeset', 'local', 'readonly'])
const SENSITIVE_VARIABLE =
  /^(PATH|IFS|ENV|BASH_ENV|BASH_XTRACEFD|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|CDPATH|GLOBIGNORE|HOME|EDITOR|VISUAL|BROWSER|LESSOPEN|LESSCLOSE|SSH_ASKPASS|NODE_OPTIONS|NODE_PATH|LD_\w*|DYLD_\w*|GIT_\w*|PYTHON\w*|PERL5?\w*|RUBY\w*|\w*PAGER|npm_config_\w*|NPM_CONFIG_\w*)$/

function isDeclaration(list: readonly { text: string }[]): boolean {
  return list.length > 0 && DECLARATIONS.has(list[0]!.text)
}

/** Variables bash evaluates as code: prompts (with `set -x`, PS4 runs substitutions), startup files. */
const CODE_VARIABLE = /^(PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|BASH_FUNC_.*)$/
/** Variables whose value is a command some program runs. */
const COMMAND_VARIABLE =
  /^(GIT_SSH_COMMAND|GIT_SSH|GIT_EDITOR|GIT_PAGER|GIT_SEQUENCE_EDITOR|GIT_EXTERNAL_DIFF|GIT_ASKPASS|GIT_PROXY_COMMAND|SSH_ASKPASS|SUDO_ASKPASS|EDITOR|VISUAL|PAGER|MANPAGER|SYSTEMD_PAGER|LESSOPEN|LESSCLOSE|BROWSER|RSYNC_RSH|CVS_RSH|TAR_OPTIONS|FCEDIT)$/
/** Builtins that take variable names, where `name[subscript]` evaluates the subscript as arithmetic. */
const NAME_BUILTINS = new Set([
  'printf',
  'read',
  'declare',
  'typeset',
  'local',
  'export',
  'readonly',
  'unset',
  'test',
  '[',
  'mapfile',
  'readarray',
  'getopts',
  'wait',
])
const COMPUTED_SUBSCRIPT = /\[[^\]]*[$`][^\]]*\]/

/** The assignments of a script command: before it (`X=1 cmd`) and, for `export X=1`, as its words. */
function assignedVariables(item: {
  words: readonly ShellWord[]
  assigns: readonly ShellAssignment[]
}): ShellAssignment[] {
  const assigned = [...item.assigns]
  if (isDeclaration(item.words)) {
    for (const word of item.words.slice(1)) {
      const eq = word.text.indexOf('=')
      if (eq > 0)
        assigned.push({
          name: word.text.slice(0, eq),
          value: { text: word.text.slice(eq + 1), dynamic: word.dynamic },
        })
    }
  }
  return assigned
}

/** Why a builtin's arguments cannot be analysed (integer declarations, computed subscripts), if they cannot. */
function builtinProblem(list: readonly ShellWord[]): string | undefined {
  if (isDeclaration(list) && list.slice(1).some((w) => /^-[a-zA-Z]*i/.test(w.text))) {
    return 'an integer declaration evaluates arithmetic, which can run commands'
  }
  if (NAME_BUILTINS.has(list[0]!.text) && list.slice(1).some((w) => COMPUTED_SUBSCRIPT.test(w.text))) {
    return `${list[0]!.text} is given a variable name with a computed subscript, which bash evaluates as arithmetic`
  }
  return undefined
}

function joinWords(list: readonly { text: string }[]): string {
  return list.map((w) => w.text).join(' ')
}

const PARSE_CACHE = new Map<string, ReturnType<typeof parseScript>>()
const PARSE_CACHE_SIZE = 512

/** Parsing is pure, so identical scripts (an agent repeats itself) are parsed once. */
function cachedParse(source: string): ReturnType<typeof parseScript> {
  const hit = PARSE_CACHE.get(source)
  if (hit) return hit
  const parsed = parseScript(source)
  if (PARSE_CACHE.size >= PARSE_CACHE_SIZE) PARSE_CACHE.delete(PARSE_CACHE.keys().next().value!)
  PARSE_CACHE.set(source, parsed)
  return parsed
}

// ---- handlers

interface Handler {
  analyse(a: Analysis, w: Words, depth: number, cap: string | undefined): void
  /** Whether words only known at run time are harmless data for this program's analysis. */
  dynamicArgsOk?: boolean
}

const HANDLERS = new Map<string, Handler>()

function handle(names: string, handler: Handler): void {
  for (const name of names.split(' ')) HANDLERS.set(name, handler)
}

/** A handler that reads the command's options from `table` first; unreadable options make it opaque. */
function withOptions(
  table: string,
  analyse: (
    a: Analysis,
    w: Words,
    depth: number,
    cap: string | undefined,
    scan: { index: number; options: ParsedOption[] },
  ) => void,
): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      const scan = a.options(w, depth, table)
      if (scan) analyse(a, w, depth, cap, scan)
    },
  }
}

/**
 * A wrapper whose payload starts after its options (and `positionals` fixed operands). `context` caps what
 * it runs at ask; `noPayload` options make it a plain command (e.g. `sudo -l` only lists).
 */
function wrapper(options: {
  spec: string
  what: string
  context?: string
  positionals?: number
  noPayload?: string[]
  assignments?: boolean
}): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      const scan = a.options(w, depth, options.spec)
      if (!scan) return
      if (scan.options.some((o) => options.noPayload?.includes(o.name))) return void a.command(depth, w, cap)
      const start = scan.index + (options.positionals ?? 0)
      if (w.dynamic?.slice(scan.index, start + 1).some(Boolean)) {
        return a.opaque(
          depth,
          w.argv.join(' '),
          `${w.argv[0]} is given a word only known at run time where its command starts`,
        )
      }
      const { end, assigned } = options.assignments
        ? leadingAssignments(w, start)
        : { end: start, assigned: [] }
      if (end >= w.argv.length) return void a.command(depth, w, cap)
      const payloadCap = cap ?? options.context ?? settingContext(w.argv[0]!, assigned)
      if (!a.wrapper(depth, w, payloadCap, options.what)) return
      a.assignments(assigned, depth + 1, payloadCap)
      a.run(from(w, end), depth + 1, payloadCap)
    },
  }
}

handle('nice', wrapper({ spec: '-n= --adjustment=', what: 'runs its command with another priority' }))
handle(
  'timeout',
  wrapper({
    spec: '-k= --kill-after= -s= --signal= --preserve-status --foreground -v --verbose',
    what: 'runs its command with a time limit',
    positionals: 1,
  }),
)
handle('nohup', wrapper({ spec: '', what: 'runs its command immune to hangups' }))
handle(
  'setsid',
  wrapper({ spec: '-c -f -w --ctty --fork --wait', what: 'runs its command in a new session' }),
)
handle(
  'stdbuf',
  wrapper({ spec: '-i= -o= -e= --input= --output= --error=', what: 'runs its command with other buffering' }),
)
handle(
  'command',
  wrapper({ spec: '-p -v -V', what: 'runs its command bypassing shell functions', noPayload: ['-v', '-V'] }),
)
handle('builtin', wrapper({ spec: '', what: 'runs a shell builtin' }))
handle('exec', wrapper({ spec: '-c -l -a=', what: 'replaces the shell with its command' }))
handle(
  'ionice',
  wrapper({
    spec: '-c= -n= -p= -P= -u= -t --class= --classdata= --pid= --pgid= --uid= --ignore',
    what: 'runs its command with another I/O priority',
    noPayload: ['-p', '-P', '-u', '--pid', '--pgid', '--uid'],
  }),
)
handle(
  'taskset',
  wrapper({
    spec: '-a -c -p --all-tasks --cpu-list --pid',
    what: 'runs its command on chosen CPUs',
    positionals: 1,
    noPayload: ['-p', '--pid'],
  }),
)
handle(
  'sudo',
  wrapper({
    spec:
      '-A -b -E -H -K -k -n -P -S -i -s -l -v -V -B -N --askpass --background --preserve-env[=] --set-home ' +
      '--login --shell --list --validate --version --non-interactive --stdin --reset-timestamp --remove-timestamp ' +
      '-C= -D= -g= -h= -p= -R= -r= -t= -T= -U= -u= --close-from= --chdir= --group= --prompt= --chroot= --role= ' +
      '--type= --command-timeout= --other-user= --user= --host=',
    what: 'runs its command as another user',
    context: 'sudo runs it as another user',
    noPayload: [
      '-l',
      '-v',
      '-V',
      '-k',
      '-K',
      '--list',
      '--validate',
      '--version',
      '--reset-timestamp',
      '--remove-timestamp',
    ],
    assignments: true,
  }),
)
handle(
  'doas',
  wrapper({
    spec: '-n -s -L -u= -C=',
    what: 'runs its command as another user',
    context: 'doas runs it as another user',
    noPayload: ['-C', '-L'],
  }),
)
handle(
  'pkexec',
  wrapper({
    spec: '--user= --disable-internal-agent --keep-cwd',
    what: 'runs its command as another user',
    context: 'pkexec runs it as another user',
  }),
)
handle(
  'chroot',
  wrapper({
    spec: '--userspec= --groups= --skip-chdir',
    what: 'runs its command under another root directory',
    context: 'chroot runs it under another root directory',
    positionals: 1,
  }),
)
handle(
  'xargs',
  withOptions(
    '-0 -r -t -p -x -o --null --no-run-if-empty --verbose --interactive --exit --open-tty -a= -d= -E= -I= -L= -n= ' +
      '-P= -s= --arg-file= --delimiter= --max-lines= --max-args= --max-procs= --max-chars= --process-slot-var= ' +
      '-e[=] -i[=] -l[=] --eof[=] --replace[=]',
    (a, w, depth, cap, scan) => {
      const context = cap ?? 'xargs adds words read from its input, so the full command is not known here'
      const payload = scan.index < w.argv.length ? from(w, scan.index) : words(['echo'])
      if (a.wrapper(depth, w, context, 'runs its command with arguments read from its input'))
        a.run(payload, depth + 1, context)
    },
  ),
)
handle('busybox toybox', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const applet = w.argv[1]
    if (applet === undefined || applet.startsWith('-')) return void a.command(depth, w, cap)
    if (w.dynamic?.[1]) return a.opaque(depth, w.argv.join(' '), 'the applet name is only known at run time')
    if (a.wrapper(depth, w, cap, 'runs one of its built-in applets')) a.run(from(w, 1), depth + 1, cap)
  },
})

/** `env`: options, `-S` splitting, assignments (a changed context), then the payload. */
handle('env', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const spec = optionSpec(
      '-i -0 -v --ignore-environment --null --debug --list-signal-handling -u= -C= -P= --unset= --chdir= ' +
        '--block-signal[=] --default-signal[=] --ignore-signal[=]',
    )
    let argv = [...w.argv]
    let dynamic = w.dynamic ? [...w.dynamic] : undefined
    let i = 1
    for (;;) {
      const arg = argv[i]
      if (arg === undefined) break
      if (dynamic?.[i]) return a.opaque(depth, w.argv.join(' '), 'env is given a word only known at run time')
      const split = /^(?:-S|--split-string=?)(.*)$/s.exec(arg)
      if (split && (arg.startsWith('-S') || arg.startsWith('--split-string'))) {
        let text = split[1]!
        let consumed = 1
        if (text === '' && !arg.includes('=')) {
          text = argv[i + 1] ?? ''
          consumed = 2
        }
        const parts = /\\[_c]|\$/.test(text) ? undefined : staticWords(text)
        if (!parts)
          return a.opaque(depth, w.argv.join(' '), 'env -S is given a string tether cannot split statically')
        argv = [...argv.slice(0, i), ...parts, ...argv.slice(i + consumed)]
        dynamic = dynamic
          ? [...dynamic.slice(0, i), ...parts.map(() => false), ...dynamic.slice(i + consumed)]
          : undefined
        continue
      }
      if (arg === '-') {
        i++
        continue
      }
      if (!arg.startsWith('-') || arg === '--') break
      const scan = scanOptions([arg, ...argv.slice(i + 1, i + 2)], 0, spec)
      if (!scan.ok) return a.opaque(depth, w.argv.join(' '), scan.problem)
      if (scan.options.some((o) => o.name === '-P')) {
        return a.opaque(depth, w.argv.join(' '), 'env -P searches another path for the command')
      }
      i += scan.index
    }
    if (argv[i] === '--') i++
    changedEnvironment(a, words(argv, dynamic), i, depth, cap)
  },
})
handle('cross-env', {
  dynamicArgsOk: true,
  analyse: (a, w, depth, cap) => changedEnvironment(a, w, 1, depth, cap),
})

/** `NAME=value… command…` from `start`: the assignments are judged, and what runs gets a changed context. */
function changedEnvironment(
  a: Analysis,
  w: Words,
  start: number,
  depth: number,
  cap: string | undefined,
): void {
  const { end, assigned } = leadingAssignments(w, start)
  if (end >= w.argv.length) return void a.command(depth, w, cap)
  const context = cap ?? settingContext(w.argv[0]!, assigned)
  if (!a.wrapper(depth, w, context, 'runs its command in a changed environment')) return
  a.assignments(assigned, depth + 1, context)
  a.run(from(w, end), depth + 1, context)
}

/** The `NAME=value` words of `w` from `start` on: where they end, and what they assign. */
function leadingAssignments(w: Words, start: number): { end: number; assigned: ShellAssignment[] } {
  const assigned: ShellAssignment[] = []
  let end = start
  for (; end < w.argv.length; end++) {
    const word = w.argv[end]!
    const eq = word.indexOf('=')
    if (eq < 1 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(word.slice(0, eq))) break
    assigned.push({
      name: word.slice(0, eq),
      value: { text: word.slice(eq + 1), dynamic: w.dynamic?.[end] ?? false },
    })
  }
  return { end, assigned }
}

function settingContext(program: string, assigned: readonly ShellAssignment[]): string | undefined {
  if (assigned.length === 0) return undefined
  return `${basename(program)} sets environment variables (${assigned.map((v) => v.name).join(', ')})`
}

/** `/usr/bin/time`: a wrapper whose `-o FILE` writes. */
handle(
  'time',
  withOptions(
    '-p -v -q -a --portability --verbose --quiet --append -o= -f= --output= --format=',
    (a, w, depth, cap, scan) => {
      if (scan.index >= w.argv.length) return void a.command(depth, w, cap)
      if (!a.wrapper(depth, w, cap, 'runs its command and reports its resource use')) return
      for (const o of scan.options)
        if (o.name === '-o' || o.name === '--output') a.file(depth + 1, 'write', o.value ?? '', false, cap)
      a.run(from(w, scan.index), depth + 1, cap)
    },
  ),
)

handle(
  'watch',
  withOptions(
    '-b -e -g -c -x -p -t -w -C --beep --errexit --chgexit --color --no-color --exec --precise --no-title --no-wrap ' +
      '--no-linewrap -n= -q= --interval= --equexit= -d[=] --differences[=]',
    (a, w, depth, cap, scan) => {
      if (scan.index >= w.argv.length) return void a.command(depth, w, cap)
      if (!a.wrapper(depth, w, cap, 'runs its command repeatedly')) return
      const payload = from(w, scan.index)
      if (scan.options.some((o) => o.name === '-x' || o.name === '--exec')) a.run(payload, depth + 1, cap)
      else if (payload.dynamic)
        a.opaque(depth + 1, payload.argv.join(' '), 'watch runs a command line only known at run time')
      else a.script(payload.argv.join(' '), depth + 1, cap)
    },
  ),
)

handle(
  'flock',
  withOptions(
    '-s -x -e -u -n -o -F --shared --exclusive --unlock --nonblock --nb --close --no-fork --verbose ' +
      '-w= -E= -c= --timeout= --wait= --conflict-exit-code= --command=',
    (a, w, depth, cap, scan) => {
      const command = scan.options.find((o) => o.name === '-c' || o.name === '--command')
      const rest = scan.index + 1
      if (!command && rest >= w.argv.length) return void a.command(depth, w, cap)
      if (!a.wrapper(depth, w, cap, 'runs its command holding a lock')) return
      if (command) a.script(command.value ?? '', depth + 1, cap)
      else if (w.argv[rest] === '-c' || w.argv[rest] === '--command')
        a.script(w.argv[rest + 1] ?? '', depth + 1, cap)
      else a.run(from(w, rest), depth + 1, cap)
    },
  ),
)

/** `su`/`runuser`: `-c` scripts (or a `-u user -- cmd` payload) as another user. */
handle('su runuser', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const spec = optionSpec(
      '-l -m -p -P -f --login --preserve-environment --pty --fast -c= -C= -g= -G= -s= -u= -w= --command= ' +
        '--session-command= --group= --supp-group= --shell= --user= --whitelist-environment=',
    )
    const argv = w.argv.map((x) => (x === '-' ? '-l' : x))
    const scan = scanOptions(argv, 1, spec, w.dynamic)
    if (!scan.ok) return a.opaque(depth, w.argv.join(' '), scan.problem)
    const context = cap ?? `${w.argv[0]} runs it as another user`
    const command = scan.options.find((o) => /^(-c|-C|--command|--session-command)$/.test(o.name))
    const user = scan.options.some((o) => o.name === '-u' || o.name === '--user')
    if (!a.wrapper(depth, w, context, 'runs a command as another user')) return
    if (command) return a.script(command.value ?? '', depth + 1, context)
    if (user && scan.index < argv.length) return a.run(from(w, scan.index), depth + 1, context)
    const shellArgs = from(w, scan.index + 1)
    if (shellArgs.argv.length > 0)
      return a.run(
        words(['sh', ...shellArgs.argv], [false, ...(shellArgs.dynamic ?? shellArgs.argv.map(() => false))]),
        depth + 1,
        context,
      )
    a.opaque(depth + 1, w.argv.join(' '), 'it starts an interactive shell')
  },
})

/** `ssh host command…`: the command is a shell script run remotely; `-o ProxyCommand=…` runs locally. */
handle('ssh', {
  analyse(a, w, depth, cap) {
    const scan = a.options(
      w,
      depth,
      '-4 -6 -A -a -C -f -G -g -K -k -M -N -n -q -s -T -t -V -v -X -x -Y -y ' +
        '-B= -b= -c= -D= -E= -e= -F= -I= -i= -J= -L= -l= -m= -O= -o= -p= -Q= -R= -S= -W= -w=',
    )
    if (!scan) return
    const context = cap ?? 'ssh runs it on another machine'
    if (!a.wrapper(depth, w, context, 'runs a command on another machine')) return
    if (scan.options.some((o) => o.name === '-F'))
      return a.opaque(depth + 1, w.argv.join(' '), 'ssh -F reads a configuration that can run commands')
    for (const o of scan.options) {
      if (o.name !== '-o') continue
      const match = /^\s*(\w+)\s*[= ]\s*(.*)$/s.exec(o.value ?? '')
      if (match && /^(proxycommand|localcommand|knownhostscommand|remotecommand)$/i.test(match[1]!))
        a.script(match[2]!, depth + 1, context)
    }
    const remote = w.argv.slice(scan.index + 1)
    if (remote.length > 0) a.script(remote.join(' '), depth + 1, context)
  },
})

// ---- shells and interpreters

const SHELL_NAMES = 'sh bash zsh dash ksh mksh ash yash posh lksh rbash'
const SHELL_SET = new Set(SHELL_NAMES.split(' '))

export function isShell(name: string): boolean {
  return SHELL_SET.has(handlerName(name))
}

handle(SHELL_NAMES, {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    let command = false
    let login = false
    let stdin = false
    let i = 1
    for (; i < w.argv.length; i++) {
      const arg = w.argv[i]!
      if (w.dynamic?.[i])
        return a.opaque(depth, w.argv.join(' '), 'the shell is given a word only known at run time')
      if (arg === '--' || arg === '-') {
        i++
        break
      }
      if (arg.startsWith('--')) {
        if (arg === '--login') login = true
        else if (arg === '--rcfile' || arg === '--init-file')
          return a.opaque(depth, w.argv.join(' '), `${arg} makes the shell run another file`)
        continue
      }
      if (!/^[-+]/.test(arg)) break
      for (const flag of arg.slice(1)) {
        if (flag === 'c') command = true
        else if (flag === 'l') login = true
        else if (flag === 's' || flag === 'i') stdin = true
        else if (flag === 'o' || flag === 'O') i++
      }
    }
    const context = cap ?? (login ? 'a login shell runs the profile scripts first' : undefined)
    if (command) {
      const script = w.argv[i]
      if (script === undefined)
        return a.opaque(depth, w.argv.join(' '), 'the shell is told to run a script but given none')
      if (w.dynamic?.[i]) return a.opaque(depth, w.argv.join(' '), 'the script is only known at run time')
      if (a.wrapper(depth, words(w.argv.slice(0, i + 1)), context, 'runs a shell script'))
        a.script(script, depth + 1, context)
      return
    }
    if (stdin || i >= w.argv.length)
      return a.opaque(depth, w.argv.join(' '), 'the shell reads its commands from standard input')
    // `sh file args`: the same as running the file itself.
    if (a.wrapper(depth, w, context, 'runs a script file')) a.run(from(w, i), depth + 1, context)
  },
})

interface InterpreterSpec {
  /** Short option letters whose value is program text (`c` for python). */
  inline: string
  /** Long (or single-dash word) options whose value is program text. */
  inlineLong?: string[]
  /** Short option letters that take a value (so the letters after them are not options). */
  valued?: string
  /** Subcommands that take program text (`deno eval`). */
  inlineSubcommands?: string[]
  /** Program text in an argument starting with `+` (vim `+cmd`). */
  plusCommands?: boolean
  /** Whether the interpreter reads a program from standard input when given no file. */
  readsStdin?: boolean
}

function interpreter(spec: InterpreterSpec): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      const inline = inlineCode(w.argv, spec)
      if (inline) return a.opaque(depth, w.argv.join(' '), inline)
      if (spec.readsStdin && readsProgramFromStdin(w.argv, spec)) {
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} reads its program from standard input`)
      }
      if (w.dynamic)
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given words only known at run time`)
      a.command(depth, w, cap, { interpreter: true })
    },
  }
}

/** No program file among the operands (option values skipped) and no informational flag: stdin is the program. */
function readsProgramFromStdin(argv: readonly string[], spec: InterpreterSpec): boolean {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '-') return true
    if (/^(-V|-v|-h|--version|--help)$/.test(arg)) return false
    if (!arg.startsWith('-')) return false
    if (arg.startsWith('--')) continue
    const letters = arg.slice(1)
    for (let j = 0; j < letters.length; j++) {
      if (!spec.valued?.includes(letters[j]!)) continue
      // `-m module` and friends: the value is an operand of sorts (a module to run), so not stdin.
      if (letters[j] === 'm') return false
      if (j === letters.length - 1) i++
      break
    }
  }
  return true
}

function inlineCode(argv: readonly string[], spec: InterpreterSpec): string | undefined {
  const name = argv[0]
  if (spec.inlineSubcommands?.includes(argv[1] ?? ''))
    return `${name} ${argv[1]} runs program text given on the command line`
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') break
    if (spec.plusCommands && arg.startsWith('+')) return `${name} runs the editor commands in ${arg}`
    const long = arg.split('=')[0]!.toLowerCase()
    if (spec.inlineLong?.includes(long)) return `${name} ${long} runs program text given on the command line`
    if (!/^-[A-Za-z]/.test(arg) || arg.startsWith('--')) continue
    for (const letter of arg.slice(1)) {
      if (spec.inline.includes(letter))
        return `${name} -${letter} runs program text given on the command line`
      if (spec.valued?.includes(letter)) break
      if (!/[A-Za-z0-9]/.test(letter)) break
    }
  }
  return undefined
}

handle(
  'node nodejs',
  interpreter({ inline: 'ep', inlineLong: ['--eval', '--print'], valued: 'rC', readsStdin: true }),
)
handle('deno', interpreter({ inline: '', inlineLong: ['--eval'], inlineSubcommands: ['eval', 'repl'] }))
handle('bun', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    if (w.argv[1] === 'x') return runner(a, w, 2, depth, cap)
    BUN.analyse(a, w, depth, cap)
  },
})
const BUN = interpreter({ inline: 'ep', inlineLong: ['--eval', '--print'], valued: 'r' })
handle('ruby irb jruby', interpreter({ inline: 'e', valued: 'IrCEFKTWx', readsStdin: true }))
handle('perl', interpreter({ inline: 'eE', valued: 'IMmdDxil0F', readsStdin: true }))
handle('php', interpreter({ inline: 'rBREF', valued: 'cdztS', readsStdin: true }))
handle('lua luajit', interpreter({ inline: 'e', valued: 'l', readsStdin: true }))
handle('rscript', interpreter({ inline: 'e', inlineLong: ['--expr'] }))
handle('r', interpreter({ inline: 'e', inlineLong: ['--file'] }))
handle(
  'julia',
  interpreter({ inline: 'eE', inlineLong: ['--eval', '--print'], valued: 'JLCtp', readsStdin: true }),
)
handle('osascript', interpreter({ inline: 'e' }))
handle('tclsh wish expect', interpreter({ inline: 'c', readsStdin: true }))
handle(
  'pwsh powershell',
  interpreter({
    inline: 'ce',
    inlineLong: ['-command', '-encodedcommand', '-commandwithargs', '-cwa', '-ec', '--command'],
  }),
)
handle(
  'fish csh tcsh nu xonsh elvish',
  interpreter({ inline: 'c', inlineLong: ['--command'], readsStdin: true }),
)
handle('vi vim nvim view ex gvim', interpreter({ inline: 'cS', inlineLong: ['--cmd'], plusCommands: true }))
handle(
  'emacs',
  interpreter({ inline: 'lf', inlineLong: ['--eval', '--load', '--funcall', '--batch', '--script'] }),
)
handle('ed', interpreter({ inline: '', readsStdin: true }))
handle('less more most', interpreter({ inline: '', plusCommands: true }))

const HANDLER_CACHE = new Map<string, Handler | null>()

/** The handler for a program, by case-folded basename; looked up once per distinct program spelling. */
function handlerFor(program: string): Handler | undefined {
  let handler = HANDLER_CACHE.get(program)
  if (handler === undefined) {
    const name = handlerName(program)
    handler = HANDLERS.get(name) ?? patternHandler(name) ?? null
    if (HANDLER_CACHE.size > 4096) HANDLER_CACHE.clear()
    HANDLER_CACHE.set(program, handler)
  }
  return handler ?? undefined
}

function patternHandler(name: string): Handler | undefined {
  if (/^(python|pypy)[0-9.]*$/.test(name)) return PYTHON
  if (/^(g|m|n)?awk$/.test(name) || name === 'busybox-awk') return AWK
  return undefined
}

const PYTHON = interpreter({ inline: 'c', valued: 'WXQm', readsStdin: true })

/** awk programs are data unless they can run commands (`system`, pipes) or write files (`print > f`). */
const AWK: Handler = {
  analyse(a, w, depth, cap) {
    let program: string | undefined
    const sources: string[] = []
    let i = 1
    for (; i < w.argv.length; i++) {
      const arg = w.argv[i]!
      if (arg === '--') {
        i++
        break
      }
      if (/^(-f|--file|-i|--include|-l|--load|-E|--exec)(=|$)/.test(arg) || /^-[fil]./.test(arg)) {
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} runs a program from a file`)
      }
      if (arg === '-e' || arg === '--source') {
        sources.push(w.argv[++i] ?? '')
        continue
      }
      if (/^(-v|-F)$/.test(arg)) {
        i++
        continue
      }
      if (!arg.startsWith('-') || arg === '-') break
    }
    if (sources.length === 0) program = w.argv[i]
    const text = [...sources, program ?? ''].join('\n')
    if (
      /\bsystem\s*\(|@load|@include/.test(text) ||
      /(^|[^|])\|(?!\|)/.test(text) ||
      /\bprintf?\b[^;{}\n]*>/.test(text)
    ) {
      return a.opaque(depth, w.argv.join(' '), `the ${w.argv[0]} program can run commands or write files`)
    }
    a.command(depth, w, cap)
  },
}

// ---- runners (npx and friends): the payload is a package's program

function runner(a: Analysis, w: Words, start: number, depth: number, cap: string | undefined): void {
  const scan = a.options(
    w,
    depth,
    '-y -q --yes --no --quiet --no-install --ignore-existing --silent -p= --package= --call= -c= --shell= ' +
      '--prefix= --registry= --cache= --userconfig= -w= --workspace= --python= --with= --from= --spec= --verbose',
    start,
    true,
  )
  if (!scan) return
  const call = scan.options.find((o) => o.name === '-c' || o.name === '--call')
  if (!a.wrapper(depth, w, cap, 'runs a program from a package')) return
  if (call) a.script(call.value ?? '', depth + 1, cap)
  else if (scan.index < w.argv.length) a.run(from(w, scan.index), depth + 1, cap)
  else a.opaque(depth + 1, w.argv.join(' '), 'the package program to run is not named')
}

handle('npx pnpx bunx uvx', {
  dynamicArgsOk: true,
  analyse: (a, w, depth, cap) => runner(a, w, 1, depth, cap),
})

/** Package managers whose subcommands `exec`, `x`, `dlx`, `run` run another program. */
function packageManager(runners: string[]): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      let i = 1
      // Empty words are skipped too: the tool would reject them, and judging the rest is the safe reading.
      while (i < w.argv.length && (w.argv[i] === '' || w.argv[i]!.startsWith('-'))) {
        if (w.dynamic?.[i])
          return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given a word only known at run time`)
        const arg = w.argv[i]!
        if (/^(-C|--dir|--prefix|--cwd|-w|--workspace|--filter|-F)$/.test(arg)) i++
        else if (!arg.includes('=') && runners.includes(w.argv[i + 1] ?? '')) {
          return a.opaque(
            depth,
            w.argv.join(' '),
            `${arg} may take a value, so which subcommand ${w.argv[0]} runs is unclear`,
          )
        }
        i++
      }
      if (runners.includes(w.argv[i] ?? '') && !w.dynamic?.[i]) return runner(a, w, i + 1, depth, cap)
      if (w.dynamic)
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given words only known at run time`)
      a.command(depth, w, cap)
    },
  }
}

handle('npm', packageManager(['exec', 'x']))
handle('pnpm', packageManager(['exec', 'dlx']))
handle('yarn', packageManager(['exec', 'dlx']))
handle('uv', packageManager(['run']))
handle('pipx poetry pdm hatch rye pixi', packageManager(['run']))
handle('bundle', packageManager(['exec']))

// ---- programs whose options launch other programs

const GIT_LAUNCH_KEYS =
  /^(core\.(pager|editor|sshcommand|askpass|fsmonitor|gitproxy|alternaterefscommand)|sequence\.editor|diff\.external|pager\..+|credential\.(.+\.)?helper|gpg\.(.+\.)?program|.+\.(textconv|command|cmd|driver|clean|smudge|process|uploadpack|receivepack)|uploadpack\.packobjectshook|interactive\.difffilter)$/
const GIT_REDIRECT_KEYS =
  /^(core\.hookspath|core\.worktree|init\.templatedir|include\.path|includeif\..+|protocol\..+|url\..+|safe\..+)$/

/** One `-c key=value` of git: a value that names a program is a launch. */
function gitConfig(a: Analysis, pair: string, depth: number, cap: string | undefined): void {
  const eq = pair.indexOf('=')
  const key = (eq === -1 ? pair : pair.slice(0, eq)).toLowerCase()
  const value = eq === -1 ? '' : pair.slice(eq + 1)
  if (key.startsWith('alias.')) {
    if (value.startsWith('!')) a.script(value.slice(1), depth, cap)
    else a.script(`git ${value}`, depth, cap)
  } else if (GIT_REDIRECT_KEYS.test(key)) {
    a.opaque(depth, pair, `git -c ${key} changes where git finds hooks, configuration or transports`)
  } else if (GIT_LAUNCH_KEYS.test(key) && !(key === 'core.fsmonitor' && /^(true|false)$/i.test(value))) {
    if (value) a.script(value, depth, cap)
  }
}

handle('git', {
  analyse(a, w, depth, cap) {
    const argv = w.argv
    const launches: Array<() => void> = []
    let i = 1
    for (; i < argv.length; i++) {
      const arg = argv[i]!
      if (arg === '-c' || arg === '--config') {
        const pair = argv[++i] ?? ''
        launches.push(() => gitConfig(a, pair, depth + 1, cap))
      } else if (arg.startsWith('-c') && arg.length > 2) {
        launches.push(() => gitConfig(a, arg.slice(2), depth + 1, cap))
      } else if (/^--config-env(=|$)/.test(arg)) {
        const pair = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : (argv[++i] ?? '')
        launches.push(() =>
          a.opaque(depth + 1, pair, 'git --config-env takes a configuration value from the environment'),
        )
      } else if (/^--exec-path=/.test(arg)) {
        launches.push(() =>
          a.opaque(depth + 1, arg, 'git --exec-path runs git helpers from another directory'),
        )
      } else if (
        /^(-C|--git-dir|--work-tree|--namespace|--super-prefix|--list-cmds|--attr-source)$/.test(arg)
      ) {
        i++
      } else if (arg !== '' && !arg.startsWith('-')) break
    }
    const sub = argv[i]
    const rest = argv.slice(i + 1)
    const forms = i > 1 && sub !== undefined ? [['git', sub, ...rest].join(' ')] : undefined
    if (!a.command(depth, w, cap, forms ? { forms } : {})) return
    for (const launch of launches) launch()
    const scripts: string[] = []
    switch (sub) {
      case 'rebase':
        scripts.push(...longOptionValues(rest, '--exec'), ...shortOptionValues(rest, 'x', 'xsSXCo'))
        break
      case 'bisect':
        if (rest[0] === 'run') scripts.push(rest.slice(1).join(' '))
        break
      case 'submodule': {
        const at = rest.indexOf('foreach')
        if (at !== -1)
          scripts.push(
            rest
              .slice(at + 1)
              .filter((x) => !/^(--recursive|-q|--quiet)$/.test(x))
              .join(' '),
          )
        break
      }
      case 'difftool':
      case 'mergetool':
        scripts.push(...longOptionValues(rest, '--extcmd'), ...shortOptionValues(rest, 'x', 'xty'))
        break
      case 'filter-branch':
        for (const filter of ['env', 'tree', 'index', 'parent', 'msg', 'commit', 'tag-name']) {
          scripts.push(...longOptionValues(rest, `--${filter}-filter`))
        }
        scripts.push(...longOptionValues(rest, '--setup'))
        break
      case 'grep':
        scripts.push(...longOptionValues(rest, '--open-files-in-pager'))
        for (const arg of rest) if (/^-O./.test(arg)) scripts.push(arg.slice(2))
        break
      case 'clone':
        for (const pair of [
          ...longOptionValues(rest, '--config'),
          ...shortOptionValues(rest, 'c', 'cbojuC'),
        ]) {
          gitConfig(a, pair, depth + 1, cap)
        }
        if (longOptionValues(rest, '--template').length > 0)
          a.opaque(depth + 1, sub, 'git clone --template installs hooks from another directory')
        break
    }
    if (sub && /^(fetch|pull|clone|ls-remote|archive|push|send-pack|fetch-pack|remote)$/.test(sub)) {
      scripts.push(
        ...longOptionValues(rest, '--upload-pack'),
        ...longOptionValues(rest, '--receive-pack'),
        ...longOptionValues(rest, '--exec'),
      )
      if (sub === 'ls-remote' || sub === 'clone' || sub === 'fetch')
        scripts.push(...shortOptionValues(rest, 'u', 'uobjc'))
    }
    for (const script of scripts) a.script(script, depth + 1, cap)
  },
})

handle('find', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv
    for (let i = 1; i < argv.length; i++) {
      const arg = argv[i]!
      if (/^-(exec|execdir|ok|okdir)$/.test(arg)) {
        let end = i + 1
        while (end < argv.length && argv[end] !== ';' && argv[end] !== '+') end++
        const context = cap ?? `find ${arg} runs it on every file found`
        a.run(words(argv.slice(i + 1, end)), depth + 1, context)
        i = end
      } else if (/^-(fprint|fprint0|fls|fprintf)$/.test(arg)) {
        a.file(depth + 1, 'write', argv[i + 1] ?? '', false, cap)
        i += arg === '-fprintf' ? 2 : 1
      }
    }
  },
})

handle('tar bsdtar gtar', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    const scripts = [
      ...longOptionValues(argv, '--to-command'),
      ...longOptionValues(argv, '--use-compress-program'),
      ...longOptionValues(argv, '--rsh-command'),
      ...longOptionValues(argv, '--info-script'),
      ...longOptionValues(argv, '--new-volume-script'),
      ...shortOptionValues(argv, 'I', 'bfgCIFKLNTVX'),
      ...shortOptionValues(argv, 'F', 'bfgCIFKLNTVX'),
    ]
    for (const action of longOptionValues(argv, '--checkpoint-action')) {
      const exec = /^exec=(.*)$/s.exec(action)
      if (exec) scripts.push(exec[1]!)
    }
    // Old-style `tar cIf prog file`: letters without a dash take their values from the next words in order.
    const bundle = argv[0]
    if (bundle && /^[A-Za-z]+$/.test(bundle)) {
      let next = 1
      for (const letter of bundle) {
        if (!'bfgCIFKLNTVX'.includes(letter)) continue
        if ('IF'.includes(letter) && argv[next] !== undefined) scripts.push(argv[next]!)
        next++
      }
    }
    for (const script of scripts) a.script(script, depth + 1, cap)
  },
})

handle('rg', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    for (const program of [...longOptionValues(argv, '--pre'), ...longOptionValues(argv, '--hostname-bin')]) {
      a.run(words([program]), depth + 1, cap)
    }
  },
})

handle('sort', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    for (const program of longOptionValues(argv, '--compress-program'))
      a.run(words([program]), depth + 1, cap)
    for (const file of [...longOptionValues(argv, '--output'), ...shortOptionValues(argv, 'o', 'ktoST')]) {
      a.file(depth + 1, 'write', file, false, cap)
    }
  },
})

handle('sed gsed', {
  analyse(a, w, depth, cap) {
    const argv = w.argv
    const scripts: string[] = []
    const operands: string[] = []
    let inPlace = false
    for (let i = 1; i < argv.length; i++) {
      const arg = argv[i]!
      if (arg === '--') {
        operands.push(...argv.slice(i + 1))
        break
      }
      if (/^--(expression)(=|$)/.test(arg))
        scripts.push(arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : (argv[++i] ?? ''))
      else if (/^--(file)(=|$)/.test(arg))
        return a.opaque(depth, argv.join(' '), 'sed -f runs a script from a file')
      else if (/^--in-place/.test(arg)) inPlace = true
      else if (/^--line-length$/.test(arg)) i++
      else if (arg.startsWith('--')) continue
      else if (arg.startsWith('-') && arg.length > 1) {
        for (let j = 1; j < arg.length; j++) {
          const letter = arg[j]!
          if (letter === 'e' || letter === 'l') {
            const value = arg.slice(j + 1) || argv[++i] || ''
            if (letter === 'e') scripts.push(value)
            break
          }
          if (letter === 'f') return a.opaque(depth, argv.join(' '), 'sed -f runs a script from a file')
          if (letter === 'i') {
            inPlace = true
            break
          }
        }
      } else operands.push(arg)
    }
    if (scripts.length === 0 && operands.length > 0) scripts.push(operands.shift()!)
    if (!a.command(depth, w, cap)) return
    for (const script of scripts) {
      const effects = sedEffects(script)
      if (effects.unreadable)
        a.opaque(depth + 1, script, `the sed script cannot be read: ${effects.unreadable}`)
      if (effects.runs) a.opaque(depth + 1, script, 'the sed script runs commands (the e command or flag)')
      for (const file of effects.writes) a.file(depth + 1, 'write', file, false, cap)
      for (const file of effects.reads) a.file(depth + 1, 'read', file, false, cap)
    }
    if (inPlace) for (const file of operands) a.file(depth + 1, 'write', file, false, cap)
  },
})

/**
 * A program judged as it stands, whose options name shell commands it runs: each `[long, letter]` is one
 * option (`--pager=CMD`, `-P CMD`); `valued` lists the option letters that take a value.
 */
function runsScriptsFrom(options: ReadonlyArray<readonly [string, string]>, valued: string): Handler {
  return {
    analyse(a, w, depth, cap) {
      if (!a.command(depth, w, cap)) return
      const argv = w.argv.slice(1)
      for (const [long, letter] of options) {
        for (const command of [...longOptionValues(argv, long), ...shortOptionValues(argv, letter, valued)]) {
          a.script(command, depth + 1, cap)
        }
      }
    },
  }
}

handle(
  'man',
  runsScriptsFrom(
    [
      ['--pager', 'P'],
      ['--html', 'H'],
    ],
    'PHCLMmSsER',
  ),
)
handle('rsync', runsScriptsFrom([['--rsh', 'e']], 'eBfTM'))
handle('script', runsScriptsFrom([['--command', 'c']], 'cEIOBTmot'))

handle('scp sftp', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    for (const program of shortOptionValues(argv, 'S', 'SFicDJloPpRsX'))
      a.run(words([program]), depth + 1, cap)
    for (const option of shortOptionValues(argv, 'o', 'SFicDJloPpRsX')) {
      const match = /^\s*(\w+)\s*[= ]\s*(.*)$/s.exec(option)
      if (match && /^(proxycommand|localcommand|knownhostscommand)$/i.test(match[1]!))
        a.script(match[2]!, depth + 1, cap)
    }
    if (shortOptionValues(argv, 'F', 'SFicDJloPpRsX').length > 0)
      a.opaque(depth + 1, w.argv.join(' '), `${w.argv[0]} -F reads a configuration that can run commands`)
  },
})

handle('zip', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    const commands = [...longOptionValues(argv, '--unzip-command')]
    const tt = argv.indexOf('-TT')
    if (tt !== -1 && argv[tt + 1] !== undefined) commands.push(argv[tt + 1]!)
    for (const command of commands) a.script(command, depth + 1, cap)
  },
})

// ---- shell builtins that run code tether cannot see

function opaqueBuiltin(note: string, when?: (argv: readonly string[]) => boolean): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      if (when && !when(w.argv)) return void a.command(depth, w, cap)
      a.opaque(depth, w.argv.join(' '), note)
    },
  }
}

handle('eval', opaqueBuiltin('eval runs a string as a script, which is only known at run time'))
handle('source .', opaqueBuiltin('it runs the commands of another file'))
handle(
  'trap',
  opaqueBuiltin(
    'trap runs its body later, on a signal',
    (argv) => argv.length > 2 && argv[1] !== '-' && argv[1] !== '-p' && argv[1] !== '-l',
  ),
)
handle(
  'alias',
  opaqueBuiltin('an alias changes what later command names run', (argv) =>
    argv.slice(1).some((x) => x.includes('=')),
  ),
)
handle(
  'hash',
  opaqueBuiltin('hash -p changes which file a command name runs', (argv) =>
    argv.some((x) => /^-\w*p/.test(x)),
  ),
)
handle('enable', opaqueBuiltin('enable loads or switches shell builtins'))
handle('fc', opaqueBuiltin('fc re-runs commands from the shell history'))
handle('bind', opaqueBuiltin('bind can attach commands to keys'))
handle('let', opaqueBuiltin('let evaluates arithmetic, which can run commands through array subscripts'))
handle(
  'mapfile readarray',
  opaqueBuiltin('mapfile -C runs a callback', (argv) => argv.some((x) => /^-\w*C/.test(x))),
)
handle(
  'unshare nsenter firejail bwrap systemd-run parallel strace ltrace gdb valgrind perf lldb proot fakeroot ' +
    'fakechroot torsocks proxychains proxychains4 tmux screen at batch crontab numactl cpulimit prlimit setpriv ' +
    'runcon dbus-launch unbuffer caffeinate chrt sg newgrp xvfb-run entr nodemon concurrently npm-run-all ' +
    'run-p run-s dotenv direnv nix-shell',
  opaqueBuiltin('it runs other programs in ways tether does not analyse'),
)

// ---- entry points

export function analyseArgv(argv: readonly string[]): AnalysedNode[] {
  const analysis = new Analysis()
  analysis.run(words(argv), 0)
  return analysis.nodes
}

/** A command line judged as bash would run it (`Policy.check('exec', line)`). */
export function analyseScript(source: string): AnalysedNode[] {
  const analysis = new Analysis()
  analysis.script(source, 0, undefined)
  return analysis.nodes
}
