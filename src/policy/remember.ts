/**
 * The rule an approver's "approve and remember" adds for the rest of a run. Never broader than what was
 * approved: by default the **exact** command (or path, or host) — `git push origin feature` remembers
 * `git push origin feature`, which does not allow `git push --force origin main`. A wider rule (the
 * program and subcommand with any arguments, `go vet*`) is offered only as an explicit, displayed choice,
 * and only for subcommands whose arguments cannot choose what runs, what is deleted or where it is sent:
 * never pushes, publishes, cleans, installs, `run`/`exec`, launch options. Programs that run other
 * programs' code (shells, interpreters, wrappers, `sudo`, bare `git`) are approved one call at a time.
 * An MCP tool's call is remembered with its exact arguments, and never wider: its arguments choose what the
 * tool does.
 */
import { basename, runsOtherCommands, runsProgramText } from '../commands/index.js'
import { overLimit } from '../present/index.js'
import { POLICY_LIMITS } from './limits.js'
import { normalisePath } from './policy.js'
import type { Act } from './types.js'

/** What remembering an approved action may add: the exact rule, and a wider one only where it is safe. */
export type RememberedRule =
  | { ok: true; act: Act; exact: string; wider?: string | undefined }
  | { ok: false; reason: string }

/**
 * Build tools whose first operand is a subcommand that acts on the workspace, so `tool sub*` names one kind
 * of local action. (Container, cluster, cloud and package-publishing tools are remembered exactly.)
 */
const SUBCOMMAND_TOOLS =
  /^(npm|pnpm|yarn|cargo|go|make|gmake|mvn|mvnw|gradle|gradlew|dotnet|mix|swift|ctest|biome|turbo|nx|vitest|flutter|dart|zig)$/
/**
 * Subcommands whose remaining arguments only say what to look at, never what to run, delete, publish or
 * fetch: the only ones a wider rule is offered for. Everything else is remembered exactly.
 */
const WIDER_SUBCOMMANDS = new Set([
  'build',
  'check',
  'clippy',
  'compile',
  'diff',
  'fmt',
  'format',
  'lint',
  'log',
  'status',
  'test',
  'typecheck',
  'version',
  'vet',
])
/** git's subcommands that only read. */
const GIT_WIDER = new Set(['diff', 'log', 'show', 'status'])
const GLOB = /[*?]/
/** Characters of a remembered MCP rule (the tool and its arguments): it travels with every later verdict. */
const MCP_REMEMBER_LIMIT = 2_000

export function rememberRule(act: Act, target: string | readonly string[]): RememberedRule {
  const rule = exactRule(act, target)
  // A remembered rule is a pattern like any other, and travels in the run's state (continue-as-new) too.
  if (rule.ok && rule.exact.length > POLICY_LIMITS.patternChars) {
    return {
      ok: false,
      reason: `the rule would be ${overLimit(rule.exact.length, 'characters', POLICY_LIMITS.patternChars, 'pattern')}`,
    }
  }
  return rule
}

function exactRule(act: Act, target: string | readonly string[]): RememberedRule {
  if (act !== 'exec') {
    if (typeof target !== 'string' || target === '')
      return { ok: false, reason: `a ${act} target must be a non-empty string` }
    if (GLOB.test(target))
      return {
        ok: false,
        reason: `"${target}" contains * or ?, which would remember more than this one target`,
      }
    // A call of an MCP tool is remembered with its very arguments: they choose what the tool does.
    if (act === 'mcp' && target.length > MCP_REMEMBER_LIMIT)
      return {
        ok: false,
        reason: `the call's arguments run to ${target.length.toLocaleString('en-US')} characters, more than a remembered rule holds (${MCP_REMEMBER_LIMIT.toLocaleString('en-US')}); approve each call, or give the policy a rule for the tool`,
      }
    const exact = act === 'net' ? target.toLowerCase() : act === 'mcp' ? target : normalisePath(target)
    return { ok: true, act, exact }
  }
  const argv = typeof target === 'string' ? [target] : [...target]
  const program = argv[0]
  if (!program || /[^\x21-\x7e]/.test(program))
    return { ok: false, reason: 'the program name is empty or unreadable' }
  const name = basename(program).toLowerCase()
  if (runsProgramText(name)) {
    return {
      ok: false,
      reason: `${name} runs whatever program text it is given, so it is approved one call at a time`,
    }
  }
  if (runsOtherCommands(name)) {
    return {
      ok: false,
      reason: `${name} runs other commands (judged on their own), so it is approved one call at a time`,
    }
  }
  // A rule is the words joined by spaces: a word with a space in it could not be told from two words.
  if (argv.some((word) => GLOB.test(word) || word === '' || /[\s\x00-\x1f\x7f]/.test(word))) {
    return {
      ok: false,
      reason:
        'the command has empty words, spaces or control characters inside a word, * or ?, so no rule can name exactly it',
    }
  }
  const rest = argv.slice(1)
  const exact = argv.join(' ')
  if (name === 'git') {
    if (
      rest.some(
        (word) => word.startsWith('-c') || word.startsWith('--exec-path') || word.startsWith('--config-env'),
      )
    ) {
      return { ok: false, reason: 'git with -c, --exec-path or --config-env can launch other programs' }
    }
    const sub = rest.find((word, i) => !word.startsWith('-') && rest[i - 1] !== '-C')
    if (!sub) return { ok: false, reason: 'git is remembered per command, never as a whole' }
    // Options before the subcommand (-C, --git-dir, …) change what it acts on: no wider rule then.
    const plain = rest[0] === sub
    return { ok: true, act, exact, ...(plain && GIT_WIDER.has(sub) ? { wider: `${program} ${sub}*` } : {}) }
  }
  const sub = rest[0]
  if (sub !== undefined && SUBCOMMAND_TOOLS.test(name) && WIDER_SUBCOMMANDS.has(sub)) {
    return { ok: true, act, exact, wider: `${program} ${sub}*` }
  }
  return { ok: true, act, exact }
}
