/**
 * A bash parser for policy analysis: it finds every command a script would run and every file it would
 * redirect to, resolving quotes and backslashes exactly as bash does, and reports what it cannot reduce to
 * static commands instead of guessing.
 *
 * Why not a published parser (all three were tried on this machine, Node 20):
 * - `mvdan-sh` (mvdan/sh compiled to JS by GopherJS; 1.5 MB) parses bash faithfully, but it cannot load in
 *   a Temporal workflow sandbox (it assigns `Error.stackTraceLimit`, which the sandbox freezes), it writes
 *   `require` onto the global object, and reading its tree through the GopherJS API managed about 2,000
 *   scripts/s (its raw parse alone ~26,000/s), against a target of 20,000 analysed scripts/s.
 * - `tree-sitter-bash` + `web-tree-sitter` (1.6 MB of WASM) needs an asynchronous WASM load from disk, so it
 *   cannot back a synchronous, I/O-free `checkExec`; it also recovers from errors instead of failing, and
 *   attaches `> file` to a whole `a && b | c` list rather than to `c`.
 * - `sh-syntax` (mvdan/sh as WASM) is asynchronous, parsed about 200 scripts/s, and its nodes come back
 *   stripped to positions.
 * So tether carries this parser (no dependencies, pure, ~10x faster than the target) and its tests check
 * it against `mvdan-sh` as an oracle: for a corpus of scripts both must find the same commands and
 * redirections. Every construct it does not fully understand is reported as a problem, and the policy
 * treats a problem as "deny while any exec deny rule exists, else ask".
 */

/** A word after quote removal. `dynamic` when part of it is only known at run time (`$x`, `$(…)`, a glob). */
export interface ShellWord {
  /** The static text; dynamic parts appear as written (`$HOME`, `$(date)`), so a human can read it. */
  text: string
  dynamic: boolean
  /**
   * For a dynamic word, a glob in tether's pattern language that every value of the word matches: its
   * static parts, with `*` where the run-time parts are (`pu$x` → `pu*`).
   */
  glob?: string
  /** The words a static brace expansion gives (`{rm,-rf}` → `rm`, `-rf`); `dynamic` stays true for it. */
  braces?: string[]
  /** Always an integer: an integer literal, or exactly one arithmetic expansion (`$((i + 1))`). */
  integer?: boolean
  /**
   * For a dynamic word made only of text and plain variable references (`$a$b`, `"${dir}/x"`), its parts:
   * a script that sets those variables statically says what the word becomes.
   */
  parts?: WordPart[]
}

/**
 * Static text, a plain variable reference, or a command substitution (its source); `quoted` inside double
 * quotes, where the value is not split into words.
 */
export type WordPart = string | { name: string; quoted: boolean } | { substitution: string; quoted: boolean }

/** `NAME=value` before a command (or alone); an array assignment `NAME=(…)` has a dynamic value. */
export interface ShellAssignment {
  name: string
  value: ShellWord
}

export interface CommandItem {
  type: 'command'
  words: ShellWord[]
  assigns: ShellAssignment[]
  depth: number
  /** What the command reads on standard input when the script says (`<<<`, a here-document, `echo … |`). */
  stdin?: ShellWord
  /** The command is the first of a `while` or `until` condition. */
  loop?: 'while' | 'until'
}

export type ScriptItem =
  | CommandItem
  | { type: 'redirect'; act: 'read' | 'write'; target: ShellWord; depth: number }
  | { type: 'net'; target: string; depth: number }
  /**
   * Arithmetic on variables (`$((i + 1))`, `((i++))`, `[[ $n -lt 3 ]]`): safe while every variable it
   * names only ever holds an integer (a value like `a[$(cmd)]` would run `cmd`), which the caller decides.
   */
  | { type: 'arithmetic'; names: string[]; assigned: string[]; depth: number }
  | { type: 'problem'; reason: string; depth: number }

export interface ParsedScript {
  items: ScriptItem[]
}

const MAX_SOURCE = 64 * 1024
const MAX_NESTING = 24
const MAX_ITEMS = 2000

class ParseError extends Error {}

const RESERVED_END = new Set(['then', 'elif', 'else', 'fi', 'do', 'done', 'esac', '}'])
const BLANK = /[ \t]/
const WORD_END = /[ \t\n;&|()<>]/
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=/
const REDIRECT = /^(\d+|\{[A-Za-z_][A-Za-z0-9_]*\})?(<<<|<<-|<<|<>|<&|>&|>>|>\||&>>|&>|<|>)/
/** Arithmetic made of numbers, operators and plain variable names (no substitutions, subscripts or quotes). */
const SIMPLE_ARITHMETIC =
  /^(?:[\s+\-*/%()<>=!&|^~?:,;]|[0-9][0-9A-Za-z_#@]*|\$?[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})*$/
const ARITHMETIC_NAME = /(?<![0-9A-Za-z_#@])\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g
/** Names an arithmetic expression assigns: `i=…`, `i+=…`, `i++`, `--i`. */
const ARITHMETIC_ASSIGNED =
  /([A-Za-z_][A-Za-z0-9_]*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|([A-Za-z_][A-Za-z0-9_]*)\s*(?:\+\+|--)|(?:\+\+|--)\s*([A-Za-z_][A-Za-z0-9_]*)/g
const MAX_BRACE_WORDS = 64
const PASSIVE_DEVICES = /^\/dev\/(null|stdout|stderr|stdin|fd\/\d+)$/

interface WordBuild {
  text: string
  dynamic: boolean
  quoted: boolean
  /** The unquoted characters, quoted ones replaced by `_`: where globs and braces are recognised. */
  skeleton: string
  /** `text` with every run-time part as `*` (see ShellWord.glob). */
  glob: string
  /** Static text and plain variable references, in order; undefined once another expansion occurs. */
  parts: WordPart[] | undefined
  /** How many expansions the word has, and whether it is exactly one arithmetic expansion. */
  expansions: number
  arithmetic: boolean
}

interface Heredoc {
  delimiter: string
  quoted: boolean
  stripTabs: boolean
  /** The command whose standard input the body is. */
  command: CommandItem | undefined
}

export function parseScript(source: string): ParsedScript {
  const items: ScriptItem[] = []
  if (source.length > MAX_SOURCE) {
    items.push({ type: 'problem', reason: `the script is longer than ${MAX_SOURCE} characters`, depth: 0 })
    return { items }
  }
  const parser = new Parser(source, items, 0, 0)
  try {
    parser.parseProgram()
  } catch (error) {
    if (!(error instanceof ParseError)) throw error
    items.push({ type: 'problem', reason: `bash would not parse it: ${error.message}`, depth: 0 })
  }
  return { items }
}

class Parser {
  private pos = 0
  private pending: Heredoc[] = []

  constructor(
    private readonly src: string,
    private readonly items: ScriptItem[],
    private readonly depth: number,
    private readonly nesting: number,
  ) {
    if (nesting > MAX_NESTING) throw new ParseError('it nests substitutions too deeply to analyse')
  }

  parseProgram(): void {
    this.parseList(new Set(), false)
    if (this.pos < this.src.length) throw new ParseError(`unexpected ${this.describeHere()}`)
    this.flushHeredocsAtEnd()
  }

  // ---- output

  private push(item: ScriptItem): void {
    if (this.items.length >= MAX_ITEMS) throw new ParseError('it has too many commands to analyse')
    this.items.push(item)
  }

  private problem(reason: string, depth = this.depth): void {
    this.push({ type: 'problem', reason, depth })
  }

  // ---- low-level scanning

  private peek(offset = 0): string {
    return this.src[this.pos + offset] ?? ''
  }

  private startsWith(text: string): boolean {
    return this.src.startsWith(text, this.pos)
  }

  private describeHere(): string {
    if (this.pos >= this.src.length) return 'end of script'
    return JSON.stringify(this.src.slice(this.pos, this.pos + 12))
  }

  private skipBlanks(): void {
    for (;;) {
      const c = this.peek()
      if (BLANK.test(c) && c !== '') this.pos++
      else if (c === '\\' && this.peek(1) === '\n') this.pos += 2
      else if (c === '#') {
        while (this.pos < this.src.length && this.peek() !== '\n') this.pos++
      } else return
    }
  }

  /** Consumes one newline; here-document bodies start right after the line that announced them. */
  private newline(): void {
    this.pos++
    if (this.pending.length > 0) this.readHeredocBodies()
  }

  private skipNewlines(): void {
    for (;;) {
      this.skipBlanks()
      if (this.peek() === '\n') this.newline()
      else return
    }
  }

  private atWordBoundary(offset: number): boolean {
    const c = this.src[this.pos + offset]
    return c === undefined || WORD_END.test(c)
  }

  /** The reserved word at the cursor (unquoted, standing alone), without consuming it. */
  private peekReserved(): string | undefined {
    const match = /^(\{|\}|\[\[|!|[a-z]+)/.exec(this.src.slice(this.pos, this.pos + 10))
    if (!match) return undefined
    const word = match[1]!
    if (!this.atWordBoundary(word.length)) return undefined
    return word
  }

  private expectReserved(word: string): void {
    this.skipNewlines()
    if (this.peekReserved() !== word)
      throw new ParseError(`expected "${word}" but found ${this.describeHere()}`)
    this.pos += word.length
  }

  // ---- lists, pipelines, commands

  /** Parses commands until one of `stops` (a reserved word) or, with `paren`, a `)`. */
  private parseList(stops: ReadonlySet<string>, paren: boolean): void {
    for (;;) {
      this.skipNewlines()
      if (this.pos >= this.src.length) return
      const c = this.peek()
      if (c === ')' && paren) return
      if (this.startsWith(';;') || this.startsWith(';&')) return
      const reserved = this.peekReserved()
      if (reserved && (stops.has(reserved) || RESERVED_END.has(reserved))) return
      this.parseAndOr()
      this.skipBlanks()
      const next = this.peek()
      if (next === ';' && this.peek(1) !== ';' && this.peek(1) !== '&') this.pos++
      else if (next === '&' && this.peek(1) !== '&' && this.peek(1) !== '>') this.pos++
      else if (next === '\n') this.newline()
      else if (next === '' || (next === ')' && paren) || this.startsWith(';;') || this.startsWith(';&'))
        return
      else {
        const word = this.peekReserved()
        if (word && (stops.has(word) || RESERVED_END.has(word))) return
        throw new ParseError(`unexpected ${this.describeHere()}`)
      }
    }
  }

  private parseAndOr(): void {
    this.parsePipeline()
    for (;;) {
      this.skipBlanks()
      if (this.startsWith('&&') || this.startsWith('||')) {
        this.pos += 2
        this.skipNewlines()
        this.parsePipeline()
      } else return
    }
  }

  private parsePipeline(): void {
    this.skipBlanks()
    if (this.peekReserved() === 'time') {
      this.pos += 4
      this.skipBlanks()
      if (this.startsWith('-p') && this.atWordBoundary(2)) this.pos += 2
      this.skipBlanks()
    }
    while (this.peekReserved() === '!') {
      this.pos++
      this.skipBlanks()
    }
    let previous = this.parseCommand()
    for (;;) {
      this.skipBlanks()
      if (this.peek() === '|' && this.peek(1) !== '|') {
        this.pos += this.peek(1) === '&' ? 2 : 1
        this.skipNewlines()
        const current = this.parseCommand()
        const piped = previous && echoed(previous)
        if (current && piped !== undefined && !current.stdin) current.stdin = piped
        previous = current
      } else return
    }
  }

  /** Parses one command; returns it when it is a simple command (pipelines feed it standard input). */
  private parseCommand(): CommandItem | undefined {
    this.skipBlanks()
    const c = this.peek()
    if (c === '(') {
      // `((` is arithmetic only when it closes with `))`; otherwise bash reads nested subshells `( (`.
      if (this.peek(1) !== '(' || !this.parseArithmeticCommand()) {
        this.pos++
        this.parseList(new Set(), true)
        this.expectChar(')')
      }
      this.parseTrailingRedirects()
      return undefined
    }
    const reserved = this.peekReserved()
    switch (reserved) {
      case '{':
        this.pos++
        this.parseList(new Set(['}']), false)
        this.expectReserved('}')
        break
      case 'if':
        this.parseIf()
        break
      case 'while':
      case 'until': {
        this.pos += reserved.length
        const at = this.items.length
        this.parseList(new Set(['do']), false)
        const first = this.items.slice(at).find((item) => item.type === 'command')
        if (first?.type === 'command') first.loop = reserved
        this.parseDoGroup()
        break
      }
      case 'for':
        this.parseFor()
        break
      case 'case':
        this.parseCase()
        break
      case '[[':
        this.parseConditional()
        break
      case 'function':
        this.pos += reserved.length
        this.skipBlanks()
        this.readName('a function name')
        this.skipBlanks()
        if (this.startsWith('()')) this.pos += 2
        else if (this.peek() === '(') {
          this.pos++
          this.skipBlanks()
          this.expectChar(')')
        }
        this.skipNewlines()
        this.parseCommand()
        return undefined
      case 'select':
        // Like `for`: the loop variable takes each word (chosen at run time), and the body runs.
        this.parseFor(reserved)
        break
      case 'coproc': {
        // `coproc [NAME] command`: the command runs in the background, connected by pipes.
        this.pos += reserved.length
        this.skipBlanks()
        const named = /^[A-Za-z_][A-Za-z0-9_]*[ \t]+(?=[{(])/.exec(this.src.slice(this.pos, this.pos + 256))
        if (named) this.pos += named[0].length
        this.parseCommand()
        return undefined
      }
      default:
        if (reserved && RESERVED_END.has(reserved)) throw new ParseError(`unexpected "${reserved}"`)
        return this.parseSimpleCommand()
    }
    this.parseTrailingRedirects()
    return undefined
  }

  private expectChar(char: string): void {
    this.skipBlanks()
    if (this.peek() !== char) throw new ParseError(`expected "${char}" but found ${this.describeHere()}`)
    this.pos++
  }

  private readName(what: string): string {
    const match = /^[A-Za-z_][A-Za-z0-9_:.-]*/.exec(this.src.slice(this.pos, this.pos + 256))
    if (!match) throw new ParseError(`expected ${what} but found ${this.describeHere()}`)
    this.pos += match[0].length
    return match[0]
  }

  private parseIf(): void {
    this.pos += 2
    this.parseList(new Set(['then']), false)
    this.expectReserved('then')
    this.parseList(new Set(['elif', 'else', 'fi']), false)
    for (;;) {
      this.skipNewlines()
      const word = this.peekReserved()
      if (word === 'elif') {
        this.pos += 4
        this.parseList(new Set(['then']), false)
        this.expectReserved('then')
        this.parseList(new Set(['elif', 'else', 'fi']), false)
      } else if (word === 'else') {
        this.pos += 4
        this.parseList(new Set(['fi']), false)
      } else break
    }
    this.expectReserved('fi')
  }

  private parseDoGroup(): void {
    this.expectReserved('do')
    this.parseList(new Set(['done']), false)
    this.expectReserved('done')
  }

  private parseFor(keyword: 'for' | 'select' = 'for'): void {
    this.pos += keyword.length
    this.skipBlanks()
    if (keyword === 'for' && this.startsWith('((')) {
      if (!this.parseArithmeticCommand()) throw new ParseError('"for ((" is not closed by "))"')
    } else {
      // The loop variable is assigned each word in turn, exactly as `NAME=word` would assign it.
      const at = this.items.length
      const name = this.readName('a loop variable')
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new ParseError(`"${name}" is not a variable name`)
      const assigns: ShellAssignment[] = []
      this.skipBlanks()
      let sawNewline = false
      while (this.peek() === '\n') {
        this.newline()
        sawNewline = true
        this.skipBlanks()
      }
      if (this.peekReserved() === 'in') {
        this.pos += 2
        for (;;) {
          this.skipBlanks()
          const c = this.peek()
          if (c === ';' || c === '\n' || c === '') break
          if (WORD_END.test(c)) throw new ParseError(`unexpected ${this.describeHere()} in a for loop`)
          const word = shellWord(this.readWord())
          if (keyword === 'select')
            assigns.push({ name, value: { text: word.text, dynamic: true, glob: '*' } })
          else for (const value of word.braces?.map(staticWord) ?? [word]) assigns.push({ name, value })
        }
      } else if (sawNewline && this.peekReserved() !== 'do') {
        throw new ParseError('expected "in" or "do" in a for loop')
      } else assigns.push({ name, value: { text: '"$@"', dynamic: true, glob: '*' } })
      if (assigns.length > 0)
        this.insertCommand(at, { type: 'command', words: [], assigns, depth: this.depth })
    }
    this.skipBlanks()
    if (this.peek() === ';') this.pos++
    this.parseDoGroup()
  }

  private parseCase(): void {
    this.pos += 4
    this.skipBlanks()
    this.readWord()
    this.skipNewlines()
    this.expectReserved('in')
    for (;;) {
      this.skipNewlines()
      if (this.peekReserved() === 'esac') break
      if (this.peek() === '(') this.pos++
      for (;;) {
        this.skipBlanks()
        this.readWord()
        this.skipBlanks()
        if (this.peek() === '|') this.pos++
        else break
      }
      this.expectChar(')')
      this.parseList(new Set(['esac']), false)
      this.skipBlanks()
      if (this.startsWith(';;&')) this.pos += 3
      else if (this.startsWith(';;') || this.startsWith(';&')) this.pos += 2
      else {
        this.skipNewlines()
        if (this.peekReserved() !== 'esac') throw new ParseError(`unexpected ${this.describeHere()} in case`)
      }
    }
    this.pos += 4
  }

  /** `[[ … ]]`: words are data, but `-eq` and friends evaluate their operands as arithmetic. */
  private parseConditional(): void {
    this.pos += 2
    const words: WordBuild[] = []
    for (;;) {
      this.skipNewlines()
      if (this.pos >= this.src.length) throw new ParseError('"[[" is never closed')
      if (this.startsWith(']]') && this.atWordBoundary(2)) {
        this.pos += 2
        break
      }
      if (this.startsWith('&&') || this.startsWith('||')) {
        this.pos += 2
        continue
      }
      const c = this.peek()
      if (c === '(' || c === ')' || c === '!' || c === '<' || c === '>') {
        this.pos++
        continue
      }
      const previous = words[words.length - 1]
      words.push(previous?.text === '=~' && !previous.quoted ? this.readRegexWord() : this.readWord())
    }
    for (let i = 0; i < words.length; i++) {
      const word = words[i]!
      if (!word.quoted && word.text === '-v' && /\[.*[$`].*\]/.test(words[i + 1]?.text ?? '')) {
        this.problem('"[[ -v name[…] ]]" evaluates the subscript as arithmetic, which can run commands')
        this.substitutionsIn(/\[(.*)\]/.exec(words[i + 1]!.text)![1]!)
      }
      if (word.quoted || !/^-(eq|ne|lt|le|gt|ge)$/.test(word.text)) continue
      for (const operand of [words[i - 1], words[i + 1]]) {
        if (operand && !operand.dynamic && /^-?\d+$/.test(operand.text)) continue
        const name = operand && /^\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?$/.exec(operand.text)
        if (name && (operand!.dynamic || !operand!.quoted))
          this.push({ type: 'arithmetic', names: [name[1]!], assigned: [], depth: this.depth })
        else
          this.problem(
            `"[[ ... ${word.text} ... ]]" evaluates its operands as arithmetic, which can run commands`,
          )
      }
    }
  }

  /** The right side of `=~`: a regular expression, where `(`, `)` and `|` are ordinary characters. */
  private readRegexWord(): WordBuild {
    const start = this.pos
    let parens = 0
    const word = this.newWord()
    for (;;) {
      const c = this.peek()
      if (c === '' || c === '\n' || ((c === ' ' || c === '\t') && parens === 0)) break
      if (c === '(') parens++
      else if (c === ')') {
        if (parens === 0) break
        parens--
      }
      if (c === '(' || c === ')' || c === '|' || c === '<' || c === '>' || c === '&' || c === ';') {
        word.text += c
        word.skeleton += c
        this.pos++
        continue
      }
      this.readWordPart(word)
    }
    if (this.pos === start) throw new ParseError('"=~" has no regular expression')
    return word
  }

  /** `(( … ))` at the cursor; false (nothing consumed) when it does not close with `))`. */
  private parseArithmeticCommand(): boolean {
    const start = this.pos + 2
    const end = arithmeticEnd(this.src, start)
    if (end === -1) return false
    this.checkArithmetic(this.src.slice(start, end))
    this.pos = end + 2
    return true
  }

  private checkArithmetic(expression: string): void {
    if (!SIMPLE_ARITHMETIC.test(expression)) {
      this.problem(
        'arithmetic with substitutions, subscripts or quotes is not analysed (a subscript can run commands)',
      )
      this.substitutionsIn(expression)
      return
    }
    const names = [...expression.matchAll(ARITHMETIC_NAME)].map((m) => m[1]!)
    if (names.length === 0) return
    const assigned = [...expression.matchAll(ARITHMETIC_ASSIGNED)].map((m) => (m[1] ?? m[2] ?? m[3])!)
    this.push({ type: 'arithmetic', names: [...new Set(names)], assigned, depth: this.depth })
  }

  private parseTrailingRedirects(): void {
    for (;;) {
      this.skipBlanks()
      if (!this.tryRedirect(undefined)) return
    }
  }

  private parseSimpleCommand(): CommandItem | undefined {
    const command: CommandItem = { type: 'command', words: [], assigns: [], depth: this.depth }
    const { words, assigns } = command
    const at = this.items.length
    for (;;) {
      this.skipBlanks()
      const c = this.peek()
      if (c === '' || c === '\n' || c === ';' || c === ')' || c === '|') break
      if (c === '&' && this.peek(1) !== '>') break
      if (this.tryRedirect(command)) continue
      if (c === '(') {
        if (words.length === 1 && assigns.length === 0) {
          // `name () compound`: a function definition; its body is judged as if it ran.
          this.pos++
          this.expectChar(')')
          this.skipNewlines()
          this.parseCommand()
          return undefined
        }
        throw new ParseError(`unexpected "(" after ${JSON.stringify(words.map((w) => w.text).join(' '))}`)
      }
      if (words.length === 0) {
        const assignment = ASSIGNMENT.exec(this.src.slice(this.pos, this.pos + 256))
        if (assignment) {
          assigns.push({
            name: assignment[1]!,
            value: this.readAssignment(assignment[0].length, assignment[2]),
          })
          continue
        }
      }
      words.push(shellWord(this.readWord()))
    }
    if (words.length === 0 && assigns.length === 0 && this.items.length === at) {
      throw new ParseError(`expected a command but found ${this.describeHere()}`)
    }
    // Commands go before the substitutions and redirections found in their words, so the tree reads in order.
    this.insertCommand(at, command)
    return command
  }

  private insertCommand(at: number, command: CommandItem): void {
    if (this.items.length >= MAX_ITEMS) throw new ParseError('it has too many commands to analyse')
    this.items.splice(at, 0, command)
  }

  private readAssignment(length: number, subscript: string | undefined): ShellWord {
    if (subscript && !/^\[(\d+|@|\*)?\]$/.test(subscript)) {
      this.problem('an array subscript is evaluated as arithmetic, which can run commands')
    }
    this.pos += length
    if (this.peek() === '(') {
      // name=(a b c): every element is a word.
      const start = this.pos
      this.pos++
      for (;;) {
        this.skipNewlines()
        if (this.peek() === ')') {
          this.pos++
          return { text: this.src.slice(start, this.pos), dynamic: true }
        }
        if (this.pos >= this.src.length) throw new ParseError('an array assignment is never closed')
        this.readWord()
      }
    }
    if (this.atWordBoundary(0)) return { text: '', dynamic: false }
    return shellWord(this.readWord())
  }

  /** Reads a redirection at the cursor if there is one; `command` is the simple command it belongs to. */
  private tryRedirect(command: CommandItem | undefined): boolean {
    const c = this.peek()
    if ((c === '<' || c === '>') && this.peek(1) === '(') return false
    if (c !== '<' && c !== '>' && c !== '&' && !/[0-9{]/.test(c)) return false
    const match = REDIRECT.exec(this.src.slice(this.pos, this.pos + 80))
    if (!match) return false
    const op = match[2]!
    this.pos += match[0].length
    this.skipBlanks()
    if (op === '<<' || op === '<<-') {
      const delimiter = this.readWord()
      if (delimiter.dynamic && !delimiter.quoted)
        throw new ParseError('a here-document delimiter must be static')
      this.pending.push({
        delimiter: delimiter.text,
        quoted: delimiter.quoted,
        stripTabs: op === '<<-',
        command: match[1] === undefined || match[1] === '0' ? command : undefined,
      })
      return true
    }
    const substitution = (this.peek() === '<' || this.peek() === '>') && this.peek(1) === '('
    if (this.atWordBoundary(0) && !substitution) throw new ParseError(`"${op}" has no target`)
    const target = this.readWord()
    // `< <(cmd)`, `> >(cmd)`: a pipe to a command judged on its own, not a file.
    if (substitution) return true
    if (op === '<<<') {
      if (command && (match[1] === undefined || match[1] === '0')) {
        const word = shellWord(target)
        command.stdin = { ...word, text: `${word.text}\n`, ...(word.glob ? { glob: `${word.glob}\n` } : {}) }
      }
      return true
    }
    if ((op === '>&' || op === '<&') && !target.dynamic && /^(\d+-?|-)$/.test(target.text)) return true
    const word: ShellWord = { text: target.text, dynamic: target.dynamic }
    if (!word.dynamic && PASSIVE_DEVICES.test(word.text)) return true
    const socket = /^\/dev\/(tcp|udp)\/([^/]+)\/([^/]+)$/.exec(word.text)
    if (socket && !word.dynamic) {
      this.push({ type: 'net', target: `${socket[2]}:${socket[3]}`, depth: this.depth })
      return true
    }
    if (op === '<' || op === '<&')
      this.push({ type: 'redirect', act: 'read', target: word, depth: this.depth })
    else {
      if (op === '<>') this.push({ type: 'redirect', act: 'read', target: word, depth: this.depth })
      this.push({ type: 'redirect', act: 'write', target: word, depth: this.depth })
    }
    return true
  }

  private readHeredocBodies(): void {
    const docs = this.pending
    this.pending = []
    for (const doc of docs) {
      let body = ''
      for (;;) {
        if (this.pos >= this.src.length) break
        let end = this.src.indexOf('\n', this.pos)
        if (end === -1) end = this.src.length
        let line = this.src.slice(this.pos, end)
        this.pos = Math.min(end + 1, this.src.length)
        if (doc.stripTabs) line = line.replace(/^\t+/, '')
        if (line === doc.delimiter) break
        body += `${line}\n`
      }
      const dynamic = !doc.quoted && /[$`\\]/.test(body)
      if (doc.command)
        doc.command.stdin = dynamic ? { text: body, dynamic, glob: '*' } : { text: body, dynamic }
      if (!doc.quoted) this.expandHeredoc(body)
    }
  }

  private flushHeredocsAtEnd(): void {
    if (this.pending.length > 0) this.readHeredocBodies()
  }

  /** An unquoted here-document expands `$…` and backquotes: its substitutions run. */
  private expandHeredoc(body: string): void {
    const sub = new Parser(body, this.items, this.depth, this.nesting + 1)
    const word = sub.newWord()
    while (sub.pos < body.length) sub.readDoubleQuotedPart(word, true)
  }

  // ---- words

  private newWord(): WordBuild {
    return {
      text: '',
      dynamic: false,
      quoted: false,
      skeleton: '',
      glob: '',
      parts: [],
      expansions: 0,
      arithmetic: false,
    }
  }

  /** Reads one word (up to an unquoted metacharacter) after quote removal. */
  readWord(): WordBuild {
    const word = this.newWord()
    const c = this.peek()
    if ((c === '<' || c === '>') && this.peek(1) === '(') {
      this.pos += 2
      this.parseSubstitution(')')
      word.text = `${c}(...)`
      word.glob = '*'
      word.expansions++
      word.dynamic = true
    }
    while (this.pos < this.src.length) {
      const here = this.peek()
      if (WORD_END.test(here)) break
      this.readWordPart(word)
    }
    if (word.text === '' && !word.quoted && !word.dynamic)
      throw new ParseError(`expected a word but found ${this.describeHere()}`)
    const skeleton = word.skeleton
    if (/\[.*\]/.test(skeleton)) {
      // A bracket expression stands for one character.
      word.dynamic = true
      word.glob = word.glob.replace(/\[[^\]]*\]/g, '?')
    } else if (/[*?]/.test(skeleton) || /\{[^{}]*(,|\.\.)[^{}]*\}/.test(skeleton)) {
      word.dynamic = true
    }
    return word
  }

  private readWordPart(word: WordBuild): void {
    const c = this.peek()
    if (c === '\\') {
      const next = this.peek(1)
      if (next === '\n') this.pos += 2
      else if (next === '') {
        word.text += '\\'
        word.skeleton += '\\'
        word.glob += '\\'
        literal(word, '\\')
        this.pos++
      } else {
        word.text += next
        word.skeleton += '_'
        word.glob += next
        literal(word, next)
        word.quoted = true
        this.pos += 2
      }
    } else if (c === "'") {
      const end = this.src.indexOf("'", this.pos + 1)
      if (end === -1) throw new ParseError('a single quote is never closed')
      const content = this.src.slice(this.pos + 1, end)
      word.text += content
      word.skeleton += '_'.repeat(content.length)
      word.glob += content
      literal(word, content)
      word.quoted = true
      this.pos = end + 1
    } else if (c === '"') {
      this.pos++
      word.quoted = true
      for (;;) {
        if (this.pos >= this.src.length) throw new ParseError('a double quote is never closed')
        if (this.peek() === '"') {
          this.pos++
          break
        }
        this.readDoubleQuotedPart(word, false)
      }
    } else if (c === '$' && this.peek(1) === "'") {
      this.pos += 2
      word.quoted = true
      const text = this.readAnsiC()
      word.text += text
      word.skeleton += '_'.repeat(text.length)
      word.glob += text
      literal(word, text)
    } else if (c === '$' && this.peek(1) === '"') {
      this.pos++
    } else if (c === '$' || c === '`') {
      this.readExpansion(word, false)
    } else {
      word.text += c
      word.skeleton += c
      word.glob += c
      literal(word, c)
      this.pos++
    }
  }

  /** One piece of double-quoted text (or of an unquoted here-document body when `heredoc`). */
  private readDoubleQuotedPart(word: WordBuild, heredoc: boolean): void {
    const c = this.peek()
    if (c === '\\') {
      const next = this.peek(1)
      if (next === '\n') this.pos += 2
      else if (next === '$' || next === '`' || next === '\\' || (next === '"' && !heredoc)) {
        word.text += next
        word.glob += next
        literal(word, next)
        this.pos += 2
      } else {
        word.text += '\\'
        word.glob += '\\'
        literal(word, '\\')
        this.pos++
      }
    } else if (c === '$' || c === '`') {
      this.readExpansion(word, true)
    } else {
      word.text += c
      word.glob += c
      literal(word, c)
      this.pos++
    }
    word.skeleton += '_'
  }

  /** `$name`, `${…}`, `$(…)`, `$((…))` and backquotes: all dynamic; substitutions are parsed and judged. */
  private readExpansion(word: WordBuild, quoted: boolean): void {
    const start = this.pos
    let arithmetic = false
    /** A plain `$name` or `${name}`, or a command substitution: a part whose value may be known statically. */
    let part: WordPart | undefined
    if (this.peek() === '`') {
      this.pos++
      let inner = ''
      for (;;) {
        const c = this.peek()
        if (c === '') throw new ParseError('a backquote is never closed')
        this.pos++
        if (c === '`') break
        if (c === '\\' && (this.peek() === '$' || this.peek() === '`' || this.peek() === '\\')) {
          inner += this.peek()
          this.pos++
        } else inner += c
      }
      this.parseNested(inner)
      part = { substitution: inner, quoted }
    } else if (this.startsWith('$[')) {
      // The old spelling of `$(( … ))`.
      const close = this.src.indexOf(']', this.pos + 2)
      if (close === -1) throw new ParseError('"$[" is never closed')
      this.checkArithmetic(this.src.slice(this.pos + 2, close))
      this.pos = close + 1
      arithmetic = true
    } else if (this.startsWith('$((') && arithmeticEnd(this.src, this.pos + 3) !== -1) {
      // Like `((`, `$((` is arithmetic only when it closes with `))`; else it is `$( (…) )`.
      const close = arithmeticEnd(this.src, this.pos + 3)
      this.checkArithmetic(this.src.slice(this.pos + 3, close))
      this.pos = close + 2
      arithmetic = true
    } else if (this.startsWith('$(')) {
      this.pos += 2
      const inner = this.pos
      this.parseSubstitution(')')
      part = { substitution: this.src.slice(inner, this.pos - 1), quoted }
    } else if (this.startsWith('${')) {
      this.pos += 2
      const name = /^([A-Za-z_][A-Za-z0-9_]*)\}/.exec(this.src.slice(this.pos, this.pos + 256))?.[1]
      this.readParameterExpansion()
      if (name !== undefined) part = { name, quoted }
    } else {
      this.pos++
      const match = /^([A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-])/.exec(this.src.slice(this.pos, this.pos + 256))
      if (match && /^[A-Za-z_]/.test(match[1]!)) part = { name: match[1]!, quoted }
      if (!match) {
        word.text += '$'
        word.skeleton += '$'
        word.glob += '$'
        literal(word, '$')
        return
      }
      this.pos += match[0].length
    }
    const spelled = this.src.slice(start, this.pos)
    word.text += spelled.length > 40 ? `${spelled.slice(0, 37)}...` : spelled
    word.skeleton += '_'
    if (!word.glob.endsWith('*')) word.glob += '*'
    if (part !== undefined) word.parts?.push(part)
    else word.parts = undefined
    word.expansions++
    word.arithmetic = arithmetic
    word.dynamic = true
  }

  /** `$( … )` and `<( … )`: a nested list in the same source, one level deeper. */
  private parseSubstitution(close: string): void {
    const nested = new Parser(this.src, this.items, this.depth + 1, this.nesting + 1)
    nested.pos = this.pos
    nested.parseList(new Set(), true)
    nested.skipNewlines()
    if (nested.peek() !== close) throw new ParseError(`a substitution is not closed by "${close}"`)
    nested.flushHeredocsAtEnd()
    this.pos = nested.pos + 1
  }

  /** Commands substituted inside text bash evaluates again (arithmetic, subscripts), judged as if they ran. */
  private substitutionsIn(text: string): void {
    if (!/\$\(|`/.test(text)) return
    const nested = parseScript(`: ${text.replace(/\(\(|\)\)/g, ' ')}`).items
    if (nested.some((item) => item.type === 'problem')) return
    for (const item of nested) this.push({ ...item, depth: this.depth + 1 + item.depth })
  }

  private parseNested(source: string): void {
    const nested = new Parser(source, this.items, this.depth + 1, this.nesting + 1)
    nested.parseProgram()
  }

  /** `${…}`: plain forms are data; indirection, `@` transformations and arithmetic offsets are problems. */
  private readParameterExpansion(): void {
    const head = /^([#!]?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[[^\]]*\])?/.exec(
      this.src.slice(this.pos, this.pos + 256),
    )
    if (!head) throw new ParseError('a parameter expansion has no parameter name')
    const [whole, prefix, , subscript] = head
    if (prefix === '!')
      this.problem('indirect expansion (a variable naming another variable) is not analysed')
    if (subscript && !/^\[(\d+|@|\*)\]$/.test(subscript)) {
      this.problem('an array subscript is evaluated as arithmetic, which can run commands')
    }
    this.pos += whole.length
    const c = this.peek()
    if (c === '}') {
      this.pos++
      return
    }
    if (c === '@') this.problem('parameter transformations (the @ operator) are not analysed')
    if (c === ':' && !/[-=?+]/.test(this.peek(1))) {
      const offset = /^:\s*-?\d*(:\s*-?\d*)?\}/.exec(this.src.slice(this.pos, this.pos + 64))
      if (!offset) this.problem('a substring expansion with a computed offset is evaluated as arithmetic')
    }
    // The rest up to the matching `}` is a word; substitutions inside it run, so they are parsed.
    const word = this.newWord()
    let braces = 0
    for (;;) {
      const here = this.peek()
      if (here === '') throw new ParseError('a parameter expansion is never closed')
      if (here === '}' && braces === 0) {
        this.pos++
        return
      }
      if (here === '{') braces++
      if (here === '}') braces--
      if (here === '"') {
        this.pos++
        while (this.peek() !== '"') {
          if (this.pos >= this.src.length) throw new ParseError('a double quote is never closed')
          this.readDoubleQuotedPart(word, false)
        }
        this.pos++
      } else this.readWordPart(word)
    }
  }

  /** `$'…'`: bash's ANSI-C quoting, decoded the way bash decodes it. */
  private readAnsiC(): string {
    let text = ''
    for (;;) {
      const c = this.peek()
      if (c === '') throw new ParseError("a $' quote is never closed")
      this.pos++
      if (c === "'") return text
      if (c !== '\\') {
        text += c
        continue
      }
      const e = this.peek()
      this.pos++
      const simple: Record<string, string> = {
        a: '\x07',
        b: '\b',
        e: '\x1b',
        E: '\x1b',
        f: '\f',
        n: '\n',
        r: '\r',
        t: '\t',
        v: '\v',
        '\\': '\\',
        "'": "'",
        '"': '"',
        '?': '?',
      }
      if (e in simple) text += simple[e]
      else if (/[0-7]/.test(e)) {
        const digits = e + (/^[0-7]{0,2}/.exec(this.src.slice(this.pos, this.pos + 2))?.[0] ?? '')
        this.pos += digits.length - 1
        text += String.fromCharCode(Number.parseInt(digits, 8) & 0xff)
      } else if (e === 'x' || e === 'u' || e === 'U') {
        const max = e === 'x' ? 2 : e === 'u' ? 4 : 8
        const digits = new RegExp(`^[0-9a-fA-F]{1,${max}}`).exec(
          this.src.slice(this.pos, this.pos + max),
        )?.[0]
        if (!digits) text += `\\${e}`
        else {
          this.pos += digits.length
          const code = Number.parseInt(digits, 16)
          if (code > 0x10ffff) throw new ParseError(`"\\${e}${digits}" is not a character`)
          text += String.fromCodePoint(code)
        }
      } else if (e === 'c') {
        const ctl = this.peek()
        this.pos++
        text += String.fromCharCode(ctl.charCodeAt(0) & 0x1f)
      } else text += `\\${e}`
    }
  }
}

/** Splits a static command line the way bash would (used for `env -S`, examples and `ssh` commands). */
export function staticWords(source: string): string[] | undefined {
  const { items } = parseScript(source)
  if (items.length !== 1) return undefined
  const item = items[0]!
  if (item.type !== 'command' || item.assigns.length > 0 || item.words.some((w) => w.dynamic))
    return undefined
  return item.words.map((w) => w.text)
}

/** The word as the rest of tether sees it: text, whether it is dynamic, its glob, brace words, integer-ness. */
function shellWord(word: WordBuild): ShellWord {
  if (!word.dynamic) return staticWord(word.text)
  const shell: ShellWord = { text: word.text, dynamic: true, glob: word.glob }
  if (word.parts?.some((part) => typeof part !== 'string') && !/[*?[]/.test(word.skeleton))
    shell.parts = word.parts
  if (word.expansions === 1 && word.arithmetic && word.glob === '*') shell.integer = true
  if (word.expansions === 0 && !/[*?]/.test(word.skeleton)) {
    const braces = braceExpand(word.text, word.skeleton)
    if (braces) shell.braces = braces
  }
  return shell
}

export function staticWord(text: string): ShellWord {
  return /^-?[0-9]+$/.test(text) ? { text, dynamic: false, integer: true } : { text, dynamic: false }
}

/**
 * Bash's brace expansion of a static word (`a{b,c}d`, `{1..3}`, `{a..e..2}`), braces recognised only where
 * they are unquoted (`skeleton` has `_` for quoted characters); undefined when there is none or it expands
 * to too many words.
 */
function braceExpand(text: string, skeleton: string): string[] | undefined {
  const out: string[] = []
  const expand = (t: string, k: string): boolean => {
    const brace = findBrace(t, k)
    if (!brace) {
      out.push(t)
      return out.length <= MAX_BRACE_WORDS
    }
    const { open, close, alternatives } = brace
    for (const [alternative, mask] of alternatives) {
      const next = t.slice(0, open) + alternative + t.slice(close + 1)
      if (!expand(next, k.slice(0, open) + mask + k.slice(close + 1))) return false
    }
    return true
  }
  if (!skeleton.includes('{') || !expand(text, skeleton) || out.length < 2) return undefined
  return out
}

/** The first expandable `{…}` of a word: a comma list or a sequence, with its alternatives (text, skeleton). */
function findBrace(
  t: string,
  k: string,
): { open: number; close: number; alternatives: Array<[string, string]> } | undefined {
  for (let open = k.indexOf('{'); open !== -1; open = k.indexOf('{', open + 1)) {
    let depth = 0
    const cuts = [open]
    for (let i = open + 1; i < k.length; i++) {
      if (k[i] === '{') depth++
      else if (k[i] === '}' && depth > 0) depth--
      else if (k[i] === ',' && depth === 0) cuts.push(i)
      else if (k[i] === '}') {
        if (cuts.length > 1) {
          cuts.push(i)
          const alternatives = cuts
            .slice(0, -1)
            .map((cut, n): [string, string] => [t.slice(cut + 1, cuts[n + 1]), k.slice(cut + 1, cuts[n + 1])])
          return { open, close: i, alternatives }
        }
        const sequence = /^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$/.exec(k.slice(open + 1, i))
        const values = sequence && sequenceValues(sequence[1]!, sequence[2]!, sequence[3])
        if (values) {
          const alternatives = values.map((v): [string, string] => [v, '_'.repeat(v.length)])
          return { open, close: i, alternatives }
        }
        break
      }
    }
  }
  return undefined
}

function sequenceValues(from: string, to: string, step: string | undefined): string[] | undefined {
  const by = Math.abs(Number(step ?? 1)) || 1
  const numeric = /^-?\d+$/.test(from) && /^-?\d+$/.test(to)
  if (!numeric && (/\d/.test(from) || /\d/.test(to))) return undefined
  const a = numeric ? Number(from) : from.charCodeAt(0)
  const b = numeric ? Number(to) : to.charCodeAt(0)
  if (Math.abs(b - a) / by > MAX_BRACE_WORDS) return undefined
  const values: string[] = []
  for (let v = a; a <= b ? v <= b : v >= b; v += a <= b ? by : -by) {
    values.push(numeric ? String(v) : String.fromCharCode(v))
  }
  return values
}

/** Where `((`/`$((` arithmetic starting at `start` closes (the first `)` of `))`), or -1 if it does not. */
function arithmeticEnd(src: string, start: number): number {
  let depth = 0
  for (let i = start; i < src.length; i++) {
    const c = src[i]
    if (c === '(') depth++
    else if (c === ')') {
      if (depth === 0) return src[i + 1] === ')' ? i : -1
      depth--
    }
  }
  return -1
}

/**
 * What `echo …` or `printf FORMAT` writes to a pipe: certain for static words without options, escapes or
 * `%` conversions; text to judge for deny rules only otherwise.
 */
function echoed(command: CommandItem): ShellWord | undefined {
  const [program, ...args] = command.words
  if (program?.dynamic || command.assigns.length > 0) return undefined
  if (program?.text === 'printf' && args.length > 0) {
    const text = args.map((w) => w.text).join(' ')
    const plain = args.length === 1 && !args[0]!.dynamic && !/[%\\]/.test(text) && !text.startsWith('-')
    return plain ? { text, dynamic: false } : { text, dynamic: true, glob: '*' }
  }
  if (program?.text !== 'echo') return undefined
  const text = `${args.map((w) => w.text).join(' ')}\n`
  if (args.some((w) => w.dynamic) || /^-/.test(args[0]?.text ?? '') || text.includes('\\'))
    return { text, dynamic: true, glob: '*' }
  return { text, dynamic: false }
}

/** Appends static text to a word's parts. */
function literal(word: WordBuild, text: string): void {
  const parts = word.parts
  if (!parts) return
  if (typeof parts[parts.length - 1] === 'string') parts[parts.length - 1] += text
  else parts.push(text)
}
