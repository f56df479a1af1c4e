/**
 * The policy activities. Run as *local* activities, so each verdict is recorded in history (replay never
 * re-judges with newer policy code) without a task-queue round trip. Thin: the judge (src/judge) decides,
 * over the run's workspace as it is on this worker; before the first step, the contract is checked
 * against the worker's world.
 */
import { ApplicationFailure } from '@temporalio/common'
import { judgeCall } from '../judge/index.js'
import type { ModelProvider } from '../model/index.js'
import { type Policy, PolicyError } from '../policy/index.js'
import { FAILURE, gateRefusal, type TetherActivities } from '../run/index.js'
import { workspaceView } from '../workspace/index.js'
import { contractProblems } from './preflight.js'
import type { RunConfigs } from './run-config.js'
import type { CommandSandbox } from './sandbox.js'

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
  namespace?: NamespaceFacts | undefined
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
      // The attributes a run sets besides TetherPendingApproval, where the namespace has them.
      const searchAttributes = RUN_ATTRIBUTES.filter((name) => deps.namespace?.searchAttributes.has(name))
      const prepared = {
        approvers,
        ...(searchAttributes.length > 0 ? { searchAttributes } : {}),
        ...(identity ? { identity } : {}),
        ...(policy ? { policyDigest: policy.digest, floor: deps.runs.floor.source } : {}),
      }
      // All at once, so one correction fixes everything.
      return problems.length > 0 ? { ...prepared, rejected: problems.join('; ') } : prepared
    },

    async tetherCheckAction({ runId, policy: spec, policyDigest, remembered, workspace, call, noRetry }) {
      const policy = await deps.runs.policy(runId, spec, remembered, policyDigest)
      return judgeCall(policy, workspaceView(workspace), call, noRetry)
    },
  }
}

/** A policy refused on this worker, as RunConfigs reports it to Temporal. */
function isPolicyFailure(error: unknown): boolean {
  return error instanceof ApplicationFailure && error.type === FAILURE.policyError
}
