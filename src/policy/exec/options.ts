/**
 * Command-line option reading for the analyser. Two needs: finding exactly where a wrapper's payload starts
 * (precise: an option we do not know could take a value and shift the payload, so it is an error), and
 * finding launch options anywhere in a command line (generous: GNU tools accept any unambiguous prefix of a
 * long option, so `--compress-prog=x` is `--compress-program=x`).
 */

/** Option table, written as `-u= --user= -n --null --opt[=]`: `=` takes a value, `[=]` only an attached one. */
export interface OptionSpec {
  readonly withValue: ReadonlySet<string>
  readonly attachedOnly: ReadonlySet<string>
  readonly flags: ReadonlySet<string>
}

const SPECS = new Map<string, OptionSpec>()

/** Parses an option table (once per table: handlers call this on every command they analyse). */
export function optionSpec(table: string): OptionSpec {
  const known = SPECS.get(table)
  if (known) return known
  const withValue = new Set<string>()
  const attachedOnly = new Set<string>()
  const flags = new Set<string>()
  for (const item of table.split(/\s+/).filter(Boolean)) {
    if (item.endsWith('[=]')) attachedOnly.add(item.slice(0, -3))
    else if (item.endsWith('=')) withValue.add(item.slice(0, -1))
    else flags.add(item)
  }
  const spec = { withValue, attachedOnly, flags }
  SPECS.set(table, spec)
  return spec
}

export interface ParsedOption {
  name: string
  value?: string
}

export type OptionScan = { ok: true; index: number; options: ParsedOption[] } | { ok: false; problem: string }

/**
 * Reads options from `args[start]` on and returns the index of the first operand. Stops at `--` (skipped),
 * at the first operand, or (with `stopAt`) at an option that ends option parsing. A dynamic word, an
 * unknown option or a missing value is a problem: the caller cannot know where the operands start.
 */
export function scanOptions(
  args: readonly string[],
  start: number,
  spec: OptionSpec,
  dynamic?: readonly boolean[],
  /** Accept unknown `--name=value` options (they cannot shift the operands). */
  looseLong = false,
): OptionScan {
  const options: ParsedOption[] = []
  let i = start
  while (i < args.length) {
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
      const name = eq === -1 ? arg : arg.slice(0, eq)
      if (eq !== -1) {
        if (!spec.withValue.has(name) && !spec.attachedOnly.has(name) && !looseLong) return unknown(arg)
        options.push({ name, value: arg.slice(eq + 1) })
      } else if (spec.withValue.has(name)) {
        if (i + 1 >= args.length || dynamic?.[i + 1])
          return { ok: false, problem: `option ${name} has no readable value` }
        options.push({ name, value: args[i + 1]! })
        i++
      } else if (spec.flags.has(name) || spec.attachedOnly.has(name)) {
        options.push({ name })
      } else {
        return unknown(arg)
      }
      i++
      continue
    }
    // A cluster of short options (`-kn5`): flags, then at most one option that takes the rest as its value.
    let j = 1
    while (j < arg.length) {
      const name = `-${arg[j]}`
      if (spec.withValue.has(name)) {
        const rest = arg.slice(j + 1)
        if (rest) options.push({ name, value: rest })
        else {
          if (i + 1 >= args.length || dynamic?.[i + 1])
            return { ok: false, problem: `option ${name} has no readable value` }
          options.push({ name, value: args[i + 1]! })
          i++
        }
        break
      }
      if (spec.attachedOnly.has(name)) {
        const rest = arg.slice(j + 1)
        options.push(rest ? { name, value: rest } : { name })
        break
      }
      if (!spec.flags.has(name)) return unknown(arg)
      options.push({ name })
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

/**
 * Values of a launch option anywhere in `args`: `--name=value`, `--name value`, and GNU abbreviations of
 * `--name` (at least `minimum` characters after `--`). Ambiguous abbreviations count too: judging too much is safe.
 */
export function longOptionValues(args: readonly string[], name: string, minimum = 2): string[] {
  const values: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--') break
    if (!arg.startsWith('--')) continue
    const eq = arg.indexOf('=')
    const given = eq === -1 ? arg : arg.slice(0, eq)
    if (given.length < minimum + 2 || !name.startsWith(given)) continue
    if (eq !== -1) values.push(arg.slice(eq + 1))
    else if (i + 1 < args.length) values.push(args[i + 1]!)
  }
  return values
}

/** Values of a short option (`-I PROG`, `-IPROG`, or inside a cluster `-cI PROG`) among `valueTaking` ones. */
export function shortOptionValues(args: readonly string[], letter: string, valueTaking: string): string[] {
  const values: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--') break
    if (!arg.startsWith('-') || arg.startsWith('--') || arg.length < 2) continue
    for (let j = 1; j < arg.length; j++) {
      const c = arg[j]!
      if (!valueTaking.includes(c)) continue
      const rest = arg.slice(j + 1)
      const value = rest || args[i + 1]
      if (c === letter && value !== undefined) values.push(value)
      break
    }
  }
  return values
}
