/**
 * The workflow interceptors of a worker that traces (its `workflowModules`): the spans Temporal's own
 * OpenTelemetry interceptors make — `RunWorkflow`, `HandleSignal`, `HandleUpdate`, `StartActivity`,
 * `StartChildWorkflow`, `SignalWorkflow`, `ContinueAsNew`, `StartNexusOperation` — with the same names,
 * parentage, ids and `_tracer-data` header, so Temporal's client and activity interceptors, and workflows
 * traced by Temporal's, join the same traces. Made with tether's recorder (tracing.ts) instead: a span per
 * call and one promise, no per-span export. Update validators and queries make no span (they are not
 * replayed, so a span there would draw on the workflow's random stream only when live).
 */
import type { Attributes } from '@opentelemetry/api'
import type { Headers } from '@temporalio/common'
import { type WorkflowInterceptors, workflowInfo } from '@temporalio/workflow'
import {
  headersWith,
  type SpanRef,
  spanFromHeaders,
  TEMPORAL_LIBRARY,
  TraceRecorder,
  traceFields,
} from './tracing.js'

/** `promise`, settled `ticks` microtasks later. */
function later<T>(promise: Promise<T>, ticks: number): Promise<T> {
  let delayed = promise
  for (let i = 0; i < ticks; i++) delayed = delayed.then((value) => value)
  return delayed
}

export function interceptors(): WorkflowInterceptors {
  const recorder = TraceRecorder.install()
  const start = (name: string, parent?: SpanRef) => recorder.start(name, {}, parent, TEMPORAL_LIBRARY)
  /**
   * A workflow's run or a handler, in a span under the caller's (when its headers carry one) or the active
   * one. Its result is taken as many microtasks later as Temporal's interceptors took (they are async
   * functions awaiting one another): a handler's result can order commands against the run's own (an
   * Update's completion against a timer's cancellation), so runs they traced replay the same. Once a run
   * or answer, not per step.
   */
  const handle = <I extends { headers: Headers }, T>(
    name: string,
    input: I,
    next: (input: I) => Promise<T>,
    attributes: Attributes = {},
  ) => {
    const parent = spanFromHeaders(input.headers)
    const span = recorder.start(name, attributes, parent, TEMPORAL_LIBRARY)
    return later(
      recorder.settle(span, () => recorder.within(span, () => next(input))),
      parent ? 4 : 3,
    )
  }
  /** A call out, its span carried on in its headers. */
  const call = <I extends { headers: Headers }, T>(
    name: string,
    input: I,
    next: (input: I) => Promise<T>,
  ) => {
    const span = start(name)
    return recorder.settle(span, () => next({ ...input, headers: headersWith(input.headers, span) }))
  }
  return {
    inbound: [
      {
        execute: (input, next) => handle(`RunWorkflow:${workflowInfo().workflowType}`, input, next),
        handleSignal: (input, next) => handle(`HandleSignal:${input.signalName}`, input, next),
        handleUpdate: (input, next) =>
          handle(`HandleUpdate:${input.name}`, input, next, { temporalUpdateId: input.updateId }),
      },
    ],
    outbound: [
      {
        scheduleActivity: (input, next) => call(`StartActivity:${input.activityType}`, input, next),
        scheduleLocalActivity: (input, next) => call(`StartActivity:${input.activityType}`, input, next),
        startChildWorkflowExecution: (input, next) =>
          call(`StartChildWorkflow:${input.workflowType}`, input, next),
        signalWorkflow: (input, next) => call(`SignalWorkflow:${input.signalName}`, input, next),
        continueAsNew: (input, next) => call(`ContinueAsNew:${input.options.workflowType}`, input, next),
        startNexusOperation(input, next) {
          const span = start(`StartNexusOperation:${input.service}/${input.operation}`)
          Object.assign(span.attributes, {
            temporalNexusService: input.service,
            temporalNexusOperation: input.operation,
            temporalNexusEndpoint: input.endpoint,
          })
          return recorder.settle(span, () =>
            next({ ...input, headers: { ...input.headers, ...traceFields(span) } }),
          )
        },
      },
    ],
    internals: [
      {
        concludeActivation(input, next) {
          recorder.flush()
          return next(input)
        },
      },
    ],
  }
}
