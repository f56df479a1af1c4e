/**
 * Traces and metrics on a real collector: a user's workflow starts agentRun as a child on a Worker with the
 * tether plugin, tracing to Jaeger (v2, built from the Go module proxy) over OTLP/HTTP and serving metrics on
 * a Prometheus endpoint. The run's trace is read back through Jaeger's query API: one trace holds the
 * parent workflow and the child run, with the GenAI spans (invoke_agent, chat per turn, execute_tool per
 * call with its verdict, the approval wait, the gate), each naming its run and audit rows — and no prompt
 * text, unless the worker turns excerpts on. The Prometheus scrape is parsed and checked.
 */
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { NativeConnection, Worker } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { answerApproval, draftAnswer } from '../../src/embed/client.js'
import { tetherPlugin } from '../../src/embed/plugin.js'
import { WorkerTelemetry } from '../../src/embed/telemetry.js'
import type { TelemetryConfig } from '../../src/stack/index.js'
import { freePort } from '../../src/stack/process.js'
import { npmWorkspace, openTestAudit, testPolicy, writeScript } from '../support/agent.js'
import { findTraces, type Jaeger, type JaegerTrace, startJaeger } from '../support/jaeger.js'
import { connectClient, recordHistory, uniqueTaskQueue } from '../support/temporal.js'

let audit: AuditStore
let client: Awaited<ReturnType<typeof connectClient>>
let jaeger: Jaeger

beforeAll(async () => {
  audit = await openTestAudit()
  client = await connectClient()
  jaeger = await startJaeger()
}, 3_600_000)

afterAll(async () => {
  await jaeger?.stop()
  await client?.close()
  await audit?.close()
})

const usage = { inputTokens: 1_000, outputTokens: 200 }

/**
 * Runs the user's `nightlyFix` (which starts agentRun as a child) on a traced Worker: a refused `rm`, an
 * `npm test` that fails, a `touch` an approver approves, the fix, the gate. Returns the child's run id and
 * what the worker's Prometheus endpoint served while it was up.
 */
async function tracedRun(settings: TelemetryConfig, goal: string) {
  const ws = await npmWorkspace()
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') })
  const telemetry = new WorkerTelemetry(settings)
  try {
    const taskQueue = uniqueTaskQueue('traced')
    const worker = await Worker.create({
      connection,
      namespace: inject('namespace'),
      taskQueue,
      workflowsPath: fileURLToPath(new URL('../fixtures/embedding/workflows.ts', import.meta.url)),
      plugins: [
        tetherPlugin({
          audit,
          telemetry,
          prices: { source: 'test', models: [{ pattern: 'scripted:*', price: { input: 3, output: 15 } }] },
        }),
      ],
    })
    const model = `scripted:${await writeScript(ws.path, {
      turns: [
        { toolCalls: [{ name: 'exec', args: { argv: ['rm', '-rf', 'src'] } }], usage },
        { toolCalls: [{ name: 'exec', args: { argv: ['npm', 'test'] } }], usage },
        { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'NOTES'] } }], usage },
        {
          toolCalls: [
            { name: 'edit_file', args: { path: 'src/math.js', search: 'a - b', replace: 'a + b' } },
          ],
          usage,
        },
        { text: 'fixed', usage },
      ],
    })}`
    const workflowId = `nightly-${taskQueue}`
    const runId = `${workflowId}-agent`
    const scrape = await worker.runUntil(async () => {
      const done = client.client.workflow.execute('nightlyFix', {
        taskQueue,
        workflowId,
        args: [
          {
            contract: { goal, workspace: ws.path, verification: { command: ['npm', 'test'] }, model },
            policy: testPolicy().toSpec(),
          },
        ],
      })
      let approval: Awaited<ReturnType<typeof audit.pendingApprovals>>[number] | undefined
      await expect
        .poll(async () => (approval = (await audit.pendingApprovals({ runId }))[0]), { timeout: 60_000 })
        .toBeDefined()
      if (!approval) throw new Error('no approval')
      await answerApproval(
        client.client,
        runId,
        draftAnswer(approval, { decision: 'approve', approver: 'carol' }),
      )
      expect(await done).toBe(`agent run ${runId} ended verified after 5 steps`)
      // Replayed by the tracing replay test: a traced run's history, with an approval answered by Update.
      if (settings.content === 'off')
        await recordHistory(client.client.workflow.getHandle(runId), 'approval-approved.traced')
      const url = telemetry.prometheusUrl
      return url ? (await fetch(url)).text() : ''
    })
    return { runId, workflowId, scrape }
  } finally {
    await connection.close()
    await ws.cleanup()
  }
}

/** The trace holding run `runId`'s invoke_agent span, once Jaeger has it all. */
async function traceOf(service: string, runId: string): Promise<JaegerTrace> {
  let found: JaegerTrace | undefined
  await expect
    .poll(
      async () => {
        found = (await findTraces(jaeger, service)).find((trace) =>
          trace.spans.some(
            (span) => span.operationName === 'invoke_agent tether' && tag(span, 'tether.run.id') === runId,
          ),
        )
        // The parent's own span ends last: the trace is whole when it is there.
        return found?.spans.some((span) => span.operationName === 'RunWorkflow:nightlyFix') ?? false
      },
      { timeout: 60_000, interval: 500 },
    )
    .toBe(true)
  return found as JaegerTrace
}

type JaegerSpan = JaegerTrace['spans'][number]

function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value
}

function parentOf(trace: JaegerTrace, span: JaegerSpan): JaegerSpan | undefined {
  const ref = span.references.find((r) => r.refType === 'CHILD_OF')
  return ref && trace.spans.find((s) => s.spanID === ref.spanID)
}

function ancestors(trace: JaegerTrace, span: JaegerSpan): string[] {
  const names: string[] = []
  for (let at = parentOf(trace, span); at; at = parentOf(trace, at)) names.push(at.operationName)
  return names
}

/** `name{labels} value` lines of a Prometheus text exposition, as name → [{labels, value}]. */
function parsePrometheus(
  text: string,
): Map<string, Array<{ labels: Record<string, string>; value: number }>> {
  const samples = new Map<string, Array<{ labels: Record<string, string>; value: number }>>()
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[key as string] = value as string
    const name = match[1] as string
    samples.set(name, [...(samples.get(name) ?? []), { labels, value: Number(match[3]) }])
  }
  return samples
}

describe('a traced worker', () => {
  it('exports one trace per run through a parent workflow, with GenAI spans, row ids and no prompt text; Prometheus counts it', async () => {
    const service = `tether-test-${randomUUID().slice(0, 8)}`
    const marker = `GOAL-${randomUUID()}`
    const port = await freePort()
    const { runId, workflowId, scrape } = await tracedRun(
      {
        traces: { url: `${jaeger.otlpHttp}/v1/traces`, protocol: 'http/protobuf' },
        prometheus: { host: '127.0.0.1', port },
        content: 'off',
        serviceName: service,
      },
      `${marker}: make the tests pass`,
    )
    const trace = await traceOf(service, runId)
    const named = (name: string) => trace.spans.filter((span) => span.operationName === name)
    const [run] = named('invoke_agent tether')
    if (!run) throw new Error('no invoke_agent span')

    // The parent's trace holds the child run.
    expect(ancestors(trace, run)).toEqual([
      'RunWorkflow:agentRun',
      'StartChildWorkflow:agentRun',
      'RunWorkflow:nightlyFix',
    ])
    expect(tag(named('RunWorkflow:nightlyFix')[0] as JaegerSpan, 'tether.run.id')).toBe(workflowId)
    // Every span names its run (the parent's its own), and the run's spans their audit rows.
    for (const span of trace.spans) expect(tag(span, 'tether.run.id'), span.operationName).toBeDefined()
    expect(tag(run, 'gen_ai.operation.name')).toBe('invoke_agent')
    expect(tag(run, 'tether.outcome')).toBe('verified')
    expect(tag(run, 'tether.audit.rows')).toBe(JSON.stringify([`runs:${runId}`]))

    const chats = trace.spans.filter((span) => span.operationName.startsWith('chat '))
    expect(chats.map((span) => span.operationName)).toEqual(Array(5).fill(chats[0]?.operationName))
    expect(chats[0]?.operationName).toMatch(/^chat scripted:/)
    for (const chat of chats) {
      expect(parentOf(trace, chat)?.operationName).toBe('invoke_agent tether')
      expect(tag(chat, 'gen_ai.usage.input_tokens')).toBe(1_000)
      expect(tag(chat, 'gen_ai.usage.output_tokens')).toBe(200)
      expect(tag(chat, 'tether.cost.usd')).toBeCloseTo(0.006)
      expect(String(tag(chat, 'tether.audit.rows'))).toMatch(/steps:\d/)
    }
    // The model activity's span nests under its turn (through the SDK's own activity spans).
    const modelActivity = named('RunActivity:tetherModelTurn')[0] as JaegerSpan
    expect(ancestors(trace, modelActivity).slice(0, 2)).toEqual([
      'StartActivity:tetherModelTurn',
      expect.stringMatching(/^chat /),
    ])

    const tools = trace.spans.filter((span) => span.operationName.startsWith('execute_tool '))
    const byProgram = (program: string) =>
      tools.find((span) => tag(span, 'tether.command.program') === program)
    expect(byProgram('rm')?.tags).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: 'tether.verdict', value: 'deny' }),
        expect.objectContaining({ key: 'tether.rule', value: 'rm*' }),
        expect.objectContaining({ key: 'tether.layer', value: 'base' }),
      ]),
    )
    expect(tag(byProgram('npm') as JaegerSpan, 'tether.verdict')).toBe('allow')
    expect(tag(byProgram('npm') as JaegerSpan, 'tether.command.exit_code')).toBe(1)
    expect(tag(byProgram('touch') as JaegerSpan, 'tether.approval.id')).toBeDefined()
    expect(tools.find((span) => span.operationName === 'execute_tool edit_file')).toBeDefined()
    const [approval] = named('approval exec')
    expect(approval && tag(approval, 'tether.approval.answer')).toBe('approved')
    expect(approval && tag(approval, 'tether.approval.decided_by')).toBe('carol')
    const [gate] = named('gate')
    expect(gate && tag(gate, 'tether.gate.passed')).toBe(true)

    // No prompt text anywhere: tags, events, process.
    expect(JSON.stringify(trace)).not.toContain(marker)

    const metrics = parsePrometheus(scrape)
    expect([...metrics.keys()]).toEqual(
      expect.arrayContaining(['tether_runs_total', 'tether_approval_wait_bucket', 'target_info']),
    )
    const sample = (name: string, labels: Record<string, string>) =>
      metrics.get(name)?.find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value
    expect(sample('tether_runs_total', { outcome: 'verified' })).toBe(1)
    expect(sample('tether_steps_total', {})).toBe(5)
    expect(sample('tether_model_tokens_total', { type: 'input' })).toBe(5_000)
    expect(sample('tether_model_cost_total', {})).toBeCloseTo(0.03)
    expect(sample('tether_verdicts_total', { act: 'exec', effect: 'deny' })).toBe(1)
    expect(sample('tether_approvals_total', { kind: 'action', decision: 'approved' })).toBe(1)
    expect(sample('tether_approval_wait_count', {})).toBe(1)
    expect(sample('tether_approval_time_to_answer_count', {})).toBe(1)
    expect(sample('tether_gate_total', { result: 'passed' })).toBe(1)
  })

  it('carries bounded excerpts of the prompt when the worker turns them on', async () => {
    const service = `tether-test-${randomUUID().slice(0, 8)}`
    const marker = `GOAL-${randomUUID()}`
    const { runId } = await tracedRun(
      {
        traces: { url: `${jaeger.otlpHttp}/v1/traces`, protocol: 'http/protobuf' },
        content: 'excerpts',
        serviceName: service,
      },
      `${marker}: make the tests pass`,
    )
    const trace = await traceOf(service, runId)
    const prompts = trace.spans.filter((span) =>
      String(tag(span, 'gen_ai.input.messages') ?? '').includes(marker),
    )
    expect(prompts.map((span) => span.operationName)).toEqual(['RunActivity:tetherModelTurn'])
  })
})
