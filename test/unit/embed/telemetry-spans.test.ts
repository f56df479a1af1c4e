/**
 * What a workflow span keeps when it reaches the worker's exporter: its own attributes, Temporal's, the
 * run's id and the workflow's identity — not the rest of the workflow info Temporal's sink adds to it.
 */
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base'
import { describe, expect, it } from 'vitest'
import { WorkerTelemetry } from '../../../src/embed/telemetry.js'

describe('a workflow span on its way out', () => {
  it('keeps its attributes and the workflow identity, and drops the rest of the workflow info', () => {
    const ended: ReadableSpan[] = []
    const capture: SpanProcessor = {
      onStart: () => undefined,
      onEnd: (span) => {
        ended.push(span)
      },
      forceFlush: async () => undefined,
      shutdown: async () => undefined,
    }
    const telemetry = new WorkerTelemetry({ content: 'off', serviceName: 'test' }, { spanProcessor: capture })
    const { exporter } = telemetry.sinks() as {
      exporter: { export: { fn: (info: unknown, spans: unknown[]) => void } }
    }
    const identity = {
      workflowId: 'run-7',
      runId: '0193-execution',
      workflowType: 'agentRun',
      taskQueue: 'tether',
      namespace: 'default',
      attempt: 1,
    }
    const own = { 'gen_ai.operation.name': 'chat', 'tether.step': 3, 'tether.audit.rows': ['steps:3'] }
    const info = {
      ...identity,
      firstExecutionRunId: '0193-execution',
      historyLength: 42,
      historySize: 9_000,
      continueAsNewSuggested: false,
      executionTimeoutMs: undefined,
      parent: undefined,
      lastResult: undefined,
      retryPolicy: { maximumAttempts: 1 },
      memo: { goal: 'fix the failing test' },
      startTime: new Date(0),
    }
    exporter.export.fn(info, [
      {
        name: 'chat scripted',
        kind: 0,
        spanContext: { traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: 1 },
        startTime: [0, 0],
        endTime: [0, 1],
        status: { code: 0 },
        attributes: { ...own },
        links: [],
        events: [],
        duration: [0, 1],
        ended: true,
        droppedAttributesCount: 0,
        droppedEventsCount: 0,
        droppedLinksCount: 0,
        instrumentationLibrary: { name: 'tether' },
      },
    ])
    expect(ended.map((span) => span.attributes)).toEqual([{ ...own, ...identity, 'tether.run.id': 'run-7' }])
  })
})
