/**
 * May this tool call run? The one place that answers it: the run's policy judges the call, with the
 * workspace as it is on disk (paths resolved through their links, the files a recursive reader would
 * meet, the package scripts a command leads to), plus tether's own built-in rules, which no policy can
 * switch off. Pure: the workspace comes in as a view (`WorkspaceView`) the workspace adapter provides.
 */
import { type LongRunning, neverExitingCommand, type WorkspaceFiles } from '../commands/index.js'
import { Policy, rememberRule, type Verdict } from '../policy/index.js'
import { renderExecVerdict } from '../present/index.js'
import type { Act, ActionVerdict, McpToolState } from '../run/index.js'
import { type McpCall, mcpArguments, type ValidatedCall } from '../tools/index.js'

/** tether's own rules: a verdict they decide names one of these, in layer `builtin`. */
export const BUILTIN_RULES = {
  /** A path outside the workspace (`..`, an absolute path, a link that leads out). */
  workspaceBoundary: 'workspace boundary',
  /** A command that never exits by design (a watcher, a dev server): it would hold the run. */
  neverExiting: 'never-exiting command',
  /** A command whose judged tree no person could review, nor history hold. */
  analysisTooLarge: 'analysis too large',
  /** A file tool writing inside a repository's `.git`. */
  gitInternals: 'git internals',
  /** A call of an MCP tool the run does not offer: no such tool, or one withheld since it changed. */
  mcpNotOffered: 'mcp tool not offered',
} as const

export const BUILTIN_LAYER = 'builtin'

/** A workspace path, checked and resolved on disk: as written (normalised) and where its links lead. */
export type Resolution = { ok: true; normalised: string; resolved: string } | { ok: false; reason: string }

/** What the judge reads of the run's workspace. */
export interface WorkspaceView {
  /** The workspace root (what `git -C` may name and still be the workspace's own repository). */
  root: string
  resolve(path: string): Resolution
  /** Whether the folder at `path` holds a file `denied` says is denied (a recursive reader would read it). */
  holdsDenied(path: string, denied: (path: string) => boolean): boolean
  files: WorkspaceFiles
}

/** The verdict on one call, as history records it: lean when allowed, bounded always. */
export function judgeCall(
  policy: Policy,
  workspace: WorkspaceView,
  call: ValidatedCall,
  noRetry: readonly string[],
  mcp?: McpToolState,
): ActionVerdict {
  return withinSize(lean(judge(policy, workspace, call, noRetry, mcp)))
}

/**
 * The verdict on one call; every path is judged as written and as it resolves on disk. `mcp`: what the run
 * knows of the MCP tool a call names (whether it is offered, and what its reviewed definition says).
 */
export function judge(
  policy: Policy,
  workspace: WorkspaceView,
  call: ValidatedCall,
  noRetry: readonly string[],
  mcp?: McpToolState,
): ActionVerdict {
  switch (call.name) {
    case 'exec':
      return judgeExec(policy, workspace, call.args.argv, noRetry)
    case 'read_file':
    case 'list_dir':
      return judgePath(policy, workspace, 'read', call.args.path)
    case 'search':
      return judgePath(policy, workspace, 'read', '.')
    case 'write_file':
    case 'edit_file':
      return judgePath(policy, workspace, 'write', call.args.path)
    default:
      return judgeMcp(policy, call, mcp)
  }
}

/** A call of an MCP tool: offered by the run, then judged as the tool and as the tool with its arguments. */
function judgeMcp(policy: Policy, call: McpCall, tool: McpToolState | undefined): ActionVerdict {
  const args = mcpArguments(call.args)
  const target = `${call.name} ${args}`
  if (!tool?.offered) {
    return {
      act: 'mcp',
      target,
      effect: 'deny',
      rule: BUILTIN_RULES.mcpNotOffered,
      layer: BUILTIN_LAYER,
      reason: tool?.why ?? `no MCP server of this run offers ${call.name}`,
    }
  }
  const verdict = policy.checkMcp(call.name, args, { readOnly: tool.readOnly === true })
  const remember = rememberRule('mcp', target)
  return {
    act: 'mcp',
    target,
    ...verdictFields(verdict),
    ...approvals(policy, verdict),
    remember: remember.ok ? offer('mcp', remember) : remember,
  }
}

function judgeExec(
  policy: Policy,
  workspace: WorkspaceView,
  argv: string[],
  noRetry: readonly string[],
): ActionVerdict {
  // A recursive reader (`grep -r`) is read-only only where the workspace holds no file the policy denies.
  const denied = (path: string) => policy.check('read', path).effect === 'deny'
  const verdict = policy.checkExec(argv, {
    holdsDenied: (path) => workspace.holdsDenied(path, denied),
    workspace: workspace.root,
  })
  const remember = rememberRule('exec', argv)
  const base = {
    act: 'exec' as const,
    target: verdict.target,
    tree: renderExecVerdict(verdict),
    checks: verdict.checks,
    noRetry: matchesAny(noRetry, argv),
    remember: remember.ok ? offer('exec', remember) : remember,
  }
  if (verdict.effect !== 'deny') {
    // A command that never exits by design would hold the run until its timeout.
    const forever: LongRunning | undefined = neverExitingCommand(workspace.files, argv)
    if (forever) {
      return {
        ...base,
        effect: 'deny',
        rule: BUILTIN_RULES.neverExiting,
        layer: BUILTIN_LAYER,
        reason: `${forever.reason}. Instead: ${forever.alternative}`,
      }
    }
  }
  return { ...base, ...verdictFields(verdict), ...approvals(policy, verdict) }
}

/** How many distinct approvers an ask needs, when a rule asks for more than one. */
function approvals(
  policy: Policy,
  verdict: Parameters<Policy['approvalsRequired']>[0],
): { approvalsRequired?: number } {
  const required = policy.approvalsRequired(verdict)
  return required > 1 ? { approvalsRequired: required } : {}
}

function judgePath(
  policy: Policy,
  workspace: WorkspaceView,
  act: Extract<Act, 'read' | 'write'>,
  path: string,
): ActionVerdict {
  const resolved = workspace.resolve(path)
  if (!resolved.ok) {
    return {
      act,
      target: path,
      effect: 'deny',
      rule: BUILTIN_RULES.workspaceBoundary,
      layer: BUILTIN_LAYER,
      reason: resolved.reason,
    }
  }
  // A repository's own folder holds what makes git run programs (configuration, hooks, attributes).
  const gitFolder = [resolved.normalised, resolved.resolved].find(insideGitFolder)
  if (act === 'write' && gitFolder !== undefined) {
    return {
      act,
      target: path,
      effect: 'deny',
      rule: BUILTIN_RULES.gitInternals,
      layer: BUILTIN_LAYER,
      reason: `"${gitFolder}" is part of a repository's own .git, which the file tools never write (git's configuration and hooks there could make later commands run programs); change a repository with git commands`,
    }
  }
  const verdicts = [policy.check(act, resolved.normalised)]
  if (resolved.resolved !== resolved.normalised) verdicts.push(policy.check(act, resolved.resolved))
  // The stricter of the two wins: a link inside the workspace cannot launder a denied target.
  const strictest = verdicts.reduce((a, b) => (rank(b.effect) > rank(a.effect) ? b : a))
  const remember = rememberRule(act, resolved.normalised)
  return {
    act,
    target: resolved.normalised,
    ...verdictFields(strictest),
    ...approvals(policy, strictest),
    remember: remember.ok ? offer(act, remember) : remember,
  }
}

function verdictFields(verdict: Verdict): Pick<ActionVerdict, 'effect' | 'rule' | 'layer' | 'reason'> {
  return {
    effect: verdict.effect,
    ...(verdict.rule !== undefined ? { rule: verdict.rule } : {}),
    ...(verdict.layer !== undefined ? { layer: verdict.layer } : {}),
    reason: verdict.reason,
  }
}

function offer(act: Act, rule: { exact: string; wider?: string | undefined }) {
  return { ok: true as const, act, exact: rule.exact, ...(rule.wider ? { wider: rule.wider } : {}) }
}

function insideGitFolder(path: string): boolean {
  return path.split('/').some((segment) => segment.toLowerCase() === '.git')
}

function rank(effect: string): number {
  return effect === 'deny' ? 2 : effect === 'ask' ? 1 : 0
}

/** The contract's `noRetry` patterns as deny rules of `act`, so they match as a deny rule would. */
function noRetryRules(patterns: readonly string[], act: 'exec' | 'mcp'): Policy {
  let probe = Policy.permissive().layer('noRetry')
  for (const pattern of patterns) probe = probe.deny(act, pattern)
  return probe
}

/** Whether a command matches a `noRetry` pattern, judged like a deny rule (every spelling, wrappers). */
function matchesAny(patterns: readonly string[], argv: string[]): boolean {
  return patterns.length > 0 && noRetryRules(patterns, 'exec').checkExec(argv).effect === 'deny'
}

/**
 * Whether an MCP call (`server.tool` and its canonical arguments) matches a `noRetry` pattern, read as an
 * `mcp` deny rule: `github.create_release`, `deploy.*`, or a tool with arguments (`fs.write_file {"path":*`).
 */
export function mcpNoRetry(patterns: readonly string[], tool: string, args: string): boolean {
  return patterns.length > 0 && noRetryRules(patterns, 'mcp').checkMcp(tool, args).effect === 'deny'
}

/**
 * An allowed call needs only its verdict: the judged tree, its checks and what "remember" could add serve
 * refusals (the audit) and asks (the approver). Every verdict is recorded in history, so allowed ones stay
 * small.
 */
function lean(verdict: ActionVerdict): ActionVerdict {
  if (verdict.effect !== 'allow') return verdict
  const { checks: _checks, tree: _tree, remember: _remember, ...rest } = verdict
  return rest
}

/**
 * Characters a verdict may serialise to: it is recorded in history and shown to approvers. The call limits
 * keep ordinary commands far below it; hundreds of nested wrappers or a script of thousands of commands
 * can still render larger, and are refused — no person could review them, and history could not hold them.
 */
const VERDICT_LIMIT = 262_144

function withinSize(verdict: ActionVerdict): ActionVerdict {
  const size = JSON.stringify(verdict).length
  if (size <= VERDICT_LIMIT) return verdict
  return {
    act: verdict.act,
    target: verdict.target,
    effect: 'deny',
    rule: BUILTIN_RULES.analysisTooLarge,
    layer: BUILTIN_LAYER,
    reason:
      `the policy's analysis of this command runs to ${size.toLocaleString('en-US')} characters, more than the ` +
      `${VERDICT_LIMIT.toLocaleString('en-US')} anyone could review. Run simpler commands, or write the steps to a script file and run that`,
  }
}
