/**
 * tether as an MCP server: tools to start a governed run, follow it, answer its approvals and cancel it,
 * and — for clients that speak MCP Tasks — the run as the task (task id = run id), with a pending approval
 * as `input_required`, answered through the task with a signed answer (the statement `tether approve` and
 * the inbox sign). Nothing lives in this process: every answer is read from Temporal and the audit, so a
 * client, this server and the worker may all restart while a run waits and `tasks/get` still answers right.
 *
 * What a client may choose is bounded by the operator: the policy is a *name* from the operator's allowlist
 * (a client never writes one), the workspace must lie under one of the operator's roots, and the gate must
 * be allowed by that policy (it runs unattended).
 */
import { randomUUID } from 'node:crypto'
import { readdirSync, realpathSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { extname, isAbsolute, join, resolve, sep } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  CancelTaskRequestSchema,
  ElicitResultSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type Task,
} from '@modelcontextprotocol/sdk/types.js'
import { type Client, WorkflowNotFoundError } from '@temporalio/client'
import { z } from 'zod'
import type { ApprovalRow, AuditStore } from '../audit/index.js'
import { plantedGitFiles } from '../exec/index.js'
import { loadPolicyFile, Policy } from '../policy/index.js'
import { plantedGitWarning } from '../present/index.js'
import { ContractError, type TaskContractInput } from '../run/index.js'
import { detectToolchain } from '../workspace/index.js'
import { answerApproval, RunIdTakenError, startAgentRun, updateRejection } from './client.js'

export interface TetherMcpServerOptions {
  client: Client
  audit: AuditStore
  taskQueue: string
  /** The policies a client may name: the operator's allowlist, name → policy. */
  policies: ReadonlyMap<string, Policy>
  /** Folders a run's workspace must lie in (resolved, links followed). Empty: no client may start a run. */
  workspaceRoots: readonly string[]
  /** How often a waiting `tasks/result` looks at the run again (default 1 s). */
  pollMs?: number
}

/** How often a client should poll `tasks/get`. */
const POLL_INTERVAL_MS = 2_000
/** Where an elicitation carries the approval it asks about: the fields a signed statement covers. */
export const APPROVAL_META_KEY = 'dev.tether/approval'
/** How long `agent_status` may wait for the run to change. */
const MAX_WAIT_SECONDS = 60

const startInput = z
  .object({
    goal: z.string().min(1).describe('What the run should achieve.'),
    workspace: z.string().min(1).describe("The project folder, under one of the operator's workspace roots."),
    policy: z
      .string()
      .min(1)
      .describe("The name of one of the operator's policies (see the tool's description)."),
    verify: z
      .array(z.string())
      .optional()
      .describe(
        'The verification command as argv; absent: the test command detected from the workspace; [] for none.',
      ),
    model: z
      .string()
      .min(1)
      .optional()
      .describe('A model choice, e.g. openrouter:<model>; default: the worker’s.'),
    maxSteps: z.number().int().min(1).optional(),
  })
  .strict()
const runInput = z.object({ runId: z.string().min(1) }).strict()
const statusInput = z
  .object({
    runId: z.string().min(1),
    waitSeconds: z
      .number()
      .min(0)
      .max(MAX_WAIT_SECONDS)
      .optional()
      .describe('Wait up to this long for the run to end or to need an answer.'),
  })
  .strict()
/** An answer, flat, so that every client can send it (an elicitation form, the Inspector's --tool-arg). */
const answerFields = {
  approvalId: z.string().min(1),
  decision: z.enum(['approve', 'deny']),
  approver: z.string().min(1).describe('Your name, as the policy lists you.'),
  reason: z.string().max(2_000).optional(),
  remember: z.enum(['none', 'exact', 'wider']).optional(),
  key: z
    .string()
    .optional()
    .describe('Your public key (ed25519:<base64>), when the run requires signatures.'),
  signature: z.string().optional().describe('Base64 Ed25519 signature over the decision statement.'),
  issuedAt: z.number().int().nonnegative().optional().describe('When you signed, Unix milliseconds.'),
}
const answerInput = z.object({ runId: z.string().min(1), ...answerFields }).strict()
const elicitedAnswer = z.object(answerFields).partial({ approvalId: true })

const TOOLS = [
  {
    name: 'agent_run',
    input: startInput,
    description:
      'Start a governed tether run: a coding agent working toward `goal` in `workspace` under the named policy, ' +
      'with human approvals for what the policy asks. Supports MCP Tasks (the run is the task).',
  },
  {
    name: 'agent_status',
    input: statusInput,
    description:
      "A run's state (working, input_required, completed, failed, cancelled), its pending approvals with " +
      'what an answer must sign, and its outcome once it ended.',
  },
  {
    name: 'agent_answer',
    input: answerInput,
    description:
      "Answer one of a run's pending approvals. When the run requires signed answers, sign the decision " +
      'statement for the approval (docs/approvals.md) and pass key, signature and issuedAt.',
  },
  {
    name: 'agent_cancel',
    input: runInput,
    description: 'Cancel a run: its pending approvals resolve as cancelled.',
  },
] as const

export function createTetherMcpServer(options: TetherMcpServerOptions): Server {
  const { client, audit } = options
  const pollMs = options.pollMs ?? 1_000
  const roots = options.workspaceRoots.map((root) => realpathSync(root))
  const server = new Server(
    { name: 'tether', version: '1' },
    {
      capabilities: {
        tools: {},
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      instructions:
        'Start runs with agent_run (policies: ' +
        [...options.policies.keys()].join(', ') +
        '); with MCP Tasks, a pending approval is input_required and is answered through tasks/result.',
    },
  )

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((tool) => ({
      name: tool.name,
      description:
        tool.name === 'agent_run'
          ? `${tool.description} Policies: ${[...options.policies.keys()].join(', ') || '(none)'}.`
          : tool.description,
      inputSchema: z.toJSONSchema(tool.input) as { type: 'object' },
      ...(tool.name === 'agent_run' ? { execution: { taskSupport: 'optional' as const } } : {}),
    })),
  }))

  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params
    const tool = TOOLS.find((entry) => entry.name === name)
    if (!tool)
      throw new McpError(
        ErrorCode.InvalidParams,
        `unknown tool ${name}; tether has ${TOOLS.map((t) => t.name).join(', ')}`,
      )
    const parsed = tool.input.safeParse(args ?? {})
    if (!parsed.success)
      return failed(
        `invalid arguments for ${name}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`).join('; ')}`,
      )
    try {
      switch (name) {
        case 'agent_run': {
          const runId = await start(parsed.data as z.infer<typeof startInput>)
          if (request.params.task) return { task: await taskOf(runId) }
          return structured(await statusOf(runId))
        }
        case 'agent_status': {
          const { runId, waitSeconds } = parsed.data as z.infer<typeof statusInput>
          if (waitSeconds) await settled(runId, waitSeconds * 1000)
          return structured(await statusOf(runId))
        }
        case 'agent_answer': {
          const { runId, ...answer } = parsed.data as z.infer<typeof answerInput>
          const outcome = await submit(runId, answer)
          return outcome.ok ? structured(outcome) : failed(outcome.error)
        }
        default: {
          const { runId } = parsed.data as z.infer<typeof runInput>
          await cancel(runId)
          return structured(await statusOf(runId))
        }
      }
    } catch (error) {
      if (error instanceof McpError) throw error
      return failed((error as Error).message.split('\n')[0] ?? String(error))
    }
  })

  server.setRequestHandler(GetTaskRequestSchema, async (request) => await taskOf(request.params.taskId))

  server.setRequestHandler(ListTasksRequestSchema, async () => {
    const page = await audit.listRuns({ limit: 100 })
    const ids = page.items.map((run) => run.runId).filter((runId) => runId.startsWith(RUN_PREFIX))
    const tasks = await Promise.all(ids.map((runId) => taskOf(runId).catch(() => undefined)))
    return { tasks: tasks.filter((task) => task !== undefined) }
  })

  server.setRequestHandler(CancelTaskRequestSchema, async (request) => {
    const task = await taskOf(request.params.taskId)
    if (isTerminal(task.status)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Cannot cancel task: already in terminal status '${task.status}'`,
      )
    }
    await cancel(task.taskId)
    return { ...(await taskOf(task.taskId)), status: 'cancelled' as const }
  })

  server.setRequestHandler(GetTaskPayloadRequestSchema, async (request, extra) => {
    const runId = request.params.taskId
    // Approvals this request's client declined to answer: asked once per request, then left to others.
    const declined = new Set<string>()
    let refusal: string | undefined
    let elicitation = true
    for (;;) {
      const task = await taskOf(runId)
      if (isTerminal(task.status)) {
        const result = await resultOf(runId, task)
        return { ...result, _meta: { ...result._meta, [RELATED_TASK_META_KEY]: { taskId: runId } } }
      }
      const pending =
        task.status === 'input_required' && elicitation
          ? (await audit.pendingApprovals({ runId })).find((row) => !declined.has(row.approvalId))
          : undefined
      if (!pending) {
        await sleep(pollMs, undefined, { signal: extra.signal })
        continue
      }
      // The answer may come from anyone meanwhile (the inbox, the CLI): then the question is withdrawn.
      const asking = new AbortController()
      const withdrawn = watch(runId, pending.approvalId, asking.signal, pollMs).then(() => asking.abort())
      let answered: z.infer<typeof elicitedAnswer> | undefined
      try {
        const reply = await extra.sendRequest(
          {
            method: 'elicitation/create',
            params: {
              mode: 'form',
              message: approvalQuestion(pending, refusal),
              requestedSchema: ELICITATION_SCHEMA,
              _meta: {
                [RELATED_TASK_META_KEY]: { taskId: runId },
                [APPROVAL_META_KEY]: shownApproval(pending),
              },
            },
          },
          ElicitResultSchema,
          { signal: AbortSignal.any([asking.signal, extra.signal]), timeout: 24 * 3_600_000 },
        )
        if (reply.action === 'accept') {
          const parsed = elicitedAnswer.safeParse(reply.content ?? {})
          if (parsed.success) answered = parsed.data
          else refusal = `the answer did not have the form asked for: ${parsed.error.issues[0]?.message}`
        } else declined.add(pending.approvalId)
      } catch {
        extra.signal.throwIfAborted()
        // A client without elicitation: the approval is answered with agent_answer or any other channel.
        if (!asking.signal.aborted) elicitation = false
      } finally {
        asking.abort()
        await withdrawn
      }
      if (answered) {
        const outcome = await submit(runId, { ...answered, approvalId: pending.approvalId })
        refusal = outcome.ok ? undefined : outcome.error
      }
    }
  })

  async function start(input: z.infer<typeof startInput>): Promise<string> {
    const policy = options.policies.get(input.policy)
    if (!policy) {
      throw new Error(
        `no policy ${JSON.stringify(input.policy)}: the operator allows ${[...options.policies.keys()].join(', ') || 'none'}`,
      )
    }
    const workspace = allowedWorkspace(input.workspace, roots)
    const detected =
      input.verify === undefined ? (await detectToolchain(workspace))?.commands.test : undefined
    const verify = input.verify ?? detected
    const contract: TaskContractInput = {
      goal: input.goal,
      workspace,
      verification: verify && verify.length > 0 ? { command: [...verify] } : null,
      ...(input.model ? { model: input.model } : {}),
      ...(input.maxSteps ? { budgets: { maxSteps: input.maxSteps } } : {}),
    }
    try {
      const handle = await startAgentRun(client, {
        contract,
        policy,
        taskQueue: options.taskQueue,
        runId: mcpRunId(),
      })
      return handle.workflowId
    } catch (error) {
      if (error instanceof ContractError || error instanceof RunIdTakenError) throw new Error(error.message)
      throw error
    }
  }

  /** The run as an MCP task: its status from Temporal (the search attribute says whether it waits for people). */
  async function taskOf(runId: string): Promise<Task> {
    let description: Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['describe']>>
    try {
      description = await client.workflow.getHandle(runId).describe()
    } catch (error) {
      if (error instanceof WorkflowNotFoundError)
        throw new McpError(ErrorCode.InvalidParams, `Failed to retrieve task: no run ${runId}`)
      throw error
    }
    const waiting = description.searchAttributes?.TetherPendingApproval?.[0] === 'true'
    const status: Task['status'] =
      description.status.name === 'RUNNING'
        ? waiting
          ? 'input_required'
          : 'working'
        : description.status.name === 'COMPLETED'
          ? 'completed'
          : description.status.name === 'CANCELLED'
            ? 'cancelled'
            : 'failed'
    const closed = description.closeTime ?? undefined
    return {
      taskId: runId,
      status,
      statusMessage: await statusMessage(runId, status),
      createdAt: description.startTime.toISOString(),
      lastUpdatedAt: (closed ?? new Date()).toISOString(),
      ttl: null,
      pollInterval: POLL_INTERVAL_MS,
    }
  }

  async function statusMessage(runId: string, status: Task['status']): Promise<string> {
    if (status === 'input_required') {
      const pending = await audit.pendingApprovals({ runId })
      return `waiting for ${pending.length} approval${pending.length === 1 ? '' : 's'}${pending[0] ? `: ${pending[0].act} ${pending[0].target.slice(0, 200)}` : ''}`
    }
    if (status === 'working') return 'the agent is working'
    const summary = await audit.runSummary(runId)
    return summary?.outcome ? `${summary.outcome}${summary.reason ? `: ${summary.reason}` : ''}` : status
  }

  /** What `agent_status` returns: the task, the approvals waiting (what a signature covers), the outcome. */
  async function statusOf(runId: string) {
    const task = await taskOf(runId)
    const pending = task.status === 'input_required' ? await audit.pendingApprovals({ runId }) : []
    const summary = isTerminal(task.status) ? await audit.runSummary(runId) : undefined
    return {
      runId,
      status: task.status,
      statusMessage: task.statusMessage,
      pendingApprovals: pending.map(shownApproval),
      ...(summary?.outcome
        ? {
            outcome: summary.outcome,
            reason: summary.reason ?? null,
            // A run on a folder of this machine: git files it wrote there that the client's git would obey.
            plantedGit: plantedGitFiles(summary.workspace, summary.startedAt),
          }
        : {}),
    }
  }

  async function resultOf(runId: string, task: Task): Promise<CallToolResult> {
    const status = await statusOf(runId)
    const ok = task.status === 'completed' && (status.outcome === 'verified' || status.outcome === 'finished')
    const planted = status.plantedGit ?? []
    const warning =
      planted.length === 0
        ? ''
        : `\nwarning: ${plantedGitWarning('the run wrote')}: ${planted.map((file) => `${file.path}: ${file.what}`).join('; ')}`
    return {
      content: [{ type: 'text', text: `run ${runId}: ${task.statusMessage}${warning}` }],
      structuredContent: status,
      isError: !ok,
    }
  }

  /** Until the run ends or needs an answer, or `ms` pass. */
  async function settled(runId: string, ms: number): Promise<void> {
    const end = Date.now() + ms
    while (Date.now() < end) {
      const { status } = await taskOf(runId)
      if (status !== 'working') return
      await sleep(Math.min(pollMs, Math.max(0, end - Date.now())))
    }
  }

  /** Until the approval is no longer pending (answered by anyone), or `signal` aborts. */
  async function watch(runId: string, approvalId: string, signal: AbortSignal, every: number): Promise<void> {
    while (!signal.aborted) {
      const row = await audit.approval(approvalId).catch(() => undefined)
      if (row && row.runId === runId && row.decision !== undefined) return
      await sleep(every * 2, undefined, { signal }).catch(() => {})
    }
  }

  async function submit(
    runId: string,
    answer: Omit<z.infer<typeof answerInput>, 'runId'>,
  ): Promise<{ ok: true; channel: string; decision?: string } | { ok: false; error: string }> {
    const signed = answer.key !== undefined || answer.signature !== undefined || answer.issuedAt !== undefined
    if (
      signed &&
      (answer.key === undefined || answer.signature === undefined || answer.issuedAt === undefined)
    ) {
      return { ok: false, error: 'a signed answer needs key, signature and issuedAt together' }
    }
    const remember = answer.remember && answer.remember !== 'none' ? answer.remember : undefined
    try {
      const result = await answerApproval(client, runId, {
        approvalId: answer.approvalId,
        decision: answer.decision,
        approver: answer.approver,
        ...(answer.reason ? { reason: answer.reason } : {}),
        ...(remember ? { remember } : {}),
        ...(signed
          ? { signature: { key: answer.key!, value: answer.signature!, issuedAt: answer.issuedAt! } }
          : {}),
      })
      return {
        ok: true,
        channel: result.channel,
        ...(result.result ? { decision: result.result.decision } : {}),
      }
    } catch (error) {
      const rejection = updateRejection(error)
      if (rejection) return { ok: false, error: `refused (${rejection.type}): ${rejection.message}` }
      throw error
    }
  }

  async function cancel(runId: string): Promise<void> {
    const handle = client.workflow.getHandle(runId)
    await handle.cancel()
    // The task must read `cancelled` once this returns: wait (bounded) for the run to close.
    const end = Date.now() + 30_000
    while (Date.now() < end && (await handle.describe()).status.name === 'RUNNING') await sleep(pollMs)
  }

  return server
}

/** Runs started through MCP: ids a client cannot guess (a task id is its only handle). */
const RUN_PREFIX = 'mcp-'

function mcpRunId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  return `${RUN_PREFIX}${[...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`
}

function isTerminal(status: Task['status']): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled'
}

function structured(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value }
}

function failed(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true }
}

/** The workspace a client named, if it lies under one of the operator's roots (links followed). */
function allowedWorkspace(path: string, roots: readonly string[]): string {
  if (!isAbsolute(path))
    throw new Error(`the workspace must be an absolute path, not ${JSON.stringify(path)}`)
  let real: string
  try {
    real = realpathSync(resolve(path))
  } catch {
    throw new Error(`no folder ${path} on this machine`)
  }
  if (!roots.some((root) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep))) {
    throw new Error(
      `the workspace ${real} is not under one of the operator's workspace roots (${roots.join(', ') || 'none are set'})`,
    )
  }
  return real
}

/** What an approver is shown of an approval, and what a signed statement covers (see identity/answer.ts). */
function shownApproval(row: ApprovalRow) {
  return {
    runId: row.runId,
    approvalId: row.approvalId,
    act: row.act,
    target: row.target,
    tree: row.tree,
    actionDigest: row.actionDigest ?? null,
    rememberOffer: row.rememberOffer ?? null,
    identity: row.identity ?? 'unsigned',
    rule: row.rule ?? null,
    layer: row.layer ?? null,
    deadline: row.deadline.toISOString(),
    approvers: row.approvers,
  }
}

function approvalQuestion(row: ApprovalRow, refusal: string | undefined): string {
  return [
    ...(refusal ? [`Your last answer was refused: ${refusal}`] : []),
    `Run ${row.runId} asks to ${row.act}: ${row.target}`,
    `(rule "${row.rule ?? 'default'}" in layer "${row.layer ?? 'default'}"; answer by ${row.deadline.toISOString()})`,
    ...(typeof row.tree === 'string' && row.tree !== row.target ? ['', row.tree] : []),
    '',
    row.identity === 'signed'
      ? `Answers must be signed: sign the decision statement for approval ${row.approvalId} (action ${row.actionDigest}) and give key, signature and issuedAt.`
      : 'Answers are not signed on this run.',
  ].join('\n')
}

/** The form an elicitation asks for: the flat answer (primitive fields only, as elicitation allows). */
const ELICITATION_SCHEMA = {
  type: 'object' as const,
  properties: {
    decision: { type: 'string' as const, enum: ['approve', 'deny'], description: 'Approve or deny.' },
    approver: { type: 'string' as const, description: 'Your name, as the policy lists you.' },
    reason: { type: 'string' as const, description: 'Why (the model reads it with a denial).' },
    remember: { type: 'string' as const, enum: ['none', 'exact', 'wider'], description: 'What to remember.' },
    key: { type: 'string' as const, description: 'Your public key, ed25519:<base64> (signed runs).' },
    signature: {
      type: 'string' as const,
      description: 'Base64 signature of the decision statement (signed runs).',
    },
    issuedAt: { type: 'number' as const, description: 'When you signed, Unix milliseconds (signed runs).' },
  },
  required: ['decision', 'approver'],
}

/**
 * The operator's allowlist of policies a client may name: every `NAME.yaml`, `NAME.yml` or `NAME.json` in
 * `folder`, by NAME; without a folder, the presets `tiered` and `strict`. A file that does not load is an
 * error naming it (PolicyError), never a policy left out.
 */
export async function loadMcpPolicies(folder: string | undefined): Promise<Map<string, Policy>> {
  if (!folder)
    return new Map([
      ['tiered', Policy.tiered()],
      ['strict', Policy.strict()],
    ])
  const policies = new Map<string, Policy>()
  for (const name of readdirSync(folder).sort()) {
    const ext = extname(name)
    if (!['.yaml', '.yml', '.json'].includes(ext)) continue
    policies.set(name.slice(0, -ext.length), await loadPolicyFile(join(folder, name)))
  }
  return policies
}

/**
 * tether's MCP server over Streamable HTTP, for a server that already authenticates its callers (the inbox):
 * one MCP session per client, kept while the client uses it. A session is only the connection; a client
 * whose session is gone (this process restarted) initializes a new one and finds its tasks as they are.
 */
export function mcpHttpHandler(options: TetherMcpServerOptions): {
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>
  close(): Promise<void>
} {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  return {
    async handle(request, response) {
      const id = request.headers['mcp-session-id']
      let transport = typeof id === 'string' ? sessions.get(id) : undefined
      if (!transport && typeof id === 'string') {
        response.writeHead(404, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32001, message: 'Session not found' },
            id: null,
          }),
        )
        return
      }
      if (!transport) {
        const fresh = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (session) => {
            sessions.set(session, fresh)
          },
        })
        fresh.onclose = () => {
          if (fresh.sessionId) sessions.delete(fresh.sessionId)
        }
        await createTetherMcpServer(options).connect(fresh)
        transport = fresh
      }
      await transport.handleRequest(request, response)
    },
    async close() {
      const open = [...sessions.values()]
      sessions.clear()
      await Promise.all(open.map((transport) => transport.close().catch(() => {})))
    },
  }
}
