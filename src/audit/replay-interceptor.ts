/**
 * Runs inside the workflow sandbox, only in the replayer of `tether audit verify` (never in a worker's
 * bundle): reports every activity the workflow asks for, with its input and result, while a recorded
 * history is replayed. Local activities are why: their markers in history keep the result but not the
 * input, and the input (a step's row, an approval's decision and its answers) is what the audit recorded.
 * Replaying recomputes it from history alone, exactly as the workflow did.
 */
import { proxySinks, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow'

export interface ReplaySinks extends Sinks {
  tetherAuditReplay: {
    /** The workflow asked for an activity (`id` counts calls within one execution). */
    called(call: { id: number; type: string; local: boolean; input: unknown }): void
    /** It completed with `result`, or failed (a failed local attempt may be tried again as a new call). */
    settled(outcome: { id: number; result?: unknown; failed?: true }): void
  }
}

const { tetherAuditReplay } = proxySinks<ReplaySinks>()

export const interceptors: WorkflowInterceptorsFactory = () => {
  let calls = 0
  const report = async <T>(type: string, local: boolean, input: unknown, next: () => Promise<T>) => {
    calls += 1
    const id = calls
    tetherAuditReplay.called({ id, type, local, input })
    try {
      const result = await next()
      tetherAuditReplay.settled({ id, result })
      return result
    } catch (error) {
      tetherAuditReplay.settled({ id, failed: true })
      throw error
    }
  }
  return {
    outbound: [
      {
        scheduleActivity: (input, next) =>
          report(input.activityType, false, input.args[0], () => next(input)),
        scheduleLocalActivity: (input, next) =>
          report(input.activityType, true, input.args[0], () => next(input)),
      },
    ],
  }
}
