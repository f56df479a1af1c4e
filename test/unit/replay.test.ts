/** Every recorded history under test/histories replays against today's workflow code without nondeterminism. */
import { readdir, readFile } from 'node:fs/promises'
import type { SerializableSpan } from '@temporalio/interceptors-opentelemetry'
import { Worker } from '@temporalio/worker'
import { describe, expect, it } from 'vitest'
import { OTEL_WORKFLOW_INTERCEPTORS } from '../../src/embed/telemetry.js'

const historiesDir = new URL('../histories/', import.meta.url)

/**
 * The recorded histories: `*.traced.json` were recorded by a worker that traces (Temporal's OpenTelemetry
 * workflow interceptors in its bundle), the others by one that does not. Each replays the way it was made:
 * the interceptors change when the workflow's code resumes, so a run is replayed with them or without them
 * as it ran (docs/observability.md#turning-tracing-on-or-off). Each replays under its file's name as the
 * workflow id, less any `.before-<change>` (the shape kept from before a change): a history with signed
 * answers must be recorded by a run of that id (a signature names its run).
 */
async function histories(traced: boolean) {
  const files = (await readdir(historiesDir))
    .filter((name) => name.endsWith('.json') && name.endsWith('.traced.json') === traced)
    .sort()
  expect(files.length).toBeGreaterThan(0)
  return Promise.all(
    files.map(async (name) => ({
      workflowId: name.replace(/\.json$/, '').replace(/\.before-[a-z-]+/, ''),
      history: JSON.parse(await readFile(new URL(name, historiesDir), 'utf8')),
    })),
  )
}

const workflowsPath = new URL('../support/workflows.ts', import.meta.url).pathname

describe('recorded histories', () => {
  it('replay without nondeterminism', async () => {
    const recorded = await histories(false)
    const results: Array<{ workflowId: string; error?: unknown }> = []
    for await (const result of Worker.runReplayHistories({ workflowsPath }, recorded)) results.push(result)
    expect(results.map((r) => r.workflowId)).toEqual(recorded.map((h) => h.workflowId))
    for (const result of results) expect(result.error, result.workflowId).toBeUndefined()
  }, 120_000)
})

describe('histories a tracing worker recorded, replayed by one', () => {
  const options = { workflowsPath, interceptors: { workflowModules: [OTEL_WORKFLOW_INTERCEPTORS] } }

  /** Every span the workflow makes while replaying, through a sink that is called during replay too. */
  async function replaySpans(): Promise<Array<{ name: string; traceId: string; spanId: string }>> {
    const spans: Array<{ name: string; traceId: string; spanId: string }> = []
    const sinks = {
      exporter: {
        export: {
          fn: (_info: unknown, batch: SerializableSpan[]) => {
            for (const span of batch) {
              spans.push({
                name: span.name,
                traceId: span.spanContext.traceId,
                spanId: span.spanContext.spanId,
              })
            }
          },
          callDuringReplay: true,
        },
      },
    }
    for await (const result of Worker.runReplayHistories({ ...options, sinks }, await histories(true))) {
      expect(result.error, result.workflowId).toBeUndefined()
    }
    return spans
  }

  it('replay without nondeterminism, make the same spans with the same ids each time, and export none', async () => {
    const first = await replaySpans()
    const kinds = new Set(first.map((span) => span.name.split(' ')[0]))
    for (const kind of ['invoke_agent', 'chat', 'execute_tool', 'approval', 'gate'])
      expect(kinds).toContain(kind)
    expect(await replaySpans()).toEqual(first)
    // The sink a tracing worker has is not called for replayed work.
    const exported: unknown[] = []
    const sinks = {
      exporter: {
        export: {
          fn: (_info: unknown, batch: unknown[]) => {
            exported.push(...batch)
          },
        },
      },
    }
    for await (const result of Worker.runReplayHistories({ ...options, sinks }, await histories(true))) {
      expect(result.error, result.workflowId).toBeUndefined()
    }
    expect(exported).toEqual([])
  }, 240_000)
})
