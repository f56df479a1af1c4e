/**
 * The run's spans, made inside the workflow (OpenTelemetry GenAI conventions): `invoke_agent tether` for the
 * run, `chat <model>` per model turn, `execute_tool <tool>` per call with its verdict, rule and layer,
 * `approval <act>` per wait for people, and `gate`. Each is the active span while its activities are
 * scheduled, so the activity spans nest under it.
 *
 * The recorder here is the whole of tracing inside the workflow sandbox, for tether's spans and (through
 * trace-interceptors.ts, the worker's workflow interceptors) Temporal's: plain span records, not the
 * OpenTelemetry SDK's, because in the sandbox every promise costs a stack trace (Temporal's promise hook, for
 * the stack-trace query) and the SDK's spans and Temporal's own interceptors made several per span, then left
 * one by one, each through a sink call that copies the whole workflow info out of the sandbox. Here a span is
 * an object and at most one promise, and an activation's ended spans leave in one sink call.
 *
 * Replay-safe: span times are the workflow's clock, span ids are drawn from the workflow's random stream
 * exactly as Temporal's interceptors drew them (so a run they traced replays with the same approval ids),
 * and the sink is one Temporal does not call while replaying. Without the interceptors (a worker that does
 * not trace) there is no recorder and every call here is a no-op. Nothing here decides anything. No content:
 * names, counts, verdicts and ids only (excerpts, when a worker turns them on, are added by the activities).
 */
import type { Attributes } from '@opentelemetry/api'
import { ApplicationFailureCategory, type Headers } from '@temporalio/common'
import type { OpenTelemetrySinks, SerializableSpan } from '@temporalio/interceptors-opentelemetry'
import {
  ApplicationFailure,
  AsyncLocalStorage,
  ContinueAsNew,
  defaultPayloadConverter,
  proxySinks,
} from '@temporalio/workflow'
import type {
  ActionVerdict,
  AgentRunResult,
  GateSummary,
  ModelTurn,
  PendingApproval,
  Resolution,
  ToolSummary,
} from '../run/index.js'
import { ATTR, auditRow, INSTRUMENTATION, SPAN } from '../run/index.js'

/** A span's place in its trace: what a child names as its parent, and what a header carries on. */
export interface SpanRef {
  traceId: string
  spanId: string
  /** The trace is recorded (W3C `sampled`): a span under an unsampled parent is propagated, not exported. */
  sampled: boolean
  traceState?: string | undefined
}

/** A span being recorded. */
export interface OpenSpan extends SpanRef {
  name: string
  parentSpanId?: string | undefined
  startMs: number
  attributes: Attributes
  library: string
}

/** The header Temporal's OpenTelemetry interceptors carry trace context in (a payload of W3C fields). */
export const TRACE_HEADER = '_tracer-data'

/** The library Temporal's own workflow spans are named by. */
export const TEMPORAL_LIBRARY = '@temporalio/interceptor-workflow'

/** Where a traced workflow keeps its recorder: a global, which Temporal keeps per workflow in a shared context. */
const RECORDER = Symbol.for('tether.trace.recorder')

/**
 * One workflow's spans: the active one (carried across awaits by the workflow's AsyncLocalStorage, as
 * Temporal's context manager did), and the ended ones of this activation, exported together.
 */
export class TraceRecorder {
  private readonly active = new AsyncLocalStorage<SpanRef>()
  private ended: SerializableSpan[] = []

  /** Installs this workflow's recorder (the interceptors do, when the worker traces). */
  static install(): TraceRecorder {
    const recorder = new TraceRecorder()
    ;(globalThis as Record<symbol, unknown>)[RECORDER] = recorder
    return recorder
  }

  static current(): TraceRecorder | undefined {
    return (globalThis as Record<symbol, TraceRecorder | undefined>)[RECORDER]
  }

  /** A new span under `parent` (by default the active one); a span without one starts a trace. */
  start(
    name: string,
    attributes: Attributes = {},
    parent: SpanRef | undefined = this.active.getStore(),
    library = INSTRUMENTATION,
  ): OpenSpan {
    // The order and count of draws are those of OpenTelemetry's browser id generator, which Temporal's
    // interceptors used: the span id, then (for a new trace) the trace id.
    const spanId = randomHex(16)
    return {
      name,
      spanId,
      traceId: parent ? parent.traceId : randomHex(32),
      sampled: parent ? parent.sampled : true,
      traceState: parent?.traceState,
      parentSpanId: parent?.spanId,
      startMs: Date.now(),
      attributes,
      library,
    }
  }

  /** Runs `work` with `span` as the active span. */
  within<T>(span: SpanRef, work: () => T): T {
    return this.active.run(span, work)
  }

  /**
   * Ends `span` now. An error sets its status (a continue-as-new is none, a benign failure leaves it unset);
   * Temporal's spans that succeed are `OK`, as its interceptors made them.
   */
  end(span: OpenSpan, error?: unknown): void {
    if (!span.sampled) return
    const endMs = Date.now()
    const failed = error !== undefined && !(error instanceof ContinueAsNew)
    const benign = error instanceof ApplicationFailure && error.category === ApplicationFailureCategory.BENIGN
    const status = !failed
      ? { code: span.library === TEMPORAL_LIBRARY ? 1 : 0 }
      : benign
        ? { code: 0 }
        : { code: 2, message: String((error as Error)?.message ?? error) }
    this.ended.push({
      name: span.name,
      kind: 0,
      spanContext: {
        traceId: span.traceId,
        spanId: span.spanId,
        traceFlags: 1,
        ...(span.traceState ? { traceState: span.traceState } : {}),
      },
      parentSpanId: span.parentSpanId,
      startTime: hrTime(span.startMs),
      endTime: hrTime(endMs),
      status,
      attributes: span.attributes,
      links: [],
      events: [],
      duration: hrTime(endMs - span.startMs),
      ended: true,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
      instrumentationLibrary: { name: span.library },
    } as unknown as SerializableSpan)
  }

  /**
   * Runs `work` and ends `span` when its promise settles: one promise, not an async function's several. A
   * synchronous throw ends the span too, and becomes the promise's rejection.
   */
  settle<T>(span: OpenSpan, work: () => Promise<T>, after?: (result: T) => void): Promise<T> {
    let running: Promise<T>
    try {
      running = work()
    } catch (error) {
      this.end(span, error)
      return Promise.reject(error)
    }
    return running.then(
      (result) => {
        after?.(result)
        this.end(span)
        return result
      },
      (error: unknown) => {
        this.end(span, error)
        throw error
      },
    )
  }

  /** The activation's ended spans, in one sink call (Temporal drops it while replaying). */
  flush(): void {
    if (this.ended.length === 0) return
    const spans = this.ended
    this.ended = []
    proxySinks<OpenTelemetrySinks>().exporter.export(spans)
  }
}

/** `headers` with `span` carried on, as Temporal's interceptors carry it (a W3C `traceparent`). */
export function headersWith(headers: Headers, span: SpanRef): Headers {
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload(traceFields(span)) }
}

/** The W3C trace-context fields of `span`. */
export function traceFields(span: SpanRef): Record<string, string> {
  return {
    traceparent: `00-${span.traceId}-${span.spanId}-${span.sampled ? '01' : '00'}`,
    ...(span.traceState ? { tracestate: span.traceState } : {}),
  }
}

/** The span a caller carried in `headers`, if it carried a valid one. */
export function spanFromHeaders(headers: Headers): SpanRef | undefined {
  const payload = headers[TRACE_HEADER]
  if (!payload) return undefined
  const fields = defaultPayloadConverter.fromPayload<Record<string, string> | undefined>(payload)
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(fields?.traceparent ?? '')
  if (!match || /^0+$/.test(match[1] as string) || /^0+$/.test(match[2] as string)) return undefined
  return {
    traceId: match[1] as string,
    spanId: match[2] as string,
    sampled: (Number.parseInt(match[3] as string, 16) & 1) === 1,
    traceState: fields?.tracestate,
  }
}

/** `length` hex digits from the workflow's random stream, one draw each. */
function randomHex(length: number): string {
  let id = ''
  for (let i = 0; i < length; i++) id += Math.floor(Math.random() * 16).toString(16)
  return id
}

function hrTime(ms: number): [number, number] {
  const seconds = Math.floor(ms / 1000)
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)]
}

/**
 * Runs `work` as the active span `name` when the workflow is traced; else just runs it. `after` adds what
 * the result says.
 */
function traced<T>(
  name: string,
  attributes: Attributes,
  work: () => Promise<T>,
  after?: (span: OpenSpan, result: T) => void,
): Promise<T> {
  const recorder = TraceRecorder.current()
  if (!recorder) return work()
  const span = recorder.start(name, attributes)
  return recorder.settle(span, () => recorder.within(span, work), after && ((result) => after(span, result)))
}

/** The run (this execution of it). */
export function traceRun(runId: string, work: () => Promise<AgentRunResult>): Promise<AgentRunResult> {
  return traced(
    SPAN.run,
    {
      [ATTR.operation]: 'invoke_agent',
      [ATTR.agentName]: 'tether',
      [ATTR.agentId]: runId,
      [ATTR.conversation]: runId,
      [ATTR.runId]: runId,
      [ATTR.auditRows]: [auditRow('runs', runId)],
    },
    work,
    (span, result) =>
      Object.assign(span.attributes, {
        [ATTR.outcome]: result.outcome,
        [ATTR.inputTokens]: result.inputTokens,
        [ATTR.outputTokens]: result.outputTokens,
        ...(result.cost !== undefined ? { [ATTR.costUsd]: result.cost / 1_000_000 } : {}),
      }),
  )
}

/** One model turn; named for its model once the turn says which answered. */
export function traceTurn(runId: string, step: number, work: () => Promise<ModelTurn>): Promise<ModelTurn> {
  return traced(
    SPAN.chat,
    {
      [ATTR.operation]: 'chat',
      [ATTR.runId]: runId,
      [ATTR.step]: step,
      [ATTR.auditRows]: [auditRow('steps', step)],
    },
    work,
    (span, turn) => {
      const model = turn.model ?? turn.modelId
      span.name = `${SPAN.chat} ${model}`
      Object.assign(span.attributes, {
        ...(turn.model ? { [ATTR.requestModel]: turn.model, [ATTR.provider]: turn.model.split(':')[0] } : {}),
        [ATTR.responseModel]: turn.modelId,
        [ATTR.inputTokens]: turn.usage.inputTokens,
        [ATTR.outputTokens]: turn.usage.outputTokens,
        ...(turn.usage.cachedInputTokens ? { [ATTR.cachedInputTokens]: turn.usage.cachedInputTokens } : {}),
        ...(turn.finishReason ? { [ATTR.finishReasons]: [turn.finishReason] } : {}),
        ...(turn.cost !== undefined ? { [ATTR.costUsd]: turn.cost / 1_000_000 } : {}),
      })
    },
  )
}

/**
 * One tool call, from its verdict to its result: the command's program (never its arguments), the final
 * verdict (after an approval, the verdict it was judged again to) with the rule and layer that decided it,
 * and the audit rows it wrote.
 */
export function traceTool(
  runId: string,
  step: number,
  call: { index: number; id: string; name: string; argv?: readonly string[] | undefined },
  work: () => Promise<{ verdict: ActionVerdict; summary?: ToolSummary; approvalId?: string | undefined }>,
): Promise<unknown> {
  return traced(
    `${SPAN.tool} ${call.name}`,
    {
      [ATTR.operation]: 'execute_tool',
      [ATTR.toolName]: call.name,
      [ATTR.toolCallId]: call.id,
      [ATTR.runId]: runId,
      [ATTR.step]: step,
      [ATTR.call]: call.index,
      ...(call.argv?.[0] !== undefined ? { [ATTR.program]: call.argv[0] } : {}),
    },
    work,
    (span, { verdict, summary, approvalId }) => {
      const rows = [
        ...(verdict.effect === 'deny' ? [auditRow('policy_events', step, call.index)] : []),
        ...(call.name === 'exec' && summary ? [auditRow('exec_results', step, call.index)] : []),
        ...(approvalId ? [auditRow('approvals', approvalId)] : []),
      ]
      Object.assign(span.attributes, {
        [ATTR.act]: verdict.act,
        [ATTR.verdict]: verdict.effect,
        ...(verdict.rule !== undefined ? { [ATTR.rule]: verdict.rule } : {}),
        ...(verdict.layer !== undefined ? { [ATTR.layer]: verdict.layer } : {}),
        ...(approvalId ? { [ATTR.approvalId]: approvalId } : {}),
        ...(summary?.status ? { [ATTR.status]: summary.status } : {}),
        ...(summary?.exitCode !== undefined ? { [ATTR.exitCode]: summary.exitCode } : {}),
        [ATTR.auditRows]: rows,
      })
    },
  )
}

/** A wait for people: who may answer, and who answered how. */
export function traceApproval(
  runId: string,
  request: PendingApproval,
  work: () => Promise<void>,
  resolution: () => Resolution | undefined,
): Promise<void> {
  return traced(
    `${SPAN.approval} ${request.act}`,
    {
      [ATTR.runId]: runId,
      [ATTR.step]: request.step,
      [ATTR.call]: request.call,
      [ATTR.act]: request.act,
      [ATTR.approvalId]: request.approvalId,
      [ATTR.approvers]: request.approvers,
      ...(request.rule !== undefined ? { [ATTR.rule]: request.rule } : {}),
      ...(request.layer !== undefined ? { [ATTR.layer]: request.layer } : {}),
      [ATTR.auditRows]: [auditRow('approvals', request.approvalId)],
    },
    work,
    (span) => {
      const resolved = resolution()
      if (resolved)
        Object.assign(span.attributes, {
          [ATTR.answer]: resolved.decision,
          [ATTR.decidedBy]: resolved.decidedBy,
        })
    },
  )
}

/** The verification gate. */
export function traceGate(
  runId: string,
  step: number,
  work: () => Promise<GateSummary>,
): Promise<GateSummary> {
  return traced(
    SPAN.gate,
    {
      [ATTR.runId]: runId,
      [ATTR.step]: step,
      [ATTR.auditRows]: [auditRow('gate_events', step), auditRow('exec_results', step, -1)],
    },
    work,
    (span, gate) =>
      Object.assign(span.attributes, {
        [ATTR.gatePassed]: gate.passed,
        [ATTR.status]: gate.status,
        ...(gate.exitCode !== undefined ? { [ATTR.exitCode]: gate.exitCode } : {}),
      }),
  )
}
