/**
 * The contract and policy of a run, read from the audit (where `tetherStartRun` recorded them) and kept per
 * worker: activities that need them look them up by run id instead of carrying them through history.
 *
 * A run works under its effective policy: this worker's floor with the run's own policy stacked on it. The
 * workflow carries only its digest (from the first step's preparation, recorded in history); the spec is
 * stored under that digest, and a spec that no longer matches its digest is refused, so the database cannot
 * change what a run's history says it ran under.
 */
import { ApplicationFailure } from '@temporalio/common'
import type { AuditStore } from '../audit/index.js'
import { type Floor, onFloor, Policy, PolicyError, type PolicySpec } from '../policy/index.js'
import { FAILURE, type RememberedRule, type TaskContract } from '../run/index.js'
import { SizedCache } from './sized-cache.js'

/** A run's own policy its digest could not give back: missing from the audit, or edited since it was stored. */
export function isUnreadableOwnPolicy(error: unknown): boolean {
  return (
    error instanceof ApplicationFailure &&
    (error.type === FAILURE.policyMissing || error.type === FAILURE.policyTampered)
  )
}

export interface RunConfig {
  contract: TaskContract
  /** The run's own policy, as its starter gave it. */
  policy: unknown
  /** The digest of its effective policy, when the run recorded one (runs before floors did not). */
  policyDigest?: string | undefined
}

/** Runs remembered per worker; a run's contract and policy never change, so entries never go stale. */
const CAPACITY = 512
/**
 * What the compiled policies a worker keeps may take, by their compiled size (policy/limits.ts). Most runs on
 * a worker share one spec, so runs with the same policy share one compiled policy instead of one each; a
 * policy's size is bounded when it loads, and so is what all of them keep of the worker's memory.
 */
const POLICY_CACHE_BYTES = 128 * 1024 * 1024

export class RunConfigs {
  private readonly entries = new Map<string, Promise<RunConfig>>()
  private readonly policies = policyCache(POLICY_CACHE_BYTES)

  constructor(
    private readonly audit: AuditStore,
    /** This worker's floor: what every run's own policy stands on. */
    readonly floor: Floor,
  ) {}

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

  /**
   * The run's effective policy with the remembered rules on top: the one named by `digest` (what history
   * recorded), else — for runs from before digests — the recorded (or carried) spec on this worker's floor.
   */
  async policy(
    runId: string | undefined,
    carried: unknown,
    remembered: readonly RememberedRule[],
    digest?: string,
  ): Promise<Policy> {
    let policy: Policy
    if (digest !== undefined && runId !== undefined) policy = await this.byDigest(runId, digest)
    else if (carried !== undefined || runId === undefined) policy = this.onFloor(carried)
    else policy = this.compiled((await this.get(runId)).policy)
    return withRemembered(policy, remembered)
  }

  /**
   * A run's own policy spec, which its start named by `ref` (its digest) instead of carrying it: read from the
   * audit, and refused when missing or when it no longer hashes to `ref` (fails closed: the run never works
   * under a policy its history does not name).
   */
  async ownSpec(ref: string): Promise<PolicySpec> {
    const stored = await this.audit.runPolicyByDigest(ref)
    if (stored === undefined) {
      throw ApplicationFailure.nonRetryable(
        `the run's policy ${ref} is not in the audit this worker reads: start the run from a client that stores ` +
          "its policy in the worker's audit database (tether run does, with the worker's DATABASE_URL), or pass the policy inline",
        FAILURE.policyMissing,
      )
    }
    let own: Policy | undefined
    try {
      own = Policy.fromSpec(stored)
    } catch (error) {
      if (!(error instanceof PolicyError)) throw error
    }
    if (own?.digest !== ref) {
      throw ApplicationFailure.nonRetryable(
        `the run's policy stored under ${ref} no longer matches its digest: the run_policies table was edited; ` +
          'start the run again with its policy',
        FAILURE.policyTampered,
      )
    }
    return own.toSpec()
  }

  /**
   * The digest a run's own inline `spec` is stored under, stored now (once per run and continuation): what its
   * next part carries instead of the spec.
   */
  async storeOwn(spec: unknown): Promise<string> {
    const own = Policy.fromSpec(spec)
    await this.audit.storeRunPolicy(own.digest, own.toSpec())
    return own.digest
  }

  /** The effective policy of a run's own `spec` on this worker: what a run's preparation judges. */
  effective(spec: unknown): Policy {
    return this.compiled(spec)
  }

  /** The effective policy of `spec` on this worker, which must be the one history names by `digest`. */
  effectiveAs(runId: string, spec: unknown, digest: string): Policy {
    const policy = this.compiled(spec)
    if (policy.digest !== digest) {
      throw ApplicationFailure.nonRetryable(
        `this worker's floor (${this.floor.source}) gives run ${runId} the policy ${policy.digest.slice(0, 12)}…, ` +
          `but the run started under ${digest.slice(0, 12)}…: workers of one task queue need the same floor`,
        FAILURE.floorMismatch,
      )
    }
    return policy
  }

  /**
   * The policy stored under `digest`, checked against it; when none is stored (a run continued as new after
   * its floor changed), the run's own policy on this worker's floor, which must give the same digest.
   */
  private async byDigest(runId: string, digest: string): Promise<Policy> {
    const cached = this.policies.get(digest)
    if (cached) return cached
    const stored = await this.audit.policyByDigest(digest)
    let policy: Policy
    if (stored !== undefined) {
      policy = loadPolicy(stored)
      if (policy.digest !== digest) {
        throw ApplicationFailure.nonRetryable(
          `the audit's policy ${digest.slice(0, 12)}… no longer matches its digest: the policies table was edited; ` +
            'the run stops rather than work under a policy its history does not name',
          FAILURE.policyTampered,
        )
      }
    } else {
      policy = this.effectiveAs(runId, (await this.get(runId)).policy, digest)
    }
    this.policies.set(digest, policy)
    return policy
  }

  private async load(runId: string): Promise<RunConfig> {
    const stored = await this.audit.runConfig(runId)
    if (!stored) {
      throw ApplicationFailure.nonRetryable(
        `run ${runId} has no record in the audit (its start was never recorded)`,
        FAILURE.unknownRun,
      )
    }
    // Recorded after validation at the run's start: already a contract, with every default filled in.
    return {
      contract: stored.contract as TaskContract,
      policy: stored.policy,
      ...(stored.policyDigest ? { policyDigest: stored.policyDigest } : {}),
    }
  }

  /** A run's own spec on this worker's floor, compiled once per distinct spec (as Postgres returns jsonb). */
  private compiled(spec: unknown): Policy {
    const key = JSON.stringify(spec)
    const cached = this.policies.get(key)
    if (cached) return cached
    const policy = this.onFloor(spec)
    this.policies.set(key, policy)
    return policy
  }

  private onFloor(spec: unknown): Policy {
    try {
      return onFloor(this.floor, spec)
    } catch (error) {
      if (error instanceof PolicyError)
        throw ApplicationFailure.nonRetryable(error.message, FAILURE.policyError)
      throw error
    }
  }
}

/**
 * Compiled policies by key (a digest, or a spec's JSON), within `budget` bytes: each counts its compiled size
 * and its key.
 */
export function policyCache(budget: number): SizedCache<Policy> {
  return new SizedCache<Policy>(budget, (key, policy) => policy.compiledSize + 2 * key.length)
}

/** A stored effective policy. */
function loadPolicy(spec: unknown): Policy {
  try {
    return Policy.fromSpec(spec)
  } catch (error) {
    if (error instanceof PolicyError)
      throw ApplicationFailure.nonRetryable(error.message, FAILURE.policyError)
    throw error
  }
}

/** `policy` with the approvers' remembered rules in its `remembered` layer. */
export function withRemembered(policy: Policy, remembered: readonly RememberedRule[]): Policy {
  if (remembered.length === 0) return policy
  let layered = policy.layer('remembered')
  for (const rule of remembered) layered = layered.allow(rule.act, rule.pattern)
  return layered
}

/** Sets `key` as the most recently used entry (the oldest is the first key) and drops the oldest past `capacity`. */
function remember<V>(entries: Map<string, V>, key: string, value: V, capacity: number): void {
  entries.delete(key)
  entries.set(key, value)
  if (entries.size > capacity) entries.delete(entries.keys().next().value as string)
}
