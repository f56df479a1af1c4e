/**
 * What a script does to shell variables. Assignments change how later commands run (`PATH`, `GIT_*`,
 * pagers), some variables are run as code by bash itself (`PS4`, `BASH_ENV`) and some name a command a
 * program runs (`GIT_SSH_COMMAND`, `PAGER`). Variables are assigned by `NAME=…`, by declarations
 * (`export NAME=…`), and also by `for NAME in …`, `read NAME`, `printf -v NAME`, `mapfile NAME`,
 * `getopts … NAME`, `wait -p NAME` and `declare -n` references: all of them are judged alike.
 * Arithmetic (`$((i + 1))`) is safe only on variables that only ever hold integers in the script.
 */
import {
  type CommandItem,
  parseScript,
  type ScriptItem,
  type ShellAssignment,
  type ShellWord,
} from './shell/parse.js'

/** Variables that change how later commands run when set or exported. */
export const SENSITIVE_VARIABLE =
  /^(PATH|IFS|ENV|BASH_ENV|BASH_XTRACEFD|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|CDPATH|GLOBIGNORE|HOME|EDITOR|VISUAL|BROWSER|LESSOPEN|LESSCLOSE|SSH_ASKPASS|NODE_OPTIONS|NODE_PATH|LD_\w*|DYLD_\w*|GIT_\w*|PYTHON\w*|PERL5?\w*|RUBY\w*|\w*PAGER|npm_config_\w*|NPM_CONFIG_\w*)$/
/** Variables bash evaluates as code: prompts (with `set -x`, PS4 runs substitutions), startup files. */
export const CODE_VARIABLE = /^(PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|BASH_FUNC_.*)$/
/** Variables whose value is a command some program runs. */
export const COMMAND_VARIABLE =
  /^(GIT_SSH_COMMAND|GIT_SSH|GIT_EDITOR|GIT_PAGER|GIT_SEQUENCE_EDITOR|GIT_EXTERNAL_DIFF|GIT_ASKPASS|GIT_PROXY_COMMAND|SSH_ASKPASS|SUDO_ASKPASS|EDITOR|VISUAL|PAGER|MANPAGER|SYSTEMD_PAGER|LESSOPEN|LESSCLOSE|BROWSER|RSYNC_RSH|CVS_RSH|TAR_OPTIONS|FCEDIT)$/

const DECLARATIONS = new Set(['export', 'declare', 'typeset', 'local', 'readonly'])
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
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
const UNKNOWN: ShellWord = { text: '(read at run time)', dynamic: true, glob: '*' }

export function isDeclaration(list: readonly { text: string }[]): boolean {
  return list.length > 0 && DECLARATIONS.has(list[0]!.text)
}

/**
 * The variables a script command assigns, and whether the assignment outlasts the command (a standalone
 * `X=1`, a declaration, `read X`, a `for` loop) rather than being made for it alone (`X=1 cmd`).
 */
export function assignedVariables(item: CommandItem): { assigned: ShellAssignment[]; persistent: boolean } {
  const { words } = item
  if (words.length === 0) return { assigned: item.assigns, persistent: true }
  const assigned = [...item.assigns]
  const builtin = builtinAssignments(words)
  if (builtin) return { assigned: [...assigned, ...builtin], persistent: true }
  return { assigned, persistent: false }
}

/** Assignments made by builtins' arguments (`export X=1`, `read X`, `printf -v X`, `declare -n r=X`). */
function builtinAssignments(words: readonly ShellWord[]): ShellAssignment[] | undefined {
  const name = words[0]!.dynamic ? '' : words[0]!.text
  const args = words.slice(1)
  const names = (list: readonly ShellWord[]): ShellAssignment[] =>
    list.filter((w) => !w.text.startsWith('-')).map((w) => ({ name: w.text, value: UNKNOWN }))
  switch (name) {
    case 'export':
    case 'declare':
    case 'typeset':
    case 'local':
    case 'readonly': {
      const reference = args.some((w) => /^-[a-zA-Z]*n/.test(w.text))
      const out: ShellAssignment[] = []
      for (const word of args) {
        if (word.text.startsWith('-')) continue
        const eq = word.text.indexOf('=')
        const variable = eq > 0 ? word.text.slice(0, eq) : word.text
        const value: ShellWord = eq > 0 ? valueWord(word, eq) : { text: '', dynamic: false }
        if (eq > 0 || reference) out.push({ name: variable, value: reference ? UNKNOWN : value })
        // A name reference writes its target whenever the reference is assigned.
        if (reference && eq > 0) out.push({ name: word.text.slice(eq + 1), value: UNKNOWN })
      }
      return out
    }
    case 'read':
      return [...optionValues(args, 'a', 'adinNptu'), ...names(operands(args, 'adinNptu'))]
    case 'mapfile':
    case 'readarray':
      return names(operands(args, 'dnOsuCc')).slice(-1)
    case 'printf':
      return optionValues(args, 'v', 'v')
    case 'getopts':
      return names(args.filter((w) => !w.text.startsWith('-')).slice(1, 2))
    case 'wait':
      return optionValues(args, 'p', 'p')
    default:
      return undefined
  }
}

function valueWord(word: ShellWord, eq: number): ShellWord {
  const text = word.text.slice(eq + 1)
  if (!word.dynamic)
    return /^-?[0-9]+$/.test(text) ? { text, dynamic: false, integer: true } : { text, dynamic: false }
  return { text, dynamic: true, glob: '*' }
}

/** The words after a builtin's short options (`valued` letters take a value). */
function operands(args: readonly ShellWord[], valued: string): ShellWord[] {
  let i = 0
  for (; i < args.length; i++) {
    const text = args[i]!.text
    if (text === '--') return args.slice(i + 1)
    if (!/^-[A-Za-z]/.test(text)) break
    const letters = text.slice(1)
    const at = [...letters].findIndex((l) => valued.includes(l))
    if (at !== -1 && at === letters.length - 1) i++
  }
  return args.slice(i)
}

/** The variable names given to option `letter` (`-v NAME`, `-vNAME`), assigned values unknown here. */
function optionValues(args: readonly ShellWord[], letter: string, valued: string): ShellAssignment[] {
  const out: ShellAssignment[] = []
  for (let i = 0; i < args.length; i++) {
    const text = args[i]!.text
    if (text === '--' || !/^-[A-Za-z]/.test(text)) break
    const letters = text.slice(1)
    const at = [...letters].findIndex((l) => valued.includes(l))
    if (at === -1) continue
    const value = letters.slice(at + 1) || args[++i]?.text
    if (letters[at] === letter && value !== undefined) out.push({ name: value, value: UNKNOWN })
  }
  return out
}

/** Why a builtin's arguments cannot be analysed (integer declarations, computed subscripts), if they cannot. */
export function builtinProblem(list: readonly ShellWord[]): string | undefined {
  if (isDeclaration(list) && list.slice(1).some((w) => /^-[a-zA-Z]*i/.test(w.text))) {
    return 'an integer declaration evaluates arithmetic, which can run commands'
  }
  if (NAME_BUILTINS.has(list[0]!.text) && list.slice(1).some((w) => COMPUTED_SUBSCRIPT.test(w.text))) {
    return `${list[0]!.text} is given a variable name with a computed subscript, which bash evaluates as arithmetic`
  }
  const assigned = builtinAssignments(list)
  const bad = assigned?.find((a) => !NAME.test(a.name))
  if (bad) return `${list[0]!.text} assigns a variable whose name (${bad.name}) is not a plain name`
  return undefined
}

/**
 * The variables of a script that only ever hold integers: assigned at least once, and only from integer
 * literals, arithmetic expansions, or arithmetic itself (`i++`). Arithmetic on any other variable could
 * evaluate an array subscript that runs a command.
 */
export function integerVariables(items: readonly ScriptItem[]): ReadonlySet<string> {
  const integer = new Set<string>()
  const other = new Set<string>()
  for (const item of items) {
    if (item.type === 'arithmetic') for (const name of item.assigned) integer.add(name)
    if (item.type !== 'command') continue
    for (const { name, value } of assignedVariables(item).assigned) {
      if (value.integer) integer.add(name)
      else other.add(name)
    }
  }
  for (const name of other) integer.delete(name)
  return integer
}

/**
 * The variables a script sets exactly once, to static text: what `$name` becomes, as far as deny rules
 * need to know (`a=r; b=m; $a$b -rf /` runs `rm -rf /`). Not for allowing: the assignment may come later,
 * or in a branch that does not run.
 */
export function staticVariables(items: readonly ScriptItem[]): ReadonlyMap<string, string> {
  const values = new Map<string, string | undefined>()
  const set = (name: string, value: string | undefined) =>
    values.set(name, values.has(name) ? undefined : value)
  for (const item of items) {
    if (item.type === 'arithmetic') for (const name of item.assigned) set(name, undefined)
    if (item.type !== 'command') continue
    for (const { name, value } of assignedVariables(item).assigned) set(name, staticValue(value))
  }
  const out = new Map<string, string>()
  for (const [name, value] of values) if (value !== undefined) out.set(name, value)
  return out
}

/** An assigned value when it is known statically: text, and what `$(echo …)` prints (not split: `x=$(…)`). */
function staticValue(value: ShellWord): string | undefined {
  if (!value.dynamic) return value.text
  let text = ''
  for (const part of value.parts ?? [undefined]) {
    if (typeof part === 'string') text += part
    else {
      const printedText = part && 'substitution' in part ? printed(part.substitution) : undefined
      if (printedText === undefined) return undefined
      text += printedText
    }
  }
  return text
}

/** The words of a command with statically set variables substituted (unquoted values split on blanks). */
export function substituted(
  words: readonly ShellWord[],
  values: ReadonlyMap<string, string>,
): string[] | undefined {
  const out: string[] = []
  for (const word of words) {
    if (!word.dynamic) {
      out.push(word.text)
      continue
    }
    if (word.braces) {
      out.push(...word.braces)
      continue
    }
    if (!word.parts) return undefined
    // Fields: unquoted values split into several words, text around them joins the first and last.
    const fields: string[] = ['']
    for (const part of word.parts) {
      if (typeof part === 'string') {
        fields[fields.length - 1] += part
        continue
      }
      const value = 'name' in part ? values.get(part.name) : printed(part.substitution)
      if (value === undefined) return undefined
      if (part.quoted) fields[fields.length - 1] += value
      else {
        const pieces = value.split(/[ \t\n]+/)
        fields[fields.length - 1] += pieces[0]!
        fields.push(...pieces.slice(1))
      }
    }
    out.push(...fields.filter((field) => field !== ''))
  }
  return out
}

/**
 * What a command substitution prints, when that is certain: `$(echo rm)`, `$(printf rm)` (static words, no
 * options, escapes or conversions; the trailing newline is dropped, as bash drops it).
 */
function printed(source: string): string | undefined {
  const { items } = parseScript(source)
  const [item] = items
  if (items.length !== 1 || item?.type !== 'command' || item.assigns.length > 0) return undefined
  const [program, ...args] = item.words
  if (!program || item.words.some((w) => w.dynamic)) return undefined
  const text = args.map((w) => w.text).join(' ')
  if (/\\/.test(text) || args[0]?.text.startsWith('-')) return undefined
  if (program.text === 'echo') return text
  if (program.text === 'printf' && args.length === 1 && !text.includes('%')) return text.replace(/\n+$/, '')
  return undefined
}

/** Every variable a script assigns anywhere (by any of the ways above, or in arithmetic). */
export function scriptVariables(items: readonly ScriptItem[]): ReadonlySet<string> {
  const names = new Set<string>()
  for (const item of items) {
    if (item.type === 'arithmetic') for (const name of item.assigned) names.add(name)
    if (item.type === 'command') for (const { name } of assignedVariables(item).assigned) names.add(name)
  }
  return names
}

/**
 * Whether a word can expand to something from the environment: a reference to a variable the script does
 * not set (`$HOME`, `${TOKEN}`), or any expansion tether does not break into parts. Integers are not.
 */
export function readsEnvironment(word: ShellWord, assigned: ReadonlySet<string>): boolean {
  if (!word.dynamic || word.integer || word.braces) return false
  if (word.parts)
    return word.parts.some((part) => typeof part !== 'string' && 'name' in part && !assigned.has(part.name))
  // Substitutions are commands judged on their own; parameters are what can come from the environment.
  for (const match of word.text.matchAll(/\$\{?[#!]?([A-Za-z_][A-Za-z0-9_]*)/g))
    if (!assigned.has(match[1]!)) return true
  return false
}
