/**
 * The names tether's traces and metrics use, shared by the workflow (its spans), the activities (their spans
 * and the metrics) and the documentation (docs/observability.md lists each). Span attributes follow the
 * OpenTelemetry GenAI semantic conventions where they have a name (`gen_ai.*`); the rest are `tether.*`.
 * Pure: the workflow bundle imports it.
 */

/** The tracer and meter name. */
export const INSTRUMENTATION = 'tether'

export const SPAN = {
  /** The run: one per execution of agentRun (a continued run is a further one in the same trace). */
  run: 'invoke_agent tether',
  /** A model turn: `chat <model>`. */
  chat: 'chat',
  /** A tool call, judged, perhaps approved, then run (or refused): `execute_tool <tool>`. */
  tool: 'execute_tool',
  /** A wait for people to answer an approval: `approval <act>`. */
  approval: 'approval',
  /** The verification gate. */
  gate: 'gate',
} as const

export const ATTR = {
  operation: 'gen_ai.operation.name',
  agentName: 'gen_ai.agent.name',
  agentId: 'gen_ai.agent.id',
  conversation: 'gen_ai.conversation.id',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  /** Bounded excerpts, only with `TETHER_TRACE_CONTENT=excerpts`. */
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  runId: 'tether.run.id',
  /** The audit rows a span corresponds to: `table:key` each (docs/observability.md#traces). */
  auditRows: 'tether.audit.rows',
  step: 'tether.step',
  call: 'tether.call',
  cachedInputTokens: 'tether.usage.cached_input_tokens',
  costUsd: 'tether.cost.usd',
  outcome: 'tether.outcome',
  act: 'tether.act',
  verdict: 'tether.verdict',
  rule: 'tether.rule',
  layer: 'tether.layer',
  program: 'tether.command.program',
  status: 'tether.command.status',
  exitCode: 'tether.command.exit_code',
  limitHit: 'tether.sandbox.limit_hit',
  approvalId: 'tether.approval.id',
  approvers: 'tether.approval.approvers',
  answer: 'tether.approval.answer',
  decidedBy: 'tether.approval.decided_by',
  gatePassed: 'tether.gate.passed',
  /** Bounded excerpts, only with `TETHER_TRACE_CONTENT=excerpts`. */
  argvExcerpt: 'tether.command.argv',
  outputExcerpt: 'tether.command.output',
  fileExcerpt: 'tether.file.content',
} as const

export const METRIC = {
  runs: 'tether.runs',
  steps: 'tether.steps',
  tokens: 'tether.model.tokens',
  cost: 'tether.model.cost',
  verdicts: 'tether.verdicts',
  approvals: 'tether.approvals',
  approvalWait: 'tether.approval.wait',
  timeToAnswer: 'tether.approval.time_to_answer',
  sandboxLimits: 'tether.sandbox.limits',
  gate: 'tether.gate',
} as const

/** `table:key`: an audit row as a span names it (`steps:3`, `exec_results:3/0`, `approvals:<id>`). */
export function auditRow(table: string, ...key: Array<string | number>): string {
  return `${table}:${key.join('/')}`
}
