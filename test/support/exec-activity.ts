/**
 * A bare exec activity for tests of the runner inside Temporal: `runCommandWithHeartbeats` as an activity
 * of its own, rethrowing a cancellation with the partial result as its details.
 */
import { Context } from '@temporalio/activity'
import { ApplicationFailure, CancelledFailure } from '@temporalio/common'
import { runCommandWithHeartbeats } from '../../src/activities/exec.js'
import { ExecInputError, type ExecResult, type RunCommandOptions } from '../../src/exec/index.js'

export type { ExecHeartbeat } from '../../src/activities/exec.js'

/** What a workflow passes: the runner's options that survive serialisation. */
export type ExecActivityInput = Omit<RunCommandOptions, 'signal' | 'onProgress'>

/**
 * The activity. Resolves with the ExecResult for every way a command can end on its own; throws
 * `ApplicationFailure` (non-retryable, type `ExecInputError`) for invalid input, `ExecSpawnError` when the
 * worker cannot start processes, and, when the activity was cancelled, a `CancelledFailure` whose
 * `details[0]` is the partial ExecResult, so Temporal records a cancelled activity and nothing is lost.
 */
export async function execCommand(input: ExecActivityInput): Promise<ExecResult> {
  const context = Context.current()
  let result: ExecResult
  try {
    result = await runCommandWithHeartbeats(input, context)
  } catch (error) {
    if (error instanceof ExecInputError) {
      throw ApplicationFailure.nonRetryable(error.message, 'ExecInputError', { field: error.field })
    }
    throw error
  }
  if (result.status === 'cancelled' && context.cancellationSignal.aborted) {
    const reason = context.cancellationSignal.reason
    const message = reason instanceof Error ? reason.message : String(reason ?? 'CANCELLED')
    throw new CancelledFailure(message, [result])
  }
  return result
}
