/** The workflow bundle the test suite uses: tether's workflows plus a few that exist only for tests. */
import {
  ActivityFailure,
  CancelledFailure,
  condition,
  defineSignal,
  executeChild,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow'
import { execActivityOptions } from '../../src/exec/activity-options.js'
import type { ExecResult } from '../../src/exec/types.js'
import type { AgentRunInput, AgentRunResult } from '../../src/run/index.js'
import type { ExecActivityInput, execCommand } from './exec-activity.js'

export * from '../../src/workflows/index.js'

interface SmokeActivities {
  greet(name: string): Promise<string>
}

export const proceed = defineSignal<[string]>('proceed')

/** Runs one activity, then waits for a signal: the smallest shape of a durable run with a human in it. */
export async function smokeWorkflow(name: string): Promise<string> {
  let answer: string | undefined
  setHandler(proceed, (value) => {
    answer = value
  })
  const { greet } = proxyActivities<SmokeActivities>({ startToCloseTimeout: '30 seconds' })
  const greeting = await greet(name)
  await condition(() => answer !== undefined)
  return `${greeting}; ${answer}`
}

/**
 * Runs one command through the exec activity with the options tether recommends. A cancelled command's
 * partial result travels back in the CancelledFailure and is returned, so nothing it printed is lost.
 */
export async function execCommandWorkflow(
  input: ExecActivityInput,
  heartbeatTimeoutMs: number,
): Promise<{ completed?: ExecResult; cancelled?: ExecResult }> {
  const activities = proxyActivities<{ execCommand: typeof execCommand }>(
    execActivityOptions(input.timeoutMs, { heartbeatTimeoutMs, killGraceMs: input.killGraceMs }),
  )
  try {
    return { completed: await activities.execCommand(input) }
  } catch (error) {
    if (error instanceof ActivityFailure && error.cause instanceof CancelledFailure) {
      return { cancelled: error.cause.details[0] as ExecResult }
    }
    throw error
  }
}

/** A user's workflow that starts a run as its child and waits for it (its close ends the child by default). */
export async function parentOfRun(input: AgentRunInput, childId: string): Promise<string> {
  const result = await executeChild<(input: AgentRunInput) => Promise<AgentRunResult>>('agentRun', {
    args: [input],
    workflowId: childId,
  })
  return result.outcome
}
