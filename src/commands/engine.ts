/**
 * The core of exec analysis: the nodes it produces, the `Analysis` that collects them while it walks an argv
 * (wrappers, scripts, assignments), and the registry of per-program handlers the other files fill in.
 */

import { clip } from '../present/index.js'
import { optionSpec, type ParsedOption, scanOptions } from './options.js'
import type { ParsedCommand } from './programs.js'
import {
  type CommandItem,
  parseScript,
  type ScriptItem,
  type ShellAssignment,
  type ShellWord,
} from './shell/parse.js'
import {
  assignedVariables,
  builtinProblem,
  CODE_VARIABLE,
  COMMAND_VARIABLE,
  integerVariables,
  readsEnvironment,
  SENSITIVE_VARIABLE,
  scriptVariables,
  staticVariables,
  substituted,
} from './variables.js'

/** What kind of node of an exec tree a check judged. */
/** Characters of a construct a note shows. */
const SHOWN = 80

export type ExecNodeKind =
  /** A command that will run (the argv itself, a wrapper's payload, a command inside a script). */
  | 'command'
  /** A wrapper or shell whose payload is judged separately; it only counts when a deny/ask rule names it. */
  | 'wrapper'
  /** A file the command reads or writes (a redirection, `sed -i`, `sort -o`, `find -fprint`, …). */
  | 'file'
  /** Something the analyser could not reduce to static commands: never allowed. */
  | 'opaque'

export interface AnalysedNode {
  kind: ExecNodeKind
  depth: number
  act: 'exec' | 'read' | 'write' | 'net'
  /** The command (for `command` and `wrapper` nodes; for `opaque` ones, what could be read of it). */
  argv: readonly string[]
  /** Which argv words are only known at run time (from a script). */
  dynamic?: readonly boolean[] | undefined
  /** For run-time words, a glob every value matches (`pu$x` → `pu*`); `*` where absent. */
  globs?: readonly (string | undefined)[] | undefined
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
  /** Options (or subcommands) that change what the program does; an allow rule must name them. */
  risks?: readonly Risk[] | undefined
  /** Program text a person should read before approving (inline code, a script on standard input). */
  code?: string | undefined
  /**
   * Runs code tether does not read (inline program text, `source FILE`): only a rule naming it allows it,
   * never the default.
   */
  unreduced?: boolean | undefined
  /** Judged only for deny: something the command might run, found where tether cannot be sure. */
  probe?: boolean | undefined
  /** The command is the first of a `while`/`until` condition. */
  loop?: 'while' | 'until' | undefined
  /** Some word expands a variable the script does not set, so it may print the environment (`echo $TOKEN`). */
  environment?: boolean | undefined
  /** The command read with its program's option table, when the analysis did (see ../option-rules.ts). */
  parsed?: ParsedCommand | undefined
  /**
   * The command as spelled through the package runner that runs it (`npx vitest run`): allow rules that
   * name the tool (their text before any `*` reaches past `named` characters) see it.
   */
  allowAs?: { spelling: string; named: number } | undefined
}

/** An option that changes what an allowed program does (runs a program, writes, deletes, …). */
export interface Risk {
  /** How tether names it: the option's canonical spelling (`--output`) or the subcommand (`view`). */
  readonly option: string
  /** Every spelling a rule may use to name it (its aliases, and the spelling given). */
  readonly names: readonly string[]
  /** What it does, for a reason: "writes a file it names". */
  readonly what: string
}

type NodeExtra = Pick<
  AnalysedNode,
  'forms' | 'note' | 'interpreter' | 'risks' | 'code' | 'unreduced' | 'parsed'
>

const MAX_NODES = 400
const MAX_DEPTH = 12
/** How many readings of an unclear command line are tried for deny rules, and how deeply they nest. */
const MAX_PROBES = 8
const MAX_PROBE_NESTING = 3

export interface Words {
  argv: readonly string[]
  dynamic: readonly boolean[] | undefined
  globs?: readonly (string | undefined)[] | undefined
  /** What the command reads on standard input, when the script says. */
  stdin?: ShellWord | undefined
  /** The first command of a `while`/`until` condition. */
  loop?: 'while' | 'until' | undefined
  /** See AnalysedNode.environment. */
  environment?: boolean | undefined
  /** See AnalysedNode.allowAs. */
  allowAs?: AnalysedNode['allowAs']
}

export function words(argv: readonly string[], dynamic?: readonly boolean[]): Words {
  return { argv, dynamic: dynamic?.some(Boolean) ? dynamic : undefined }
}

export function from(w: Words, start: number): Words {
  const out = words(w.argv.slice(start), w.dynamic?.slice(start))
  if (out.dynamic && w.globs) out.globs = w.globs.slice(start)
  if (w.stdin) out.stdin = w.stdin
  return out
}

/** The words of a script command: static brace expansions resolved, globs and standard input kept. */
function commandWords(item: CommandItem, assigned: () => ReadonlySet<string>): Words {
  const argv: string[] = []
  const dynamic: boolean[] = []
  const globs: Array<string | undefined> = []
  for (const word of item.words) {
    if (word.braces) {
      for (const text of word.braces) {
        argv.push(text)
        dynamic.push(false)
        globs.push(undefined)
      }
    } else {
      argv.push(word.text)
      dynamic.push(word.dynamic)
      globs.push(word.glob)
    }
  }
  const w = words(argv, dynamic)
  if (w.dynamic) {
    w.globs = globs
    if (item.words.some((word) => word.dynamic && readsEnvironment(word, assigned()))) w.environment = true
  }
  if (item.stdin) w.stdin = item.stdin
  if (item.loop) w.loop = item.loop
  return w
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
  /** How many probes deep the analysis is: inside one, nodes are judged only for deny. */
  private probing = 0
  /**
   * Why the commands analysed now may run in another directory than the one the call starts in (a script
   * that changes directory, `env -C`); git there may be another repository (see git.ts).
   */
  elsewhere: string | undefined

  private add(node: AnalysedNode): boolean {
    if (this.nodes.length >= MAX_NODES || node.depth > MAX_DEPTH) {
      if (this.probing === 0 && this.nodes.at(-1)?.note !== LIMIT) {
        this.nodes.push({ kind: 'opaque', depth: node.depth, act: 'exec', argv: [], target: '', note: LIMIT })
      }
      return false
    }
    if (this.probing > 0) node.probe = true
    this.nodes.push(node)
    return true
  }

  /**
   * Something tether cannot reduce to static commands. `readable` is what can be read of it (a command
   * whose name is only known at run time: deny rules that could match it apply); `code` is shown to a person.
   */
  opaque(depth: number, target: string, note: string, readable?: Words, code?: string): void {
    this.add({
      kind: 'opaque',
      depth,
      act: 'exec',
      argv: readable?.argv ?? [],
      dynamic: readable?.dynamic,
      globs: readable?.globs,
      target,
      note,
      code,
    })
  }

  /**
   * Judges, for deny rules only, what an unclear command line might run: every suffix starting at a word
   * that is not an option (`strace -f rm -rf /` might run `rm -rf /`), and words with spaces as scripts.
   */
  probeWords(w: Words, start: number, depth: number): void {
    this.probe(() => {
      let tried = 0
      for (let i = start; i < w.argv.length && tried < MAX_PROBES; i++) {
        const word = w.argv[i]!
        if (w.dynamic?.[i] || word.startsWith('-') || word === '') continue
        tried++
        if (/\s/.test(word)) {
          this.script(word, depth, undefined)
          // Debuggers and multiplexers run shell commands given as `shell CMD` or `!CMD`.
          const shell = /^\s*(?:shell\s+|!)(.+)$/s.exec(word)
          if (shell) this.script(shell[1]!, depth, undefined)
        } else this.run(from(w, i), depth, undefined)
      }
    })
  }

  /** Judges, for deny rules only, a script whose text is only partly known (dynamic parts as written). */
  probeScript(text: string, depth: number): void {
    this.probe(() => this.script(text, depth, undefined))
  }

  private probe(body: () => void): void {
    if (this.probing >= MAX_PROBE_NESTING) return
    this.probing++
    try {
      body()
    } finally {
      this.probing--
    }
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
      globs: w.globs,
      target: '',
      forms: extra?.forms,
      cap,
      note: extra?.note,
      interpreter: extra?.interpreter,
      risks: extra?.risks,
      code: extra?.code,
      unreduced: extra?.unreduced,
      probe: undefined,
      loop: w.loop,
      environment: w.environment,
      allowAs: w.allowAs,
      parsed: extra?.parsed,
    })
  }

  /**
   * Reads a command's options (see `scanOptions`); when they cannot be read the command becomes an opaque
   * node (with what it might run judged for deny rules) and the result is undefined.
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
    this.unclear(w, depth, scan.problem, start)
    return undefined
  }

  /** A command whose options cannot be read: opaque, with what it might run judged for deny rules. */
  unclear(w: Words, depth: number, problem: string, start = 1): void {
    this.opaque(depth, w.argv.join(' '), problem)
    this.probeWords(w, start, depth + 1)
  }

  /** Analyses one command and everything it launches. */
  run(w: Words, depth: number, cap?: string): void {
    if (w.argv.length === 0) return
    if (w.dynamic?.[0]) {
      this.opaque(depth, w.argv.join(' '), `the command name ${w.argv[0]} is only known at run time`, w)
      this.probeWords(w, 1, depth + 1)
      return
    }
    if (w.argv[0]!.startsWith('-')) {
      // No program is named like an option: the words before it were misread, so nothing here is certain.
      this.unclear(w, depth, `the command would start with the option-like word ${w.argv[0]}`, 0)
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
        w,
      )
      return
    }
    handler.analyse(this, w, depth, cap)
  }

  /** Parses `source` as a bash script and analyses every command in it, one level below `depth`. */
  script(source: string, depth: number, cap: string | undefined): void {
    const parsed = cachedParse(source)
    const outside = this.elsewhere
    // Anywhere in the script, since a loop runs its commands again after a later `cd`.
    if (parsed.items.some(changesDirectory)) this.elsewhere = 'the script changes directory'
    let integers: ReadonlySet<string> | undefined
    let values: ReadonlyMap<string, string> | undefined
    let variables: ReadonlySet<string> | undefined
    let scriptCap = cap
    for (const item of parsed.items) {
      const at = depth + item.depth
      if (item.type === 'command') {
        const { assigned, persistent } = assignedVariables(item)
        this.assignments(assigned, at, scriptCap)
        // A standalone assignment, export or `read` changes the environment of every later command.
        const sensitive = persistent && assigned.find((v) => SENSITIVE_VARIABLE.test(v.name))
        if (sensitive) scriptCap ??= `the script sets ${sensitive.name}, which changes how later commands run`
        if (item.words.length === 0) continue
        const here =
          item.assigns.length > 0
            ? (scriptCap ??
              `it runs with environment variables set (${item.assigns.map((v) => v.name).join(', ')})`)
            : scriptCap
        const problem = builtinProblem(item.words)
        if (problem) {
          this.opaque(at, joinWords(item.words), problem)
          // A computed subscript runs what it substitutes (`printf -v 'a[$(cmd)]'`).
          for (const word of item.words) {
            const subscript = /\[([^\]]*[$`][^\]]*)\]/.exec(word.text)
            if (subscript) this.probeScript(`: ${subscript[1]}`, at + 1)
          }
        }
        this.run(
          commandWords(item, () => (variables ??= scriptVariables(parsed.items))),
          at,
          here,
        )
        // A command name made of variables the script sets: what it becomes is judged for deny rules.
        if (item.words[0]?.dynamic && item.words[0].parts) {
          values ??= staticVariables(parsed.items)
          const argv = substituted(item.words, values)
          if (argv && argv.length > 0) this.probe(() => this.run(words(argv), at + 1, undefined))
        }
      } else if (item.type === 'redirect') {
        this.file(at, item.act, item.target.text, item.target.dynamic, scriptCap)
      } else if (item.type === 'net') {
        this.net(at, item.target, scriptCap)
      } else if (item.type === 'arithmetic') {
        integers ??= integerVariables(parsed.items)
        const unknown = item.names.filter((name) => !integers!.has(name))
        if (unknown.length > 0) {
          this.opaque(
            at,
            unknown.join(', '),
            `arithmetic on ${unknown.join(', ')}, which the script does not keep to integers (a value such as a[$(cmd)] runs cmd)`,
          )
        }
      } else {
        this.opaque(at, clip(source, SHOWN), item.reason, undefined, source)
      }
    }
    this.elsewhere = outside
  }

  /**
   * Environment assignments whose value is code: variables bash itself runs (`PS4`, `BASH_ENV`, …) are
   * opaque; variables that name a command for a program to run (`GIT_SSH_COMMAND`, `PAGER`, …) have that
   * command judged.
   */
  assignments(assigned: readonly ShellAssignment[], depth: number, cap: string | undefined): void {
    for (const { name, value } of assigned) {
      if (CODE_VARIABLE.test(name)) {
        this.opaque(depth, `${name}=${value.text}`, `bash runs the value of ${name} as code`)
        this.probeScript(value.text, depth + 1)
      } else if (COMMAND_VARIABLE.test(name) && value.text !== '') {
        if (value.dynamic) {
          this.opaque(depth, `${name}=${value.text}`, `${name} names a command only known at run time`)
          this.probeScript(value.text, depth + 1)
        } else this.script(value.text, depth + 1, cap)
      }
    }
  }
}

const LIMIT = 'the command is too large or too deeply nested to analyse'

/**
 * Whether a script command may change the shell's directory: `cd`, `pushd` or `popd` as any of its words
 * (`builtin cd`, `command cd`) or inside one (`eval "cd x"`). Generous: `echo cd` counts too.
 */
function changesDirectory(item: ScriptItem): boolean {
  return (
    item.type === 'command' &&
    item.words.some((word) => /(^|[^\w-])(cd|pushd|popd)($|[^\w-])/.test(word.text))
  )
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

/** Every program name a handler is registered for (what the analysis knows by name). */
export function handledPrograms(): string[] {
  return [...HANDLERS.keys()]
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
