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
import { type AnalysedNode, Analysis, words } from './analysis.js'
import './wrappers.js'
import './launch-options.js'
import './shell.js'

export { type AnalysedNode, basename } from './analysis.js'
export { isShell } from './shell.js'

export function analyseArgv(argv: readonly string[]): AnalysedNode[] {
  const analysis = new Analysis()
  analysis.run(words(argv), 0)
  return analysis.nodes
}

/** A command line judged as bash would run it (`Policy.check('exec', line)`). */
export function analyseScript(source: string): AnalysedNode[] {
  const analysis = new Analysis()
  analysis.script(source, 0, undefined)
  return analysis.nodes
}
