/**
 * What tracing costs inside the workflow sandbox: a traced run's spans leave in one sink call per workflow
 * activation, not one per span (each sink call copies the workflow info out of the sandbox), and name their parents
 * within the run.
 */
import { readFile } from 'node:fs/promises'
import type { SerializableSpan } from '@temporalio/interceptors-opentelemetry'
import { Worker } from '@temporalio/worker'
import { describe, expect, it } from 'vitest'
import { OTEL_WORKFLOW_INTERCEPTORS } from '../../../src/embed/telemetry.js'

const historiesDir = new URL('../../histories/', import.meta.url)
const workflowsPath = new URL('../../support/workflows.ts', import.meta.url).pathname

describe('a traced run in the workflow sandbox', () => {
  it('exports the spans of an activation in one sink call, each under a span of its own trace', async () => {
    const name = 'approval-approved.traced'
    const history = JSON.parse(await readFile(new URL(`${name}.json`, historiesDir), 'utf8'))
    const calls: SerializableSpan[][] = []
    const sinks = {
      exporter: {
        export: {
          fn: (_info: unknown, spans: SerializableSpan[]) => {
            calls.push(spans)
          },
          callDuringReplay: true,
        },
      },
    }
    await Worker.runReplayHistory(
      { workflowsPath, interceptors: { workflowModules: [OTEL_WORKFLOW_INTERCEPTORS] }, sinks },
      history,
      name,
    )
    const tasks = (history.events as Array<{ eventType: string }>).filter(
      (event) => event.eventType === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED',
    ).length
    const spans = calls.flat()
    // Temporal's interceptors made one sink call per span; an activation's spans now leave together.
    expect(calls.length).toBeLessThan(spans.length)
    expect(calls.filter((batch) => batch.length > 1).length).toBeGreaterThan(tasks / 2)
    const byId = new Map(spans.map((span) => [span.spanContext.spanId, span]))
    const [run] = spans.filter((span) => span.name === 'RunWorkflow:agentRun')
    if (!run) throw new Error('no RunWorkflow span')
    // An answer that carries no trace context starts a trace of its own, as with Temporal's interceptors.
    const elsewhere = spans.filter((span) => span.spanContext.traceId !== run.spanContext.traceId)
    expect(elsewhere.map((span) => span.name)).toEqual(['HandleUpdate:decide'])
    for (const span of spans) {
      if (span !== run && !elsewhere.includes(span))
        expect(byId.has(span.parentSpanId as string), span.name).toBe(true)
    }
    const parentName = (span: SerializableSpan) => byId.get(span.parentSpanId as string)?.name
    const chat = spans.find((span) => span.name.startsWith('chat '))
    expect(chat && parentName(chat)).toBe('invoke_agent tether')
    const modelTurn = spans.find((span) => span.name === 'StartActivity:tetherModelTurn')
    expect(modelTurn && parentName(modelTurn)).toMatch(/^chat /)
  }, 120_000)
})
