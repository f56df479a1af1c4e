/**
 * The workflow's half of the worker's pacing (activities/pacing.ts): each time the run takes an activity's
 * result, it tells the worker through a sink, so the worker knows which of its runs still wait for a
 * workflow task. The sink is outside history (and not called on replay), and the result is handed on
 * untouched: the caller's promise is the activity's own, so no command moves by a microtask.
 */
import {
  type ActivityInterfaceFor,
  type ActivityOptions,
  type LocalActivityInterfaceFor,
  type LocalActivityOptions,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  type Sinks,
  workflowInfo,
} from '@temporalio/workflow'

export interface PacingSinks extends Sinks {
  tetherPacing: {
    /** The run has taken an activity's result (or failure) in the workflow task now ending. */
    resumed(): void
  }
}

const sink = proxySinks<PacingSinks>().tetherPacing

function observed<T>(promise: Promise<T>): Promise<T> {
  // A replay (a worker taking a run over, `tether replay`, a test) has no worker's pacing to tell, and its
  // Worker need not know the sink.
  const resumed = () => {
    if (!workflowInfo().unsafe.isReplaying) sink.resumed()
  }
  void promise.then(resumed, resumed)
  return promise
}

type ActivityCall = ((...args: unknown[]) => Promise<unknown>) & {
  executeWithOptions(options: unknown, args: unknown[]): Promise<unknown>
}

/** `activities`, each call's settling reported to the worker. */
function paced<T extends object>(activities: T): T {
  return new Proxy(activities, {
    get(target, name) {
      if (typeof name !== 'string') return Reflect.get(target, name)
      const call = Reflect.get(target, name) as ActivityCall
      return Object.assign((...args: unknown[]) => observed(call(...args)), {
        executeWithOptions: (options: unknown, args: unknown[]) =>
          observed(call.executeWithOptions(options, args)),
      })
    },
  })
}

/** `proxyActivities`, paced. */
export function pacedActivities<A>(options: ActivityOptions): ActivityInterfaceFor<A> {
  return paced(proxyActivities<A>(options))
}

/** `proxyLocalActivities`, paced. */
export function pacedLocalActivities<A>(options: LocalActivityOptions): LocalActivityInterfaceFor<A> {
  return paced(proxyLocalActivities<A>(options))
}
