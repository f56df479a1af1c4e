/**
 * Splits shell text (an npm script, the payload of `sh -c`) into the simple commands it runs, as argv
 * arrays. This is for recognising never-exiting commands only — a heuristic that errs towards seeing a
 * command — never for deciding what is allowed (the policy parses shell with a real parser).
 */

/** Words that open or continue a compound command; the command proper follows them. */
const LEADING_KEYWORDS = new Set([
  'do',
  'then',
  'else',
  'if',
  'elif',
  'while',
  'until',
  '!',
  '{',
  '}',
  'time',
])
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/
const REDIRECT = /^\d*(>>?|<<?|>&|<&|&>>?)/

export interface ShellCommand {
  argv: string[]
  /** The keyword the command followed (`while`, `until`, …), when it is a loop or branch condition. */
  keyword?: string
}

function tokenize(text: string): string[][] {
  const commands: string[][] = []
  let words: string[] = []
  let word = ''
  let inWord = false
  const endWord = () => {
    if (inWord) words.push(word)
    word = ''
    inWord = false
  }
  const endCommand = () => {
    endWord()
    if (words.length > 0) commands.push(words)
    words = []
  }
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1)
      const end = close === -1 ? text.length : close
      word += text.slice(i + 1, end).replace(c === '"' ? /\\(["\\$`])/g : /$^/, '$1')
      inWord = true
      i = end
    } else if (c === '\\') {
      if (text[i + 1] !== '\n') word += text[i + 1] ?? ''
      inWord = true
      i += 1
    } else if (c === '#' && !inWord) {
      const newline = text.indexOf('\n', i)
      i = newline === -1 ? text.length : newline - 1
    } else if (c === '&' && (word.endsWith('>') || word.endsWith('<') || text[i + 1] === '>')) {
      // `2>&1`, `&>file`: a redirection, not a separator.
      word += c
      inWord = true
    } else if (';&|()\n'.includes(c)) {
      endCommand()
    } else if (c === ' ' || c === '\t' || c === '\r') {
      endWord()
    } else {
      word += c
      inWord = true
    }
  }
  endCommand()
  return commands
}

function strip(words: string[]): ShellCommand | undefined {
  let keyword: string | undefined
  let at = 0
  while (at < words.length && (LEADING_KEYWORDS.has(words[at]!) || ASSIGNMENT.test(words[at]!))) {
    if (LEADING_KEYWORDS.has(words[at]!)) keyword = words[at]
    at += 1
  }
  const argv: string[] = []
  for (let i = at; i < words.length; i++) {
    const redirect = REDIRECT.exec(words[i]!)
    if (redirect) {
      // `> file` takes the next word as its target; `>file` and `2>&1` carry it.
      if (redirect[0] === words[i]) i += 1
      continue
    }
    argv.push(words[i]!)
  }
  if (argv.length === 0 || argv[0] === 'done' || argv[0] === 'fi' || argv[0] === 'esac') return undefined
  return keyword === undefined ? { argv } : { argv, keyword }
}

/** The simple commands of a piece of shell text, in order. */
export function shellCommands(text: string): ShellCommand[] {
  return tokenize(text).flatMap((words) => strip(words) ?? [])
}
