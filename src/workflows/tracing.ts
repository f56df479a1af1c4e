/**
 * The run's spans, made inside the workflow (OpenTelemetry GenAI conventions): `invoke_agent tether` for the
 * run, `chat <model>` per model turn, `execute_tool <tool>` per call with its verdict, rule and layer,
 * `approval <act>` per wait for people, and `gate`. Each is the active span while its activities are
 * scheduled, so the SDK's own activity spans nest under it.
 *
 * Replay-safe: with Temporal's OpenTelemetry interceptors installed, spans are made with the workflow's own
 * clock and random ids, and exported through a sink the SDK does not call while replaying; without them,
 * every call here is a no-op. Nothing here decides anything. No content: names, counts, verdicts and ids
 * only (excerpts, when a worker turns them on, are added by the activities).
 */
import { type Attributes, context, type Span, SpanStatusCode, trace } from '@opentelemetry/api'
import { ContinueAsNew } from '@temporalio/workflow'
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

/**
 * Runs `work` as the active span `name`. Plain promise chaining, not async functions: inside the workflow
 * sandbox every promise is costly (Temporal's promise hook captures a stack trace for each one, for the
 * stack-trace query), and an async wrapper with its awaits makes several per span where this makes one.
 */
function traced<T>(
  name: string,
  attributes: Attributes,
  work: () => Promise<T>,
  after?: (span: Span, result: T) => void,
): Promise<T> {
  const span = trace.getTracer(INSTRUMENTATION).startSpan(name, { attributes })
  const failed = (error: unknown) => {
    if (!(error instanceof ContinueAsNew)) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message })
    }
    span.end()
    throw error
  }
  let running: Promise<T>
  try {
    running = context.with(trace.setSpan(context.active(), span), work)
  } catch (error) {
    return failed(error)
  }
  return running.then((result) => {
    after?.(span, result)
    span.end()
    return result
  }, failed)
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
      span.setAttributes({
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
      span.updateName(`${SPAN.chat} ${model}`)
      span.setAttributes({
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
      span.setAttributes({
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
        span.setAttributes({ [ATTR.answer]: resolved.decision, [ATTR.decidedBy]: resolved.decidedBy })
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
      span.setAttributes({
        [ATTR.gatePassed]: gate.passed,
        [ATTR.status]: gate.status,
        ...(gate.exitCode !== undefined ? { [ATTR.exitCode]: gate.exitCode } : {}),
      }),
  )
}
