/**
 * The commands mvdan/sh (the `mvdan-sh` package) finds in a script, in the shape tether's parser reports
 * them: each command's words after quote removal, with any word that is only known at run time written
 * as `<dynamic>`. Used as an oracle: both parsers must agree on every script bash accepts.
 */
import sh from 'mvdan-sh'

type Node = Record<string, unknown>
const { syntax } = sh
const parser = syntax.NewParser()

export const DYNAMIC = '<dynamic>'

/** The commands of `source`, or `undefined` when mvdan/sh rejects it. */
export function referenceCommands(source: string): string[][] | undefined {
  let file: Node
  try {
    file = parser.Parse(source, 'script') as Node
  } catch {
    return undefined
  }
  const commands: string[][] = []
  syntax.Walk(file, (node) => {
    if (node && syntax.NodeType(node) === 'CallExpr') {
      const args = node.Args as Node[]
      if (args.length > 0) commands.push(args.map(word))
    }
    return true
  })
  return commands
}

function word(w: Node): string {
  let text = ''
  for (const part of w.Parts as Node[]) {
    const type = syntax.NodeType(part)
    if (type === 'Lit') {
      const value = part.Value as string
      // Unquoted globs and brace expansions are expanded at run time.
      if (/[*?]|\[.*\]|\{[^{}]*(,|\.\.)[^{}]*\}/.test(value.replace(/\\./g, '_'))) return DYNAMIC
      text += value.replace(/\\(.)/gs, (_, c: string) => (c === '\n' ? '' : c))
    } else if (type === 'SglQuoted') {
      if (part.Dollar) return DYNAMIC
      text += part.Value as string
    } else if (type === 'DblQuoted') {
      for (const inner of part.Parts as Node[]) {
        if (syntax.NodeType(inner) !== 'Lit') return DYNAMIC
        text += (inner.Value as string).replace(/\\([$`"\\\n])/g, (_, c: string) => (c === '\n' ? '' : c))
      }
    } else return DYNAMIC
  }
  return text
}
