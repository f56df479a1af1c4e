/**
 * The contract and policy of a run, read from the audit (where `tetherStartRun` recorded them) and kept per
 * worker: activities that need them look them up by run id instead of carrying them through history.
 */
import { ApplicationFailure } from '@temporalio/common'
import type { AuditStore } from '../audit/index.js'
import type { TaskContract } from '../contract.js'
import type { Policy } from '../policy/index.js'
import type { RememberedRule } from '../run/index.js'
import { loadPolicy, withRemembered } from './policy.js'

export interface RunConfig {
  contract: TaskContract
  policy: Policy
}

/** Runs remembered per worker; a run's contract and policy never change, so entries never go stale. */
const CAPACITY = 512
/**
 * Distinct policies kept compiled. A compiled policy weighs hundreds of KB (its rule tries) and most runs on
 * a worker share one spec, so runs with the same spec share one compiled policy instead of one each.
 */
const POLICY_CAPACITY = 32

export class RunConfigs {
  private readonly entries = new Map<string, Promise<RunConfig>>()
  private readonly policies = new Map<string, Policy>()

  constructor(private readonly audit: AuditStore) {}

  get(runId: string): Promise<RunConfig> {
    let entry = this.entries.get(runId)
    if (!entry) {
      entry = this.load(runId)
      entry.catch(() => this.entries.delete(runId))
    }
    remember(this.entries, runId, entry, CAPACITY)
    return entry
  }

  /** The run's contract: as an old input carried it, else as recorded. */
  async contract(runId: string, carried?: TaskContract): Promise<TaskContract> {
    return carried ?? (await this.get(runId)).contract
  }

  /** The run's policy with the remembered rules on top: from an old input's spec, else as recorded. */
  async policy(
    runId: string | undefined,
    carried: unknown,
    remembered: readonly RememberedRule[],
  ): Promise<Policy> {
    if (carried !== undefined || runId === undefined) return loadPolicy(carried, remembered)
    return withRemembered((await this.get(runId)).policy, remembered)
  }

  private async load(runId: string): Promise<RunConfig> {
    const stored = await this.audit.runConfig(runId)
    if (!stored) {
      throw ApplicationFailure.nonRetryable(
        `run ${runId} has no record in the audit (its start was never recorded)`,
        'UnknownRun',
      )
    }
    // Recorded after validation at the run's start: already a contract, with every default filled in.
    return { contract: stored.contract as TaskContract, policy: this.compiled(stored.policy) }
  }

  /** The compiled policy for a spec; the key is the spec as Postgres returns jsonb (keys in a stable order). */
  private compiled(spec: unknown): Policy {
    const key = JSON.stringify(spec)
    const policy = this.policies.get(key) ?? loadPolicy(spec, [])
    remember(this.policies, key, policy, POLICY_CAPACITY)
    return policy
  }
}

/** Sets `key` as the most recently used entry (the oldest is the first key) and drops the oldest past `capacity`. */
function remember<V>(entries: Map<string, V>, key: string, value: V, capacity: number): void {
  entries.delete(key)
  entries.set(key, value)
  if (entries.size > capacity) entries.delete(entries.keys().next().value as string)
}
