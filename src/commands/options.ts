/**
 * Command-line option reading for the analyser, written the way programs read their own options:
 *
 * - An option table names each option once with its aliases, whether it takes a value, and what it does
 *   that an allow rule should not cover silently (runs a program, writes a file, reaches the network, …):
 *   `-o|--output=:write -k|--key= -r|--reverse --opt[=]` (`=` takes a value, `[=]` only an attached one).
 * - Long options resolve as GNU `getopt_long` resolves them: an exact name, else any unambiguous prefix
 *   (`--expr=` is `--expression=`). An ambiguous prefix stands for every option it could be (the program
 *   would refuse it; judging too much is safe).
 * - Short options cluster (`-iOcat`: `-i`, then `-O` with the value `cat`); a letter that takes a value ends
 *   the cluster.
 *
 * `readArgs` finds every option anywhere in a command line (GNU tools accept options after operands);
 * `scanOptions` finds exactly where a wrapper's payload starts (an option it does not know could take a
 * value and shift the payload, so that is a problem the caller reports).
 */

/** What an option does that changes what an allowed program does. */
export type OptionEffect =
  /** The value is a program it runs. */
  | 'run'
  /** The value is a shell command line it runs. */
  | 'sh'
  /** The value is program text for the tool itself (a sed script, an awk program, inline code). */
  | 'code'
  /** It runs program text read from the file it names (or a plugin or module it loads). */
  | 'source'
  /** It runs other programs (a flag). */
  | 'exec'
  /** The value is a file it writes. */
  | 'write'
  /** The value is a file it reads (judged as a read; not a change of behaviour by itself). */
  | 'read'
  | 'delete'
  /** It changes the configuration, directory or repository the program acts on. */
  | 'config'
  | 'net'
  /** It prints the environment. */
  | 'env'

export interface OptionDef {
  /** The first name in the table: how canonical forms and reasons spell it. */
  readonly canonical: string
  readonly names: readonly string[]
  /** `required`: the rest of the word or the next word; `attached`: only `--opt=v` / `-ov`. */
  readonly value: 'none' | 'required' | 'attached'
  readonly effect: OptionEffect | undefined
  /** `[this]`, made once: reading options is a hot path and most resolve to exactly one option. */
  readonly alone: readonly OptionDef[]
}

export interface OptionSpec {
  readonly long: ReadonlyMap<string, OptionDef>
  readonly short: ReadonlyMap<string, OptionDef>
  readonly longNames: readonly string[]
  /** Options are single-dash words (`-exec`, Go's flags): no clusters, no abbreviations. */
  readonly singleDash: boolean
  /** Long options resolve unambiguous prefixes (GNU getopt_long, git, npm). */
  readonly abbreviations: boolean
  /** Whether any option has an effect other than reading a file. */
  readonly effects: boolean
  /** Long names that are not exact options, resolved once (they recur: `--short`, `--stat`). */
  readonly abbreviated: Map<string, readonly OptionDef[]>
}

const SPECS = new Map<string, OptionSpec>()

/** Parses an option table (once per table: handlers call this on every command they analyse). */
export function optionSpec(table: string, style: 'gnu' | 'exact' | 'single-dash' = 'gnu'): OptionSpec {
  const key = `${style}\0${table}`
  const known = SPECS.get(key)
  if (known) return known
  const long = new Map<string, OptionDef>()
  const short = new Map<string, OptionDef>()
  for (const item of table.split(/\s+/).filter(Boolean)) {
    const colon = item.indexOf(':', 1)
    let body = colon === -1 ? item : item.slice(0, colon)
    const effect = colon === -1 ? undefined : (item.slice(colon + 1) as OptionEffect)
    let value: OptionDef['value'] = 'none'
    if (body.endsWith('[=]')) {
      value = 'attached'
      body = body.slice(0, -3)
    } else if (body.endsWith('=')) {
      value = 'required'
      body = body.slice(0, -1)
    }
    const names = body.split('|')
    const def = { canonical: names[0]!, names, value, effect, alone: [] as OptionDef[] }
    def.alone.push(def)
    for (const name of names) {
      if (style !== 'single-dash' && /^-[^-]$/.test(name)) short.set(name.slice(1), def)
      else long.set(name, def)
    }
  }
  const spec: OptionSpec = {
    long,
    short,
    longNames: [...long.keys()].sort(),
    singleDash: style === 'single-dash',
    abbreviations: style === 'gnu',
    effects: [...long.values(), ...short.values()].some((d) => d.effect && d.effect !== 'read'),
    abbreviated: new Map(),
  }
  SPECS.set(key, spec)
  return spec
}

/** The options a long name stands for: itself, or every option it abbreviates. */
export function resolveLong(spec: OptionSpec, name: string): readonly OptionDef[] {
  const exact = spec.long.get(name)
  if (exact) return exact.alone
  if (!spec.abbreviations || name.length < 3) return NONE
  const known = spec.abbreviated.get(name)
  if (known) return known
  const found: OptionDef[] = []
  for (const candidate of spec.longNames) {
    if (!candidate.startsWith(name)) continue
    const def = spec.long.get(candidate)!
    if (!found.includes(def)) found.push(def)
  }
  if (spec.abbreviated.size >= 1024) spec.abbreviated.clear()
  spec.abbreviated.set(name, found)
  return found
}

const NONE: readonly OptionDef[] = []

/** One option as found in a command line. */
export interface FoundOption {
  /** The options it stands for: one, several for an ambiguous abbreviation, none when unknown. */
  readonly defs: readonly OptionDef[]
  /** As written, without its value: `--expr`, `-O`. */
  readonly given: string
  readonly value: string | undefined
  /** Index of the word it was found in. */
  readonly index: number
  /** Index of the word its value was found in (the same word when attached). */
  readonly valueIndex: number
}

export interface ReadArgs {
  options: FoundOption[]
  /** Indexes of the operands. */
  operands: number[]
  /** Where reading stopped (`args.length`, or the first operand with `stopAtOperand`). */
  end: number
}

/**
 * Every option and operand of `args` from `start` on. With `stopAtOperand`, reading ends at the first
 * operand (POSIX order, and tools whose first operand is a subcommand or a command to run).
 */
export function readArgs(
  args: readonly string[],
  start: number,
  spec: OptionSpec,
  stopAtOperand = false,
): ReadArgs {
  const options: FoundOption[] = []
  const operands: number[] = []
  let i = start
  for (; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--') {
      if (stopAtOperand) return { options, operands, end: i + 1 }
      for (let k = i + 1; k < args.length; k++) operands.push(k)
      return { options, operands, end: args.length }
    }
    if (arg.length < 2 || arg[0] !== '-') {
      if (stopAtOperand) return { options, operands, end: i }
      operands.push(i)
      continue
    }
    if (spec.singleDash || arg.startsWith('--')) {
      const at = i
      const eq = arg.indexOf('=')
      let name = eq === -1 ? arg : arg.slice(0, eq)
      if (spec.singleDash && name.startsWith('--')) name = name.slice(1)
      const defs = spec.singleDash
        ? listed(spec.long.get(name) ?? spec.long.get(`-${name}`))
        : resolveLong(spec, name)
      let value: string | undefined
      if (eq !== -1) value = arg.slice(eq + 1)
      else if (defs.some((d) => d.value === 'required') && i + 1 < args.length) value = args[++i]
      options.push({ defs, given: name, value, index: at, valueIndex: i })
      continue
    }
    const at = i
    for (let j = 1; j < arg.length; j++) {
      const letter = arg[j]!
      const def = spec.short.get(letter)
      if (def && def.value !== 'none') {
        let value: string | undefined = arg.slice(j + 1)
        if (value === '') value = def.value === 'required' && i + 1 < args.length ? args[++i] : undefined
        options.push({ defs: def.alone, given: dashed(letter), value, index: at, valueIndex: i })
        break
      }
      options.push({ defs: listed(def), given: dashed(letter), value: undefined, index: at, valueIndex: at })
    }
  }
  return { options, operands, end: i }
}

/** `-x` for a letter, made once per ASCII letter (a hot path). */
const DASHED: string[] = []
for (let code = 0; code < 128; code++) DASHED[code] = `-${String.fromCharCode(code)}`

function dashed(letter: string): string {
  const code = letter.charCodeAt(0)
  return code < 128 ? DASHED[code]! : `-${letter}`
}

function listed(def: OptionDef | undefined): readonly OptionDef[] {
  return def ? def.alone : NONE
}

export interface ParsedOption {
  /** The canonical name (`--kill-after` also for `-k` or `--kill`). */
  name: string
  value?: string
}

export type OptionScan = { ok: true; index: number; options: ParsedOption[] } | { ok: false; problem: string }

/**
 * Reads a wrapper's options from `args[start]` on and returns the index of the first operand. Stops at `--`
 * (skipped) or the first operand. A dynamic word, an unknown or ambiguous option or a missing value is a
 * problem: the caller cannot know where the operands start.
 */
export function scanOptions(
  args: readonly string[],
  start: number,
  spec: OptionSpec,
  dynamic?: readonly boolean[],
  /** Accept unknown `--name=value` options (they cannot shift the operands). */
  looseLong = false,
  /** Read at most this many option words. */
  limit = Number.POSITIVE_INFINITY,
): OptionScan {
  const options: ParsedOption[] = []
  let i = start
  for (let read = 0; i < args.length && read < limit; read++) {
    const arg = args[i]!
    if (dynamic?.[i])
      return {
        ok: false,
        problem: `a word computed at run time (${arg}) stands where an option or the command may be`,
      }
    if (arg === '--') return { ok: true, index: i + 1, options }
    if (!arg.startsWith('-') || arg === '-') return { ok: true, index: i, options }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=')
      const defs = resolveLong(spec, eq === -1 ? arg : arg.slice(0, eq))
      if (defs.length > 1) return { ok: false, problem: `option ${arg} is ambiguous` }
      const def = defs[0]
      if (eq !== -1) {
        if (!def && !looseLong) return unknown(arg)
        options.push({ name: def?.canonical ?? arg.slice(0, eq), value: arg.slice(eq + 1) })
      } else if (def?.value === 'required') {
        if (i + 1 >= args.length || dynamic?.[i + 1])
          return { ok: false, problem: `option ${def.canonical} has no readable value` }
        options.push({ name: def.canonical, value: args[i + 1]! })
        i++
      } else if (def) {
        options.push({ name: def.canonical })
      } else {
        return unknown(arg)
      }
      i++
      continue
    }
    let j = 1
    while (j < arg.length) {
      const def = spec.short.get(arg[j]!)
      if (!def) return unknown(arg)
      if (def.value === 'required') {
        const rest = arg.slice(j + 1)
        if (rest) options.push({ name: def.canonical, value: rest })
        else {
          if (i + 1 >= args.length || dynamic?.[i + 1])
            return { ok: false, problem: `option ${def.canonical} has no readable value` }
          options.push({ name: def.canonical, value: args[i + 1]! })
          i++
        }
        break
      }
      if (def.value === 'attached') {
        const rest = arg.slice(j + 1)
        options.push(rest ? { name: def.canonical, value: rest } : { name: def.canonical })
        break
      }
      options.push({ name: def.canonical })
      j++
    }
    i++
  }
  return { ok: true, index: i, options }
}

function unknown(arg: string): OptionScan {
  return {
    ok: false,
    problem: `option ${arg} is not one tether knows, so the command it runs cannot be located`,
  }
}
