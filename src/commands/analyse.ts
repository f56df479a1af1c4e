/**
 * Exec analysis: turns one argv into the tree of everything it would run, read and write. Pure and
 * independent of any policy, so the result of analysing a script can be cached and judged by many policies.
 *
 * - Transparent wrappers (`env`, `nice`, `timeout`, `command`, …) become `wrapper` nodes and their payload
 *   is analysed in turn; context-changing ones (`sudo`, `xargs`, `ssh`, `find -exec`, login shells, `env`
 *   with assignments, …) also carry a `cap`: whatever they run is asked about at least (wrappers.ts).
 * - Options that launch programs (`git -c core.pager=…`, `tar --to-command=…`, `rg --pre …`, `sed e`, …)
 *   become nodes for the launched command or script (launch-options.ts).
 * - `sh -c SCRIPT` is parsed (see ../shell/parse.ts) and each command in it analysed (shell.ts).
 * - Anything that cannot be reduced to static commands becomes an `opaque` node, which is never allowed.
 */
import { type AnalysedNode, Analysis, words } from './engine.js'
import './wrappers.js'
import './launch-options.js'
import './git.js'
import './scripts.js'

export { type AnalysedNode, basename } from './engine.js'
export { isShell } from './scripts.js'

/** Recent argvs' trees, by program: a short list each, compared word by word (no key to build). */
const CACHE = new Map<string, Array<{ argv: readonly string[]; nodes: readonly AnalysedNode[] }>>()
const PER_PROGRAM = 16
const PROGRAMS = 256

/**
 * The tree of an argv (its nodes in tree order). Analysis is pure, so the trees of recent argvs are kept:
 * an agent runs the same commands again and again. The nodes are shared; nobody changes them.
 */
export function analyseArgv(argv: readonly string[]): readonly AnalysedNode[] {
  const program = argv[0]!
  const recent = CACHE.get(program)
  if (recent) {
    for (const entry of recent) if (sameWords(entry.argv, argv)) return entry.nodes
  }
  // A copy: the caller may reuse its array, and the tree outlives this call.
  const copy = [...argv]
  const analysis = new Analysis()
  analysis.run(words(copy), 0)
  if (recent) {
    if (recent.length >= PER_PROGRAM) recent.shift()
    recent.push({ argv: copy, nodes: analysis.nodes })
  } else {
    if (CACHE.size >= PROGRAMS) CACHE.delete(CACHE.keys().next().value!)
    CACHE.set(program, [{ argv: copy, nodes: analysis.nodes }])
  }
  return analysis.nodes
}

function sameWords(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 1; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** A command line judged as bash would run it (`Policy.check('exec', line)`). */
export function analyseScript(source: string): readonly AnalysedNode[] {
  const analysis = new Analysis()
  analysis.script(source, 0, undefined)
  return analysis.nodes
}
