/**
 * What the activities report to OpenTelemetry: tether's metrics (counted where the audit row is first
 * written, so a retried write does not count twice where the writer can tell), and attributes on the span
 * the SDK's activity interceptor made for the activity — the run, the audit rows, and, only when the worker
 * says `TETHER_TRACE_CONTENT=excerpts`, bounded excerpts of prompts, commands, output and file contents.
 */
import { type Attributes, createNoopMeter, type Meter, trace } from '@opentelemetry/api'
import { clipNoted } from '../present/index.js'
import { METRIC } from '../run/index.js'

/** The activities' side of a worker's telemetry (embed/telemetry.ts makes it). */
export interface ActivityTelemetry {
  /** Where tether's metrics go; none: nowhere. */
  meter?: Meter | undefined
  /** `excerpts`: bounded excerpts of content in spans; `off` (the default): none. */
  content?: 'off' | 'excerpts' | undefined
}

/** Characters of content an excerpt keeps. */
export const EXCERPT_CHARS = 1_000

/** tether's metrics (docs/observability.md#metrics). */
export class RunMetrics {
  private readonly runs
  private readonly steps
  private readonly tokens
  private readonly cost
  private readonly verdicts
  private readonly approvals
  private readonly wait
  private readonly timeToAnswer
  private readonly limits
  private readonly gates

  constructor(meter: Meter = createNoopMeter()) {
    this.runs = meter.createCounter(METRIC.runs, { description: 'Runs finished, by outcome' })
    this.steps = meter.createCounter(METRIC.steps, { description: 'Steps (model turns) recorded, by model' })
    this.tokens = meter.createCounter(METRIC.tokens, {
      description: 'Model tokens, by model and type (input, output, cached input)',
      unit: '{token}',
    })
    this.cost = meter.createCounter(METRIC.cost, {
      description: 'What model turns cost, by model',
      unit: 'USD',
    })
    this.verdicts = meter.createCounter(METRIC.verdicts, {
      description: 'Policy verdicts on tool calls, by act and effect (commands: act exec)',
    })
    this.approvals = meter.createCounter(METRIC.approvals, {
      description: 'Approvals resolved, by kind (action, budget) and decision',
    })
    this.wait = meter.createHistogram(METRIC.approvalWait, {
      description: 'How long runs waited for approvals, request to resolution',
      unit: 's',
    })
    this.timeToAnswer = meter.createHistogram(METRIC.timeToAnswer, {
      description: 'How long approvers took to answer, request to first answer',
      unit: 's',
    })
    this.limits = meter.createCounter(METRIC.sandboxLimits, {
      description: 'Commands that ran into a sandbox limit, by limit',
    })
    this.gates = meter.createCounter(METRIC.gate, {
      description: 'Verification gate results, passed or failed',
    })
  }

  runFinished(outcome: string): void {
    this.runs.add(1, { outcome })
  }

  stepRecorded(step: {
    model?: string | undefined
    inputTokens: number
    outputTokens: number
    cachedInputTokens?: number | undefined
    cost?: number | undefined
  }): void {
    const model = step.model ?? 'unknown'
    this.steps.add(1, { model })
    this.tokens.add(step.inputTokens, { model, type: 'input' })
    this.tokens.add(step.outputTokens, { model, type: 'output' })
    if (step.cachedInputTokens) this.tokens.add(step.cachedInputTokens, { model, type: 'cached_input' })
    if (step.cost !== undefined) this.cost.add(step.cost / 1_000_000, { model })
  }

  verdict(act: string, effect: string): void {
    this.verdicts.add(1, { act, effect })
  }

  approvalResolved(approval: {
    kind: 'action' | 'budget'
    decision: string
    requestedAt: number
    decidedAt: number
    firstAnswerAt?: number | undefined
  }): void {
    const attributes = { kind: approval.kind, decision: approval.decision }
    this.approvals.add(1, attributes)
    this.wait.record(Math.max(0, approval.decidedAt - approval.requestedAt) / 1000, attributes)
    if (approval.firstAnswerAt !== undefined) {
      this.timeToAnswer.record(Math.max(0, approval.firstAnswerAt - approval.requestedAt) / 1000, {
        kind: approval.kind,
      })
    }
  }

  limitHit(limit: string): void {
    this.limits.add(1, { limit })
  }

  gate(passed: boolean): void {
    this.gates.add(1, { result: passed ? 'passed' : 'failed' })
  }
}

/** Sets attributes on the activity's span, when the worker traces. */
export function annotate(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes)
}

/**
 * Sets content excerpts on the activity's span, only when the worker turned them on: each value cut to
 * EXCERPT_CHARS with a note of how many more characters there were. `excerpts` is called only then.
 */
export function annotateContent(
  telemetry: ActivityTelemetry | undefined,
  excerpts: () => Record<string, string>,
): void {
  if (telemetry?.content !== 'excerpts') return
  const span = trace.getActiveSpan()
  if (!span) return
  for (const [key, text] of Object.entries(excerpts())) span.setAttribute(key, clipNoted(text, EXCERPT_CHARS))
}
