/**
 * How tether shows commands to people: each word quoted the way bash would read it back, with control,
 * invisible and non-ASCII characters written as escapes (`$'r\u200bm'`), so an approver sees exactly what
 * will run and a lookalike cannot pass for the real thing.
 */
/** What the tree shows of an exec verdict (the policy's ExecVerdict has this shape). */
interface ShownVerdict {
  effect: keyof typeof EFFECT_LABEL
  reason: string
  checks: ReadonlyArray<{
    effect: keyof typeof EFFECT_LABEL
    kind: string
    depth: number
    act: string
    target: string
    reason: string
    code?: string | undefined
  }>
}

const PLAIN = /^[A-Za-z0-9_@%+=:,./~^-]+$/
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/** The ASCII characters of PLAIN, as a table: checking every word of every command is a hot path. */
const PLAIN_CHARS = new Uint8Array(128)
for (let code = 0; code < 128; code++) PLAIN_CHARS[code] = PLAIN.test(String.fromCharCode(code)) ? 1 : 0

/** Whether a word reads the same with or without quoting (and is not empty). */
export function isPlainWord(word: string): boolean {
  if (word.length === 0) return false
  for (let i = 0; i < word.length; i++) {
    const code = word.charCodeAt(i)
    if (code >= 128 || PLAIN_CHARS[code] === 0) return false
  }
  return true
}

/** One argv word as a human should read it. */
export function quoteWord(word: string): string {
  if (word === '') return "''"
  if (PLAIN.test(word)) return word
  if (PRINTABLE_ASCII.test(word)) return `'${word.replace(/'/g, `'\\''`)}'`
  let escaped = ''
  for (const char of word) {
    const code = char.codePointAt(0)!
    if (char === '\\') escaped += '\\\\'
    else if (char === "'") escaped += "\\'"
    else if (char === '\n') escaped += '\\n'
    else if (char === '\t') escaped += '\\t'
    else if (char === '\r') escaped += '\\r'
    else if (code >= 0x20 && code <= 0x7e) escaped += char
    else if (code <= 0xff) escaped += `\\x${code.toString(16).padStart(2, '0')}`
    else if (code <= 0xffff) escaped += `\\u${code.toString(16).padStart(4, '0')}`
    else escaped += `\\U${code.toString(16).padStart(8, '0')}`
  }
  return `$'${escaped}'`
}

/** A command line for humans; `dynamic` words (from a script) are shown as written, escapes applied. */
export function renderCommand(argv: readonly string[], dynamic?: readonly boolean[]): string {
  return argv.map((word, i) => (dynamic?.[i] ? escapeText(word) : quoteWord(word))).join(' ')
}

/** Free text (a path, a script excerpt) with the same escapes but no quoting. */
export function escapeText(text: string): string {
  if (PRINTABLE_ASCII.test(text)) return text
  const quoted = quoteWord(text)
  return quoted.startsWith("$'") ? quoted.slice(2, -1) : text
}

const EFFECT_LABEL = { allow: 'allow', ask: 'ask  ', deny: 'deny ' } as const

/**
 * The judged tree of an exec verdict, one node per line, indented by depth:
 *
 *     deny: "git push" is denied by rule "git push*" in layer "ops".
 *       allow wrapper  sh -c 'npm test && git push'  -- sh runs a shell script; what it runs is judged.
 *         allow command  npm test  -- "npm test" is allowed by rule "npm test*" in layer "dev".
 *         deny  command  git push  -- "git push" is denied by rule "git push*" in layer "ops".
 */
export function renderExecVerdict(verdict: ShownVerdict): string {
  const lines = [`${verdict.effect}: ${verdict.reason}`]
  for (const check of verdict.checks) {
    const where = check.kind === 'file' ? `${check.act} ${check.target}` : check.target
    const indent = '  '.repeat(check.depth + 1)
    lines.push(`${indent}${EFFECT_LABEL[check.effect]} ${check.kind.padEnd(7)}  ${where}  -- ${check.reason}`)
    // Code tether does not reduce is shown as it is, so whoever approves it reads what will run.
    if (check.code !== undefined) lines.push(...codeLines(check.code, `${indent}    | `))
  }
  return lines.join('\n')
}

const CODE_LINES = 40
const CODE_LINE_WIDTH = 160

function codeLines(code: string, prefix: string): string[] {
  const all = code.replace(/\n$/, '').split('\n')
  const shown = all.slice(0, CODE_LINES).map((line) => {
    const escaped = escapeText(line)
    return `${prefix}${escaped.length > CODE_LINE_WIDTH ? `${escaped.slice(0, CODE_LINE_WIDTH - 3)}...` : escaped}`
  })
  if (all.length > CODE_LINES) shown.push(`${prefix}... ${all.length - CODE_LINES} more lines`)
  return shown
}

/** An argv as a person would type it in a message: arguments that need quoting are quoted as JSON strings. */
export function formatArgv(argv: readonly string[]): string {
  return argv.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : JSON.stringify(arg))).join(' ')
}
