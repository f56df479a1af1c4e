/**
 * Which programs run other programs: the ones whose approval cannot be remembered as a rule (`remember`
 * would stand for whatever they are given next). Read from the analysis itself — every program it unwraps
 * (wrappers, runners, launchers) or reads program text for (shells, interpreters) — so adding a handler
 * adds it here; plus the programs that run what they read although no handler shows it without a payload.
 */
import { analyseArgv, isShell } from './analyse.js'
import { handledPrograms, handlerName } from './engine.js'

/** Programs that run program text they are given (scripts, inline code, editor commands). */
const TEXT_RUNNERS =
  /^((python|pypy)[0-9.]*|node|nodejs|deno|bun|bunx|ruby|irb|jruby|perl|php|lua|luajit|rscript|r|julia|osascript|tclsh|wish|expect|pwsh|powershell|fish|csh|tcsh|nu|xonsh|elvish|awk|gawk|mawk|nawk|vi|vim|nvim|gvim|view|ex|emacs|ed|less|more|most)$/
/** Programs that run other commands, also when the call names none (a login, a hook, a later line). */
const COMMAND_RUNNERS =
  /^(env|sudo|doas|pkexec|su|runuser|chroot|xargs|eval|source|\.|trap|alias|ssh|find|watch|entr|time|command|builtin|exec)$/

let unwrapped: { text: Set<string>; commands: Set<string> } | undefined

/** What the analysis shows each handled program doing with a payload: reading it as code, or running it. */
function fromAnalysis(): { text: Set<string>; commands: Set<string> } {
  if (unwrapped) return unwrapped
  const text = new Set<string>()
  const commands = new Set<string>()
  for (const name of handledPrograms()) {
    const nodes = analyseArgv([name, 'true'])
    if (nodes.some((node) => node.interpreter || node.kind === 'opaque')) text.add(name)
    else if (nodes[0]?.kind === 'wrapper') commands.add(name)
  }
  unwrapped = { text, commands }
  return unwrapped
}

/** Whether `program` runs program text it is given (a shell, an interpreter, an editor). */
export function runsProgramText(program: string): boolean {
  const name = handlerName(program)
  return isShell(name) || TEXT_RUNNERS.test(name) || fromAnalysis().text.has(name)
}

/** Whether `program` runs other commands (a wrapper, a runner, a launcher). */
export function runsOtherCommands(program: string): boolean {
  const name = handlerName(program)
  return COMMAND_RUNNERS.test(name) || fromAnalysis().commands.has(name)
}
