/**
 * The policy activities. Run as *local* activities, so each verdict is recorded in history (replay never
 * re-judges with newer policy code) without a task-queue round trip. They touch the disk only to resolve
 * workspace paths, so a symlink inside the workspace is judged by where it really points, and (before the
 * first step) to check the contract against the worker's world.
 */
import { ApplicationFailure } from '@temporalio/common'
import { gateRefusal } from '../contract.js'
import type { ModelProvider } from '../model/index.js'
import { Policy, PolicyError, rememberRule, renderExecVerdict, type Verdict } from '../policy/index.js'
import type { Act, ActionVerdict } from '../run/index.js'
import type { ValidatedCall } from '../tools/schemas.js'
import { holdsDeniedFile, longRunningCommand, resolveWorkspacePath } from '../workspace/index.js'
import { contractProblems } from './preflight.js'
import type { RunConfigs } from './run-config.js'
import type { CommandSandbox } from './sandbox.js'
import type { TetherActivities } from './types.js'

export function policyActivities(deps: {
  provider: (choice: string | undefined) => ModelProvider
  sandbox: CommandSandbox
  runs: RunConfigs
}): Pick<TetherActivities, 'tetherPrepareRun' | 'tetherCheckAction'> {
  return {
    async tetherPrepareRun({ contract, policy: spec }) {
      const problems = await contractProblems(contract, deps.provider)
      // The run's own policy on this worker's floor: what the run works under, named by its digest.
      let policy: Policy | undefined
      try {
        policy = deps.runs.effective(spec)
      } catch (error) {
        if (!(error instanceof PolicyError) && !isPolicyFailure(error)) throw error
        problems.push((error as Error).message)
      }
      const gate = policy && gateRefusal(contract, policy)
      if (gate) problems.push(gate)
      // No silent fallback: a run whose policy asks for the sandbox fails here when this worker has none.
      const noSandbox = policy && deps.sandbox.unavailable(policy)
      if (noSandbox) problems.push(noSandbox)
      const approvers = [...(policy?.approvers ?? [])]
      const identity = policy?.identity
      const prepared = {
        approvers,
        ...(identity ? { identity } : {}),
        ...(policy ? { policyDigest: policy.digest, floor: deps.runs.floor.source } : {}),
      }
      // All at once, so one correction fixes everything.
      return problems.length > 0 ? { ...prepared, rejected: problems.join('; ') } : prepared
    },

    async tetherCheckAction({ runId, policy: spec, policyDigest, remembered, workspace, call, noRetry }) {
      const policy = await deps.runs.policy(runId, spec, remembered, policyDigest)
      return withinSize(lean(judge(policy, workspace, call, noRetry)))
    },
  }
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
    rule: 'analysis too large',
    layer: 'builtin',
    reason:
      `the policy's analysis of this command runs to ${size.toLocaleString('en-US')} characters, more than the ` +
      `${VERDICT_LIMIT.toLocaleString('en-US')} anyone could review. Run simpler commands, or write the steps to a script file and run that`,
  }
}

/** A policy refused on this worker, as RunConfigs reports it to Temporal. */
function isPolicyFailure(error: unknown): boolean {
  return error instanceof ApplicationFailure && error.type === 'PolicyError'
}

/** The verdict on one call; every path is judged as written and as it resolves on disk. */
export function judge(
  policy: Policy,
  workspace: string,
  call: ValidatedCall,
  noRetry: readonly string[],
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
  }
}

function judgeExec(
  policy: Policy,
  workspace: string,
  argv: string[],
  noRetry: readonly string[],
): ActionVerdict {
  // A recursive reader (`grep -r`) is read-only only where the workspace holds no file the policy denies.
  const denied = (path: string) => policy.check('read', path).effect === 'deny'
  const verdict = policy.checkExec(argv, { holdsDenied: (path) => holdsDeniedFile(workspace, path, denied) })
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
    const forever = longRunningCommand(workspace, argv)
    if (forever) {
      return {
        ...base,
        effect: 'deny',
        rule: 'never-exiting command',
        layer: 'builtin',
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
  workspace: string,
  act: Extract<Act, 'read' | 'write'>,
  path: string,
): ActionVerdict {
  const resolved = resolveWorkspacePath(workspace, path)
  if (!resolved.ok) {
    return {
      act,
      target: path,
      effect: 'deny',
      rule: 'workspace boundary',
      layer: 'builtin',
      reason: resolved.reason,
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

function rank(effect: string): number {
  return effect === 'deny' ? 2 : effect === 'ask' ? 1 : 0
}

/** Whether a command matches a `noRetry` pattern, judged like a deny rule (every spelling, wrappers). */
function matchesAny(patterns: readonly string[], argv: string[]): boolean {
  if (patterns.length === 0) return false
  let probe = Policy.permissive().layer('noRetry')
  for (const pattern of patterns) probe = probe.deny('exec', pattern)
  return probe.checkExec(argv).effect === 'deny'
}
