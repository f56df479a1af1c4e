/**
 * Deny and ask rules see the options of well-known programs normalised. A rule such as `rm -rf*` or
 * `git push --force*` names a program (and subcommand), some options and then the rest; it also meets
 * every other spelling of those options: split or clustered (`rm -r -f`, `rm -fr`), long or short
 * (`rm --recursive --force`, `git push -f`), abbreviated the way the program accepts (`--forc`), and
 * anywhere on the line (`git push origin main --force`). The rest of the pattern is matched against the
 * command's operands. Only rules whose program has an option table (exec/programs.ts) get this reading;
 * every rule is still matched as the plain glob it is.
 */
import {
  basename,
  globMatcher,
  globsIntersect,
  type OptionSpec,
  type ParsedCommand,
  parseCommand,
  programOptions,
  resolveLong,
} from '../commands/index.js'

/** One option a rule requires: exactly this option, or any option spelled starting with `prefix`. */
type Required = { canonical: string } | { prefix: string }

interface OptionRule {
  index: number
  slot: number
  sub: string | undefined
  required: Required[]
  /** The rest of the pattern (case-folded), matched against the operands joined by spaces. */
  rest: string
  matchesRest: (operands: string) => boolean
}

const GLOB = /[*?]/

export class OptionRules {
  private readonly byProgram = new Map<string, OptionRule[]>()

  /** Reads `pattern` as program, options and rest; patterns that do not read so are left to the glob. */
  add(pattern: string, slot: number, index: number): void {
    const parsed = readPattern(pattern)
    if (!parsed) return
    const { program, ...rule } = parsed
    const list = this.byProgram.get(program) ?? []
    list.push({ ...rule, matchesRest: globMatcher(rule.rest), index, slot })
    this.byProgram.set(program, list)
  }

  /** Whether any rule names this program (by case-folded basename): only then is a command normalised. */
  covers(program: string): boolean {
    return this.byProgram.has(program)
  }

  /** Lowers `found[slot]` (deny 0, ask 1) to the first rule the command meets. */
  scan(
    program: string,
    argv: readonly string[],
    dynamic: readonly boolean[] | undefined,
    globs: readonly (string | undefined)[] | undefined,
    found: number[],
    known?: ParsedCommand,
  ): void {
    const rules = this.byProgram.get(program)
    const table = programOptions(program)
    if (!rules || !table) return
    // Only rules that could still lower a slot matter (a plain glob may already have decided).
    if (!rules.some((rule) => rule.index < found[rule.slot]!)) return
    const parsed = known ?? parseCommand(argv, table)
    const sub = parsed.sub?.toLowerCase()
    let given: Set<string> | undefined
    let anyOption: boolean | undefined
    let text: string | undefined
    for (const rule of rules) {
      if (rule.index >= found[rule.slot]!) continue
      if (rule.sub !== undefined && rule.sub !== sub) continue
      // A run-time word could be any option, so it may supply whatever a rule requires.
      anyOption ??= dynamic?.some((d, i) => d && i > 0 && i !== parsed.subIndex) ?? false
      given ??= optionNames(parsed)
      const names = given
      if (!anyOption && !rule.required.every((r) => meets(r, names))) continue
      // Empty words are dropped: the generous reading deny rules get everywhere.
      text ??= parsed.operands
        .filter((i) => argv[i] !== '')
        .map((i) => (dynamic?.[i] ? (globs?.[i] ?? '*') : argv[i]!.toLowerCase()))
        .join(' ')
      const matches = dynamic ? globsIntersect(rule.rest, text) : rule.matchesRest(text)
      if (matches) found[rule.slot] = rule.index
    }
  }
}

function meets(required: Required, given: ReadonlySet<string>): boolean {
  if ('canonical' in required) return given.has(required.canonical)
  for (const name of given) if (name.startsWith(required.prefix)) return true
  return false
}

/** Every name the command's options go by (canonical names and aliases, and unknown options as given). */
function optionNames(parsed: ParsedCommand): Set<string> {
  const names = new Set<string>()
  for (const option of parsed.options) {
    if (option.defs.length === 0) names.add(option.given)
    for (const def of option.defs) for (const name of def.names) names.add(name)
  }
  return names
}

function readPattern(
  pattern: string,
): { program: string; sub: string | undefined; required: Required[]; rest: string } | undefined {
  const words = pattern.trim().split(/\s+/)
  const first = words[0]!
  if (GLOB.test(first)) return undefined
  const program = basename(first).toLowerCase()
  const table = programOptions(program)
  if (!table) return undefined
  let i = 1
  let sub: string | undefined
  let spec: OptionSpec = table.spec
  if (table.subcommands) {
    sub = words[1]?.toLowerCase()
    if (sub === undefined || GLOB.test(sub) || sub.startsWith('-')) return undefined
    spec = table.subcommands.specs.get(sub) ?? table.subcommands.common
    i = 2
  }
  const required: Required[] = []
  let open = false
  for (; i < words.length; i++) {
    let word = words[i]!
    if (!word.startsWith('-') || word === '--' || word === '-') break
    if (word.endsWith('*') && i === words.length - 1) {
      open = true
      word = word.slice(0, -1)
    }
    if (GLOB.test(word) || word.includes('=') || word === '--' || word.length < 2) return undefined
    const options = readOption(word, spec, open)
    if (!options) return undefined
    required.push(...options)
  }
  const rest = open ? '*' : words.slice(i).join(' ').toLowerCase()
  if (required.length === 0 && (rest === '*' || rest === '')) return undefined
  return { program, sub, required, rest }
}

/** The options one pattern word requires; `open` when a `*` follows it directly (`--force*`, `-rf*`). */
function readOption(word: string, spec: OptionSpec, open: boolean): Required[] | undefined {
  if (word.startsWith('--') || spec.singleDash) {
    if (open) return [{ prefix: word }]
    const defs = spec.singleDash
      ? [spec.long.get(word)].filter((d) => d !== undefined)
      : resolveLong(spec, word)
    return defs.length === 1 ? [{ canonical: defs[0]!.canonical }] : undefined
  }
  const out: Required[] = []
  for (let j = 1; j < word.length; j++) {
    const def = spec.short.get(word[j]!)
    // A letter that takes a value would make the rest of the word its value: not a plain set of flags.
    if (!def || (def.value !== 'none' && j < word.length - 1)) return undefined
    out.push({ canonical: def.canonical })
  }
  return out
}
