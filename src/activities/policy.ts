/**
 * The policy activities. Run as *local* activities, so each verdict is recorded in history (replay never
 * re-judges with newer policy code) without a task-queue round trip. Thin: the judge (src/judge) decides,
 * over the run's workspace as it is on this worker; before the first step, the contract is checked
 * against the worker's world.
 */
import { log } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import { judgeCall } from '../judge/index.js'
import { type ModelProvider, type PriceOverrides, priceOf } from '../model/index.js'
import { type Policy, PolicyError } from '../policy/index.js'
import {
  type ActionVerdict,
  FAILURE,
  gateRefusal,
  type JudgeRequest,
  type McpServerRef,
  type McpToolState,
  type TetherActivities,
} from '../run/index.js'
import type { McpServerConfig } from '../stack/index.js'
import type { ValidatedCall } from '../tools/index.js'
import { workspaceView } from '../workspace/index.js'
import { heartbeating } from './heartbeat.js'
import { contractProblems } from './preflight.js'
import { isUnreadableOwnPolicy, type RunConfigs } from './run-config.js'
import type { CommandSandbox } from './sandbox.js'
import type { StepSnapshots } from './snapshots.js'
import type { RunMetrics } from './telemetry.js'

/** Facts about the Temporal namespace a worker serves, learned when it starts. */
export interface NamespaceFacts {
  /** The custom search attributes registered in the namespace (filled in when the worker starts). */
  searchAttributes: ReadonlySet<string>
}

/** Facts nobody has learned yet: no search attribute assumed. */
export function unknownNamespace(): NamespaceFacts {
  return { searchAttributes: new Set() }
}

/** The search attributes a run sets to be found by (`TetherOutcome = "verified"`), when registered. */
const RUN_ATTRIBUTES = ['TetherOutcome', 'TetherWorkspace']

export function policyActivities(deps: {
  provider: (choice: string | undefined) => ModelProvider
  sandbox: CommandSandbox
  runs: RunConfigs
  prices?: PriceOverrides | undefined
  metrics?: RunMetrics
  snapshots: StepSnapshots
  mcpServers?: readonly McpServerConfig[]
  namespace?: NamespaceFacts | undefined
}): Pick<TetherActivities, 'tetherPrepareRun' | 'tetherCheckAction' | 'tetherLayOutWorkspace'> {
  return {
    async tetherPrepareRun({ contract, policy: inline, policyRef }) {
      const problems = await contractProblems(contract, deps.provider, deps.sandbox)
      const unpriced = contract.budgets.maxCost !== undefined && unpricedModel(contract.model, deps)
      if (unpriced) problems.push(unpriced)
      // The run's own policy on this worker's floor: what the run works under, named by its digest.
      let policy: Policy | undefined
      let ownRef = policyRef
      try {
        const spec = policyRef !== undefined ? await deps.runs.ownSpec(policyRef) : inline
        policy = deps.runs.effective(spec)
        if (ownRef === undefined) ownRef = await storedOwn(deps.runs, spec)
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
      const mcp = mcpServersOf(contract.mcp, deps.mcpServers ?? [])
      if ('problem' in mcp) problems.push(mcp.problem)
      // The attributes a run sets besides TetherPendingApproval, where the namespace has them.
      const searchAttributes = RUN_ATTRIBUTES.filter((name) => deps.namespace?.searchAttributes.has(name))
      const prepared = {
        approvers,
        ...(searchAttributes.length > 0 ? { searchAttributes } : {}),
        ...(identity ? { identity } : {}),
        ...(policy ? { budgetApprovers: [...policy.budgetApprovers] } : {}),
        ...(policy ? { policyDigest: policy.digest, floor: deps.runs.floor.source } : {}),
        ...(policy && ownRef !== undefined ? { policyRef: ownRef } : {}),
        ...('servers' in mcp && mcp.servers.length > 0 ? { mcp: mcp.servers } : {}),
      }
      // All at once, so one correction fixes everything.
      return problems.length > 0 ? { ...prepared, rejected: problems.join('; ') } : prepared
    },

    tetherCheckAction: ({ runId, policy, call, mcp, ...request }) =>
      judgeCalls(deps, runId, request, [call], { spec: policy, mcp }).then(
        ([verdict]) => verdict as ActionVerdict,
      ),

    tetherLayOutWorkspace: (input) => heartbeating(() => deps.snapshots.layOut(input)),
  }
}

/**
 * The policy's verdicts on calls, each judged over the workspace as it is now on this worker (restored first
 * when this worker lacks it), under the run's effective policy (by digest, else the run's `spec`) with what
 * the run remembered on top; each verdict counted. `mcp`: for one call of an MCP tool, the run's state of
 * that tool (without it, the judge takes the tool as not offered). `at`: the step (and call) judged, which a
 * restore of the workspace is recorded at. `policy`: that policy, when the caller has it already.
 */
export async function judgeCalls(
  deps: { runs: RunConfigs; snapshots: StepSnapshots; metrics?: RunMetrics | undefined },
  runId: string | undefined,
  { policyDigest, remembered, workspace, noRetry, tree }: JudgeRequest,
  calls: readonly ValidatedCall[],
  {
    spec,
    mcp,
    at,
    policy: given,
  }: {
    spec?: unknown
    mcp?: McpToolState | undefined
    at?: { step: number; call?: number }
    policy?: Policy
  } = {},
): Promise<ActionVerdict[]> {
  const policy = given ?? (await deps.runs.policy(runId, spec, remembered, policyDigest))
  const { path } = runId
    ? await deps.snapshots.before({ runId, workspace, tree, policyDigest, ...at }, 'read')
    : { path: workspace }
  const view = workspaceView(path)
  return calls.map((call) => {
    const verdict = judgeCall(policy, view, call, noRetry, mcp)
    deps.metrics?.verdict(verdict.act, verdict.effect)
    return verdict
  })
}

/** The worker's MCP servers a contract names (absent: all of them), or why a name is not one. */
function mcpServersOf(
  names: readonly string[] | undefined,
  servers: readonly McpServerConfig[],
): { servers: McpServerRef[] } | { problem: string } {
  const chosen =
    names === undefined ? servers : names.map((name) => servers.find((server) => server.name === name))
  const missing = names?.filter((_, index) => chosen[index] === undefined) ?? []
  if (missing.length > 0) {
    const have =
      servers.length > 0 ? `it has ${servers.map((server) => server.name).join(', ')}` : 'it has none'
    return { problem: `mcp: this worker has no MCP server ${missing.join(', ')} (${have}); name one it has` }
  }
  return {
    servers: (chosen as McpServerConfig[]).map((server) => ({
      name: server.name,
      timeoutMs: server.timeout,
    })),
  }
}

/** A policy refused on this worker (invalid, missing or tampered), as RunConfigs reports it to Temporal. */
function isPolicyFailure(error: unknown): boolean {
  return (
    (error instanceof ApplicationFailure && error.type === FAILURE.policyError) ||
    isUnreadableOwnPolicy(error)
  )
}

/**
 * Where a run's inline policy is stored for its later parts to name by digest; none when the audit cannot
 * take it now: the run then goes on carrying the spec, as runs did before.
 */
async function storedOwn(runs: RunConfigs, spec: unknown): Promise<string | undefined> {
  try {
    return await runs.storeOwn(spec)
  } catch (error) {
    log.warn("a run's policy was not stored by reference; it stays inline", {
      reason: (error as Error).message,
    })
    return undefined
  }
}

/**
 * Why a run with a cost cap cannot be priced on this worker: its model has no price (shipped or in the
 * operator's price file). A cap nobody can count against is no cap, so the run is refused. A model the
 * worker cannot use at all is reported by `contractProblems`.
 */
function unpricedModel(
  choice: string | undefined,
  deps: { provider: (choice: string | undefined) => ModelProvider; prices?: PriceOverrides | undefined },
): string | undefined {
  let id: string
  try {
    id = deps.provider(choice).id
  } catch {
    return undefined
  }
  if (priceOf(id, deps.prices)) return undefined
  return (
    `the contract caps the run's cost (budgets.maxCost), but this worker has no price for the model ${id}; ` +
    'add it to the price file TETHER_PRICES names (US dollars per million tokens)'
  )
}
