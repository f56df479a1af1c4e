/**
 * The folder list is the architecture (docs/architecture.md): a pure core, adapters over it, and the
 * surfaces people and Temporal use. Imports point from surfaces to adapters to the core, never back, and
 * never in a circle — between modules, or between files. Read from the sources themselves.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url))

const LAYERS = {
  core: ['commands', 'policy', 'judge', 'run', 'identity', 'present', 'tools'],
  adapters: ['exec', 'workspace', 'audit', 'model', 'stack', 'snapshots', 'mcp'],
  surfaces: ['workflows', 'activities', 'embed', 'cli', 'inbox'],
} as const
const RANK: Record<string, number> = {}
for (const [rank, modules] of Object.values(LAYERS).entries())
  for (const module of modules) RANK[module] = rank

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : []
  })
}

/** Every relative import of every source file, resolved to the source file it names. */
function graph(): Map<string, string[]> {
  const edges = new Map<string, string[]>()
  for (const file of files(SRC)) {
    const text = readFileSync(file, 'utf8')
    const targets: string[] = []
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      targets.push(resolve(dirname(file), (match[1] as string).replace(/\.js$/, '.ts')))
    }
    edges.set(file, targets)
  }
  return edges
}

const moduleOf = (file: string) => relative(SRC, file).split('/')[0] as string

/**
 * Files reached past their module's door, each for a reason: the Node-only half of identity (key files),
 * the address parser the egress proxy loads without the whole policy, the activity options the workflow
 * bundle takes without the exec runner, the audit's readers without its verification code (the CLI's
 * lists start in a fraction of the time), the worker's MCP server configuration without the stack
 * bringing zod and YAML into every CLI command, a run's snapshot links for `tether show` without the
 * workspace code, tether's version for the bundled CLI's `--version`, answered without the bundle, and the
 * environment names no command is given, which the contract checks in the workflow bundle without the
 * command analysis (eighteen modules each cached run would evaluate again).
 */
const BESIDE_THE_DOOR = [
  'identity/keyring.ts',
  'policy/addresses.ts',
  'exec/activity-options.ts',
  'audit/reader.ts',
  'stack/mcp-servers.ts',
  'snapshots/catalog.ts',
  'stack/version.ts',
  'commands/environment.ts',
]

describe('the architecture', () => {
  const edges = graph()

  it('has only folders in src/, each in exactly one layer', () => {
    const entries = readdirSync(SRC)
    expect(entries.filter((name) => !statSync(join(SRC, name)).isDirectory())).toEqual([])
    expect(entries.filter((name) => RANK[name] === undefined)).toEqual([])
  })

  it('imports downward or across a layer, never upward', () => {
    const upward: string[] = []
    for (const [file, targets] of edges) {
      for (const target of targets) {
        const [from, to] = [moduleOf(file), moduleOf(target)]
        if ((RANK[to] as number) > (RANK[from] as number))
          upward.push(`${relative(SRC, file)} → ${relative(SRC, target)}`)
      }
    }
    expect(upward).toEqual([])
  })

  it('enters another module only through its door (index.ts)', () => {
    const past: string[] = []
    for (const [file, targets] of edges) {
      for (const target of targets) {
        const name = relative(SRC, target)
        if (moduleOf(file) === moduleOf(target) || name.endsWith('/index.ts')) continue
        if (!BESIDE_THE_DOOR.includes(name)) past.push(`${relative(SRC, file)} → ${name}`)
      }
    }
    expect(past).toEqual([])
  })

  it('has no import cycle between modules', () => {
    const modules = new Map<string, Set<string>>()
    for (const [file, targets] of edges) {
      const from = moduleOf(file)
      for (const target of targets) {
        const to = moduleOf(target)
        if (to !== from) modules.set(from, (modules.get(from) ?? new Set()).add(to))
      }
    }
    expect(cycles(modules)).toEqual([])
  })

  it('has no import cycle between files', () => {
    const byFile = new Map(
      [...edges].map(([file, targets]) => [
        relative(SRC, file),
        new Set(targets.map((t) => relative(SRC, t))),
      ]),
    )
    expect(cycles(byFile)).toEqual([])
  })
})

/** Each cycle found by a depth-first walk, as `a → b → a`. */
function cycles(graph: Map<string, Set<string>>): string[] {
  const found: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (node: string) => {
    state.set(node, 'open')
    path.push(node)
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...path.slice(path.indexOf(next)), next].join(' → '))
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(node, 'done')
  }
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node)
  return found
}
