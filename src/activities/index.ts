/**
 * tether's activities, built over their dependencies: the audit store (Postgres) and a way to pick a model
 * provider. Thin adapters: the work lives in policy/, exec/, workspace/, model/ and audit/.
 */
import { ApplicationFailure } from '@temporalio/common'
import { AuditConflictError, AuditConnectionError, AuditInputError, type AuditStore } from '../audit/index.js'
import { type ModelProvider, providerFromEnv } from '../model/index.js'
import { modelActivities } from './model.js'
import { policyActivities } from './policy.js'
import { projectionActivities } from './projections.js'
import { toolActivities } from './tools.js'
import type { TetherActivities } from './types.js'

export type { TetherActivities } from './types.js'

export interface ActivityDependencies {
  audit: AuditStore
  /** Resolves a contract's model choice; default: `providerFromEnv(process.env, choice)`, cached. */
  provider?: (choice: string | undefined) => ModelProvider
  /** Used for approval webhooks (default: global fetch). */
  fetch?: typeof fetch
}

export function createActivities(deps: ActivityDependencies): TetherActivities {
  const provider = deps.provider ?? cachedProviders(process.env)
  const activities: TetherActivities = {
    ...policyActivities({ provider }),
    ...modelActivities({ audit: deps.audit, provider }),
    ...toolActivities({ audit: deps.audit }),
    ...projectionActivities({ audit: deps.audit, ...(deps.fetch ? { fetch: deps.fetch } : {}) }),
  }
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      failFastOnBadInput(fn as (input: never) => Promise<unknown>),
    ]),
  ) as unknown as TetherActivities
}

/**
 * An audit write refused for its content (bad input, a conflicting transcript row) fails the same way on
 * every attempt: report it as non-retryable instead of retrying forever. A server that is down stays
 * retryable.
 */
function failFastOnBadInput<I, O>(fn: (input: I) => Promise<O>): (input: I) => Promise<O> {
  return async (input) => {
    try {
      return await fn(input)
    } catch (error) {
      if (
        error instanceof AuditInputError ||
        error instanceof AuditConflictError ||
        (error instanceof AuditConnectionError && !error.retryable)
      ) {
        throw ApplicationFailure.nonRetryable(error.message, error.name)
      }
      throw error
    }
  }
}

function cachedProviders(env: NodeJS.ProcessEnv): (choice: string | undefined) => ModelProvider {
  const cache = new Map<string, ModelProvider>()
  return (choice) => {
    const key = choice ?? ''
    let provider = cache.get(key)
    if (!provider) {
      provider = providerFromEnv(env, choice)
      cache.set(key, provider)
    }
    return provider
  }
}
