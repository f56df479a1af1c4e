/**
 * What a sed script does besides editing text: GNU sed's `e` command and `s///e` flag run commands, `w`
 * and `s///w` write files, `r`/`R` read them. The scanner walks the script's commands; anything it cannot
 * follow is reported so the caller fails closed.
 */

export interface SedEffects {
  /** Runs commands it cannot name (`e` alone or `s///e` run the pattern space). */
  runs: boolean
  /** Commands `e COMMAND` runs. */
  commands: string[]
  writes: string[]
  reads: string[]
  unreadable?: string
}

export function sedEffects(script: string): SedEffects {
  const effects: SedEffects = { runs: false, commands: [], writes: [], reads: [] }
  let i = 0
  const restOfLine = (): string => {
    const end = script.indexOf('\n', i)
    const text = script.slice(i, end === -1 ? script.length : end).trim()
    i = end === -1 ? script.length : end + 1
    return text
  }
  const skipDelimited = (delimiter: string): boolean => {
    while (i < script.length) {
      const c = script[i]!
      if (c === '\\') i += 2
      else if (c === delimiter) {
        i++
        return true
      } else if (c === '\n' && delimiter !== '\n') return false
      else i++
    }
    return false
  }
  while (i < script.length) {
    const c = script[i]!
    if (/[\s;{}!]/.test(c)) {
      i++
      continue
    }
    // Addresses: numbers, `$`, `first~step`, `/regex/`, `\cregexc`, ranges with `,`.
    if (/[0-9$,~+]/.test(c)) {
      i++
      continue
    }
    if (c === '/' || c === '\\') {
      const delimiter = c === '/' ? '/' : script[i + 1]
      i += c === '/' ? 1 : 2
      if (!delimiter || !skipDelimited(delimiter))
        return { ...effects, unreadable: 'an address is never closed' }
      while (/[IM]/.test(script[i] ?? '')) i++
      continue
    }
    i++
    switch (c) {
      case '#':
      case ':':
      case 'b':
      case 't':
      case 'T':
        restOfLineUntilSemicolon()
        break
      case 'a':
      case 'i':
      case 'c':
        restOfLine()
        break
      case 'e': {
        const command = restOfLine()
        if (command) effects.commands.push(command)
        else effects.runs = true
        break
      }
      case 'w':
      case 'W':
        effects.writes.push(restOfLine())
        break
      case 'r':
      case 'R':
        effects.reads.push(restOfLine())
        break
      case 's':
      case 'y': {
        const delimiter = script[i]
        if (!delimiter || delimiter === '\n' || delimiter === '\\') {
          return { ...effects, unreadable: `"${c}" has no delimiter` }
        }
        i++
        if (!skipDelimited(delimiter) || !skipDelimited(delimiter)) {
          return { ...effects, unreadable: `an "${c}" command is never closed` }
        }
        if (c === 's') {
          while (i < script.length && /[gpiImMe0-9w]/.test(script[i]!)) {
            const flag = script[i]!
            i++
            if (flag === 'e') effects.runs = true
            if (flag === 'w') {
              effects.writes.push(restOfLine())
              break
            }
          }
        }
        break
      }
      case '=':
      case 'd':
      case 'D':
      case 'g':
      case 'G':
      case 'h':
      case 'H':
      case 'l':
      case 'n':
      case 'N':
      case 'p':
      case 'P':
      case 'x':
      case 'z':
      case 'F':
        break
      case 'q':
      case 'Q':
      case 'L':
        while (/[0-9 ]/.test(script[i] ?? '')) i++
        break
      case 'v':
        restOfLineUntilSemicolon()
        break
      default:
        return { ...effects, unreadable: `"${c}" is not a sed command tether knows` }
    }
  }
  return effects

  function restOfLineUntilSemicolon(): void {
    while (i < script.length && script[i] !== ';' && script[i] !== '\n') i++
  }
}
