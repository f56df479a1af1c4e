/**
 * The core of exec analysis: the nodes it produces, the `Analysis` that collects them while it walks an argv
 * (wrappers, scripts, assignments), and the registry of per-program handlers the other files fill in.
 */
import { parseScript, type ShellAssignment, type ShellWord } from '../shell/parse.js'
import type { ExecNodeKind } from '../types.js'
import { optionSpec, type ParsedOption, scanOptions } from './options.js'

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

export interface Words {
  argv: readonly string[]
  dynamic: readonly boolean[] | undefined
}

export function words(argv: readonly string[], dynamic?: readonly boolean[]): Words {
  return { argv, dynamic: dynamic?.some(Boolean) ? dynamic : undefined }
}

export function from(w: Words, start: number): Words {
  return words(w.argv.slice(start), w.dynamic?.slice(start))
}

export function basename(program: string): string {
  if (!program.includes('/')) return program
  const trimmed = program.replace(/\/+$/, '')
  const slash = trimmed.lastIndexOf('/')
  return slash === -1 ? trimmed : trimmed.slice(slash + 1)
}

/** The name handlers are looked up by: basename, case-folded (deny-side generosity: `ENV rm` unwraps). */
export function handlerName(program: string): string {
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

export interface Handler {
  analyse(a: Analysis, w: Words, depth: number, cap: string | undefined): void
  /** Whether words only known at run time are harmless data for this program's analysis. */
  dynamicArgsOk?: boolean
}

const HANDLERS = new Map<string, Handler>()

export function handle(names: string, handler: Handler): void {
  for (const name of names.split(' ')) HANDLERS.set(name, handler)
}

/** A handler that reads the command's options from `table` first; unreadable options make it opaque. */
export function withOptions(
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

const HANDLER_CACHE = new Map<string, Handler | null>()

/** The handler for a program, by case-folded basename; looked up once per distinct program spelling. */
export function handlerFor(program: string): Handler | undefined {
  let handler = HANDLER_CACHE.get(program)
  if (handler === undefined) {
    const name = handlerName(program)
    handler = HANDLERS.get(name) ?? patternHandler(name) ?? null
    if (HANDLER_CACHE.size > 4096) HANDLER_CACHE.clear()
    HANDLER_CACHE.set(program, handler)
  }
  return handler ?? undefined
}

/** Handlers found by a name pattern (`python3.12`, `gawk`), tried when no name matches exactly. */
const PATTERN_HANDLERS: Array<[RegExp, Handler]> = []

export function handlePattern(pattern: RegExp, handler: Handler): void {
  PATTERN_HANDLERS.push([pattern, handler])
}

function patternHandler(name: string): Handler | undefined {
  for (const [pattern, handler] of PATTERN_HANDLERS) if (pattern.test(name)) return handler
  return undefined
}
