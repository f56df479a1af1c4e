/**
 * How big what starts a run may be. A run's contract and policy travel through Temporal — in the start
 * request, in the first activities' inputs, in every continue-as-new — and Temporal refuses a payload over
 * 2 MiB (by default) by terminating the run. So the client refuses anything over these limits before it
 * reaches Temporal, and the run checks them again before it passes them on (another client may not have).
 */
import { nameProblem, overLimit } from '../present/index.js'
import { utf8Length } from '../tools/index.js'

export const START_LIMITS = {
  /** Characters of the goal: the audit keeps free text whole up to this. */
  goalChars: 65_536,
  /** UTF-8 bytes of the contract as JSON, the goal included. */
  contractBytes: 256 * 1024,
  /** UTF-8 bytes of the run's own policy as JSON (the worker's floor is not sent). */
  policyBytes: 512 * 1024,
  /** Patterns of the contract's `noRetry` list: each command is judged against them all. */
  noRetry: 100,
  /** Characters of one of them: as long as a policy's pattern may be (policy/limits.ts). */
  noRetryChars: 4_096,
  /** Characters of a run id (it names the run's workflow, its audit rows and its transcript). */
  runIdChars: 200,
} as const

/** One thing over a limit: the field (`goal`, `contract`, `policy`, `noRetry`) and one line saying so. */
export interface StartProblem {
  field: 'goal' | 'contract' | 'noRetry' | 'policy'
  message: string
}

/** What of a run's start is over a limit (the first found), or undefined. */
export function startProblem(input: {
  contract: unknown
  policy?: unknown
  policyRef?: unknown
}): StartProblem | undefined {
  const contract = (input.contract ?? {}) as { goal?: unknown; noRetry?: unknown }
  if (typeof contract.goal === 'string' && contract.goal.length > START_LIMITS.goalChars) {
    return {
      field: 'goal',
      message: `the goal has ${overLimit(contract.goal.length, 'characters', START_LIMITS.goalChars, 'goal')}; put the detail in a file in the workspace and name it in the goal`,
    }
  }
  const noRetry = contract.noRetry
  if (Array.isArray(noRetry)) {
    if (noRetry.length > START_LIMITS.noRetry) {
      return {
        field: 'noRetry',
        message: `noRetry has ${overLimit(noRetry.length, 'patterns', START_LIMITS.noRetry, 'noRetry')}`,
      }
    }
    const long = noRetry.find((p) => typeof p === 'string' && p.length > START_LIMITS.noRetryChars)
    if (long !== undefined) {
      return {
        field: 'noRetry',
        message: `a noRetry pattern has ${overLimit(long.length, 'characters', START_LIMITS.noRetryChars, 'pattern')}`,
      }
    }
  }
  const contractBytes = jsonBytes(input.contract)
  if (contractBytes > START_LIMITS.contractBytes) {
    return {
      field: 'contract',
      message: `the contract is ${overLimit(contractBytes, 'bytes as JSON', START_LIMITS.contractBytes, 'contract')} bytes`,
    }
  }
  if (input.policyRef !== undefined) {
    // By reference: a digest, never the spec as well (which of the two would the run work under?).
    if (typeof input.policyRef !== 'string' || !/^[0-9a-f]{64}$/.test(input.policyRef)) {
      return {
        field: 'policy',
        message:
          'policyRef is not a policy digest (64 hex characters); pass the digest the policy is stored under',
      }
    }
    if (input.policy !== undefined) {
      return {
        field: 'policy',
        message: 'the start gives the policy both inline and by policyRef; give one of them',
      }
    }
  }
  const policyBytes = jsonBytes(input.policy)
  if (policyBytes > START_LIMITS.policyBytes) {
    return {
      field: 'policy',
      message: `the policy is ${overLimit(policyBytes, 'bytes as JSON', START_LIMITS.policyBytes, 'policy')} bytes`,
    }
  }
  return undefined
}

/** Why `runId` cannot name a run — empty, too long, or holding what breaks a line — or undefined. */
export function runIdProblem(runId: string): string | undefined {
  if (runId.length === 0) return 'the run id is empty'
  if (runId.length > START_LIMITS.runIdChars) {
    return `the run id has ${overLimit(runId.length, 'characters', START_LIMITS.runIdChars, 'run id')}`
  }
  return nameProblem('the run id', runId)
}

function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value) ?? '')
}
