/**
 * What changed between two texts, line by line, for a person deciding whether to accept the change (an MCP
 * tool whose definition is not the one reviewed): unchanged lines as `  `, removed `- `, added `+ `, with
 * long unchanged stretches folded. Pure and deterministic.
 */

/** Lines each side may have for a line-by-line comparison; past it, both sides are shown whole. */
const LINES_COMPARED = 2_000
/** Unchanged lines kept around each change. */
const CONTEXT = 2

export function lineDiff(before: string, after: string): string {
  const a = before.split('\n')
  const b = after.split('\n')
  if (a.length > LINES_COMPARED || b.length > LINES_COMPARED) {
    return [...a.map((line) => `- ${line}`), ...b.map((line) => `+ ${line}`)].join('\n')
  }
  // Longest common subsequence, from the end, so the walk below reads forwards.
  const keep: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0))
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      keep[i]![j] = a[i] === b[j] ? keep[i + 1]![j + 1]! + 1 : Math.max(keep[i + 1]![j]!, keep[i]![j + 1]!)
    }
  }
  const lines: Array<{ mark: ' ' | '-' | '+'; text: string }> = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      lines.push({ mark: ' ', text: a[i]! })
      i++
      j++
    } else if (i < a.length && (j === b.length || keep[i + 1]![j]! >= keep[i]![j + 1]!)) {
      // Removed lines before added ones, as diffs show them.
      lines.push({ mark: '-', text: a[i]! })
      i++
    } else {
      lines.push({ mark: '+', text: b[j]! })
      j++
    }
  }
  return fold(lines)
}

/** Unchanged lines more than CONTEXT away from a change become one `  … N unchanged lines` line. */
function fold(lines: ReadonlyArray<{ mark: ' ' | '-' | '+'; text: string }>): string {
  const near = lines.map((_, index) =>
    lines.slice(Math.max(0, index - CONTEXT), index + CONTEXT + 1).some((line) => line.mark !== ' '),
  )
  const out: string[] = []
  let folded = 0
  lines.forEach((line, index) => {
    if (line.mark === ' ' && !near[index]) {
      folded++
      return
    }
    if (folded > 0) out.push(`  … ${folded} unchanged line${folded === 1 ? '' : 's'}`)
    folded = 0
    out.push(`${line.mark} ${line.text}`)
  })
  if (folded > 0) out.push(`  … ${folded} unchanged line${folded === 1 ? '' : 's'}`)
  return out.join('\n')
}

/** A tool definition as a person compares two of them: each part on lines of its own. */
export function definitionText(definition: {
  name: string
  description: string
  inputSchema?: unknown
  annotations?: unknown
}): string {
  const indent = (text: string) =>
    text
      .split('\n')
      .map((line) => `  ${line}`)
      .join('\n')
  return [
    `name: ${definition.name}`,
    'description:',
    indent(definition.description),
    'input schema:',
    indent(JSON.stringify(sorted(definition.inputSchema ?? null), null, 2)),
    `annotations: ${JSON.stringify(sorted(definition.annotations ?? null))}`,
  ].join('\n')
}

/** A JSON value with its object keys in order, so two definitions compare line by line. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted)
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, item]) => [key, sorted(item)]),
  )
}
