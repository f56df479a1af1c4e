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

export class RunConfigs {
  private readonly entries = new Map<string, Promise<RunConfig>>()

  constructor(private readonly audit: AuditStore) {}

  get(runId: string): Promise<RunConfig> {
    let entry = this.entries.get(runId)
    if (entry) {
      // Most recently used last, so the oldest is the first key.
      this.entries.delete(runId)
      this.entries.set(runId, entry)
      return entry
    }
    entry = this.load(runId)
    entry.catch(() => this.entries.delete(runId))
    this.entries.set(runId, entry)
    if (this.entries.size > CAPACITY) this.entries.delete(this.entries.keys().next().value as string)
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
    return { contract: stored.contract as TaskContract, policy: loadPolicy(stored.policy, []) }
  }
}
