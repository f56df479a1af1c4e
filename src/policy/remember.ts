/**
 * The rule an approver's "approve and remember" adds for the rest of a run. Narrow on purpose: a command is
 * remembered as its program and subcommand (`npm test*`), never as a whole tool, and never for programs
 * that run arbitrary other code (shells, interpreters, wrappers, `sudo`, bare `git`).
 */
import { basename, isShell } from './exec/analyse.js'
import { normalisePath } from './policy.js'
import type { Act } from './types.js'

export type RememberedRule = { ok: true; act: Act; pattern: string } | { ok: false; reason: string }

const INTERPRETER =
  /^((python|pypy)[0-9.]*|node|nodejs|deno|bun|bunx|ruby|irb|jruby|perl|php|lua|luajit|rscript|r|julia|osascript|tclsh|wish|expect|pwsh|powershell|fish|csh|tcsh|nu|xonsh|elvish|awk|gawk|mawk|nawk|vi|vim|nvim|emacs|ed)$/
const WRAPPER =
  /^(env|cross-env|sudo|doas|pkexec|su|runuser|chroot|xargs|nice|timeout|nohup|setsid|stdbuf|time|command|builtin|exec|eval|source|\.|ionice|taskset|watch|flock|busybox|toybox|ssh|npx|pnpx|uvx|find|trap|alias)$/
/** Tools whose first operand is a subcommand, so `tool sub*` names one kind of action. */
const SUBCOMMAND_TOOLS =
  /^(npm|pnpm|yarn|cargo|go|make|gmake|just|task|docker|podman|kubectl|helm|pip|pip3|uv|poetry|pdm|hatch|mvn|mvnw|gradle|gradlew|dotnet|bundle|rake|mix|swift|composer|terraform|gh|cmake|ctest|biome|turbo|nx|lerna|vitest|rustup|flutter|dart|zig)$/
const GLOB = /[*?]/

export function rememberRule(act: Act, target: string | readonly string[]): RememberedRule {
  if (act !== 'exec') {
    if (typeof target !== 'string' || target === '')
      return { ok: false, reason: `a ${act} target must be a non-empty string` }
    if (GLOB.test(target))
      return {
        ok: false,
        reason: `"${target}" contains * or ?, which would remember more than this one target`,
      }
    return { ok: true, act, pattern: act === 'net' ? target.toLowerCase() : normalisePath(target) }
  }
  const argv = typeof target === 'string' ? [target] : [...target]
  const program = argv[0]
  if (!program || /[^\x21-\x7e]/.test(program))
    return { ok: false, reason: 'the program name is empty or unreadable' }
  if (argv.some((word) => GLOB.test(word) || word === '' || /[\x00-\x1f\x7f]/.test(word))) {
    return {
      ok: false,
      reason: 'the command has empty words, control characters, * or ?, so no narrow rule can name it',
    }
  }
  const name = basename(program).toLowerCase()
  if (isShell(name) || INTERPRETER.test(name)) {
    return {
      ok: false,
      reason: `${name} runs whatever program text it is given, so it is approved one call at a time`,
    }
  }
  if (WRAPPER.test(name)) {
    return {
      ok: false,
      reason: `${name} runs other commands (judged on their own), so it is approved one call at a time`,
    }
  }
  const rest = argv.slice(1)
  if (name === 'git') {
    if (
      rest.some(
        (word) => word.startsWith('-c') || word.startsWith('--exec-path') || word.startsWith('--config-env'),
      )
    ) {
      return { ok: false, reason: 'git with -c, --exec-path or --config-env can launch other programs' }
    }
    const sub = rest.find((word, i) => !word.startsWith('-') && rest[i - 1] !== '-C')
    if (!sub)
      return { ok: false, reason: 'git is remembered per subcommand (e.g. "git status*"), never as a whole' }
    return { ok: true, act, pattern: `${program} ${sub}*` }
  }
  const sub = rest.find((word) => !word.startsWith('-'))
  // A tool's subcommand widens to `program sub*`; any other command is remembered exactly as approved.
  if (sub !== undefined && /^[a-z][a-z0-9:_-]*$/.test(sub) && SUBCOMMAND_TOOLS.test(name)) {
    return { ok: true, act, pattern: `${program} ${sub}*` }
  }
  return { ok: true, act, pattern: argv.join(' ') }
}
