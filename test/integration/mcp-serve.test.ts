/**
 * tether as an MCP server (`tether mcp`, stdio), driven by independent clients: the official SDK client with
 * MCP Tasks — a run is the task, its approval `input_required`, answered through `tasks/result` with a signed
 * answer — also after the MCP server and the worker were both killed and restarted mid-wait, and with the
 * question withdrawn when `tether approve` answers first; and the MCP
 * Inspector's CLI mode, which speaks no Tasks: start, follow, answer (signed) and read the outcome with tools.
 */
import { type ChildProcess, execFile } from 'node:child_process'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import { APPROVAL_META_KEY, loadMcpPolicies, mcpHttpHandler } from '../../src/embed/index.js'
import { prepareAnswer, type ShownApproval } from '../../src/identity/index.js'
import { type ApproverKey, createKey, loadKey } from '../../src/identity/keyring.js'
import { startInbox } from '../../src/inbox/index.js'
import { npmWorkspace, openTestAudit, writeScript } from '../support/agent.js'
import { connectClient, uniqueTaskQueue } from '../support/temporal.js'
import { startWorkerChild } from '../support/worker-child.js'

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url))
const BIN = join(CHECKOUT, 'src/cli/bin.ts')
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const INSPECTOR = join(CHECKOUT, 'node_modules/@modelcontextprotocol/inspector/cli/build/cli.js')

let dir: string
let alice: ApproverKey
let audit: AuditStore
let env: Record<string, string>
const workers: ChildProcess[] = []

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-mcp-serve-'))
  createKey('alice', join(dir, 'keys'))
  alice = loadKey('alice', join(dir, 'keys'))
  const floor = join(dir, 'floor.json')
  await writeFile(
    floor,
    JSON.stringify({
      defaults: { read: 'allow', write: 'allow', exec: 'allow', net: 'deny' },
      approvers: [{ name: 'alice', keys: [alice.publicKey] }],
      layers: [{ name: 'operator', rules: [{ act: 'exec', effect: 'ask', pattern: 'touch*' }] }],
    }),
  )
  const policies = join(dir, 'policies')
  await mkdir(policies)
  await writeFile(
    join(policies, 'review.json'),
    JSON.stringify({ preset: 'tiered', defaults: { exec: 'allow' } }),
  )
  audit = await openTestAudit()
  env = {
    ...(process.env as Record<string, string>),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('namespace'),
    DATABASE_URL: inject('databaseUrl'),
    TETHER_TASK_QUEUE: uniqueTaskQueue('mcp-serve'),
    TETHER_FLOOR: floor,
    TETHER_MCP_POLICIES: policies,
    TETHER_MCP_WORKSPACES: tmpdir(),
    WORKFLOW_BUNDLE: inject('workflowBundlePath'),
  }
  await startWorker()
}, 120_000)

afterAll(async () => {
  for (const worker of workers) worker.kill('SIGKILL')
  await audit?.close()
  await rm(dir, { recursive: true, force: true })
})

function startWorker(): Promise<ChildProcess> {
  return startWorkerChild(env, workers)
}

/**
 * An MCP client of the official SDK on a fresh `tether mcp`, answering elicitations with `reply` (by default
 * alice's signed approval).
 */
async function connect(
  reply: (shown: ShownApproval) => Promise<ReturnType<typeof signed>> = async (shown) =>
    signed(shown, 'approve'),
): Promise<{
  client: McpClient
  transport: StdioClientTransport
  asked: ShownApproval[]
}> {
  const client = new McpClient(
    { name: 'test-client', version: '1' },
    { capabilities: { elicitation: { form: {} } } },
  )
  const asked: ShownApproval[] = []
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const shown = request.params._meta?.[APPROVAL_META_KEY] as ShownApproval
    asked.push(shown)
    return { action: 'accept', content: await reply(shown) }
  })
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', TSX, BIN, 'mcp'],
    env,
    stderr: 'inherit',
  })
  await client.connect(transport)
  return { client, transport, asked }
}

/** alice's signed answer to an approval as shown. */
function signed(shown: ShownApproval, decision: 'approve' | 'deny') {
  const issuedAt = Date.now()
  const { statement } = prepareAnswer(shown, { decision, approver: 'alice' }, issuedAt)
  return { decision, approver: 'alice', key: alice.publicKey, signature: alice.sign(statement!), issuedAt }
}

/** The run's one approval was answered by alice, signed, through an Update (`tether approve` and MCP alike). */
async function expectSignedByAlice(runId: string) {
  const [recorded] = await audit.approvalAnswers({ runId })
  expect(recorded?.answer).toMatchObject({ approver: 'alice', decision: 'approve', channel: 'update' })
  expect(recorded?.answer.signature).toBeTruthy()
}

/** The npm fixture and a scripted model that runs `first` (if given), asks to touch a file, then answers. */
async function scriptedWorkspace(first?: string[]) {
  const ws = await npmWorkspace()
  const exec = (argv: string[]) => ({ toolCalls: [{ name: 'exec', args: { argv } }] })
  const turns = [...(first ? [exec(first)] : []), exec(['touch', 'made-by-agent']), { text: 'done' }]
  return { ws, model: `scripted:${await writeScript(ws.path, { turns } as never)}` }
}

const runArgs = (ws: string, model: string) => ({
  goal: 'make a file',
  workspace: ws,
  policy: 'review',
  model,
  verify: [],
})

describe('tether as an MCP server', () => {
  it('runs a task to its end through input_required and a signed answer (the SDK client)', async () => {
    const { ws, model } = await scriptedWorkspace()
    const { client, asked } = await connect()
    try {
      const tools = await client.listTools()
      expect(tools.tools.map((tool) => tool.name)).toEqual([
        'agent_run',
        'agent_status',
        'agent_answer',
        'agent_cancel',
      ])
      const statuses: string[] = []
      let result: unknown
      for await (const message of client.experimental.tasks.callToolStream(
        { name: 'agent_run', arguments: runArgs(ws.path, model) },
        CallToolResultSchema,
        { task: {} },
      )) {
        if (message.type === 'taskStatus') statuses.push(message.task.status)
        if (message.type === 'result') result = message.result
        if (message.type === 'error') throw message.error
      }
      expect(statuses).toContain('input_required')
      expect(asked).toHaveLength(1)
      expect(asked[0]).toMatchObject({ act: 'exec', target: 'touch made-by-agent', identity: 'signed' })
      expect(result).toMatchObject({
        isError: false,
        structuredContent: { status: 'completed', outcome: 'finished' },
      })
      expect(await readFile(join(ws.path, 'made-by-agent'), 'utf8')).toBe('')
      await expectSignedByAlice(asked[0]!.runId)
    } finally {
      await client.close()
      await ws.cleanup()
    }
  }, 240_000)

  it('answers tasks/get and takes the answer after the MCP server and the worker were killed mid-wait', async () => {
    const { ws, model } = await scriptedWorkspace()
    const first = await connect()
    let taskId: string
    try {
      const created = await first.client.request(
        { method: 'tools/call', params: { name: 'agent_run', arguments: runArgs(ws.path, model), task: {} } },
        CreateTaskResultSchema,
      )
      taskId = created.task.taskId
      expect(taskId).toMatch(/^mcp-[0-9a-f]{32}$/)
      await expect
        .poll(async () => (await first.client.experimental.tasks.getTask(taskId)).status, {
          timeout: 120_000,
        })
        .toBe('input_required')
    } finally {
      // The client and its `tether mcp` go (the transport kills the server), and so does every worker.
      await first.client.close()
    }
    for (const worker of workers.splice(0)) worker.kill('SIGKILL')

    const second = await connect()
    try {
      // No worker, no server memory: the state comes from Temporal and the audit.
      const task = await second.client.experimental.tasks.getTask(taskId)
      expect(task).toMatchObject({ taskId, status: 'input_required' })
      expect(task.statusMessage).toContain('touch made-by-agent')
      await startWorker()
      const result = await second.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)
      expect(result).toMatchObject({ isError: false, structuredContent: { outcome: 'finished' } })
      expect(second.asked).toHaveLength(1)
      expect((await second.client.experimental.tasks.getTask(taskId)).status).toBe('completed')
    } finally {
      await second.client.close()
      await ws.cleanup()
    }
  }, 300_000)

  it('withdraws the question and moves the task on when another channel (tether approve) answers', async () => {
    const { ws, model } = await scriptedWorkspace()
    // This client's person never answers: the question stays open until the server withdraws it.
    const { client, transport, asked } = await connect(() => new Promise(() => {}))
    // The withdrawal is read off the wire: SDK 1.32's client ignores a cancellation of request id 0.
    const received: Array<{ id?: unknown; method?: string; params?: { requestId?: unknown } }> = []
    const deliver = transport.onmessage!
    transport.onmessage = (message: JSONRPCMessage) => {
      received.push(message as (typeof received)[number])
      deliver(message)
    }
    try {
      const created = await client.request(
        { method: 'tools/call', params: { name: 'agent_run', arguments: runArgs(ws.path, model), task: {} } },
        CreateTaskResultSchema,
      )
      const taskId = created.task.taskId
      const result = client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema)
      await expect.poll(() => asked.length, { timeout: 120_000 }).toBe(1)
      const approve = await promisify(execFile)(
        process.execPath,
        ['--import', TSX, BIN, 'approve', asked[0]!.approvalId, '--key', 'alice', '--json'],
        { env: { ...env, TETHER_KEYS_DIR: join(dir, 'keys') } },
      )
      expect(JSON.parse(approve.stdout)).toMatchObject({
        approvalId: asked[0]!.approvalId,
        channel: 'update',
      })
      expect(await result).toMatchObject({ isError: false, structuredContent: { outcome: 'finished' } })
      expect(asked).toHaveLength(1)
      const elicitation = received.find((message) => message.method === 'elicitation/create')
      expect(elicitation?.id).toBeDefined()
      expect(received).toContainEqual(
        expect.objectContaining({
          method: 'notifications/cancelled',
          params: expect.objectContaining({ requestId: elicitation?.id }),
        }),
      )
      await expectSignedByAlice(taskId)
    } finally {
      await client.close()
      await ws.cleanup()
    }
  }, 240_000)

  it('works as start / follow / answer tools for a client without Tasks (the MCP Inspector CLI)', async () => {
    // An allowed command makes a repository whose configuration names a pager: the client is told.
    const { ws, model } = await scriptedWorkspace([
      'sh',
      '-c',
      'git init -q sub && git -C sub config core.pager "less -R"',
    ])
    // The Inspector starts the server itself, as a command; each call below is a new `tether mcp`.
    const server = join(dir, 'tether-mcp.sh')
    await writeFile(server, `#!/bin/sh\nexec "${process.execPath}" --import "${TSX}" "${BIN}" mcp\n`)
    await chmod(server, 0o755)
    const inspect = async (tool: string, args: Record<string, unknown>) => {
      const toolArgs = Object.entries(args).flatMap(([key, value]) => [
        '--tool-arg',
        `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`,
      ])
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [INSPECTOR, '--cli', server, '--method', 'tools/call', '--tool-name', tool, ...toolArgs],
        { env, maxBuffer: 16 * 1024 * 1024 },
      )
      return JSON.parse(stdout) as { structuredContent: Record<string, unknown>; isError?: boolean }
    }
    try {
      const started = await inspect('agent_run', runArgs(ws.path, model))
      const runId = started.structuredContent.runId as string
      let status = started.structuredContent
      while (status.status !== 'input_required') {
        status = (await inspect('agent_status', { runId, waitSeconds: 20 })).structuredContent
        expect(['working', 'input_required']).toContain(status.status)
      }
      const [pending] = status.pendingApprovals as ShownApproval[]
      const answered = await inspect('agent_answer', {
        runId,
        approvalId: pending!.approvalId,
        ...signed(pending!, 'approve'),
      })
      expect(answered.isError).not.toBe(true)
      expect(answered.structuredContent).toMatchObject({ ok: true, channel: 'update' })
      while (status.status === 'input_required' || status.status === 'working')
        status = (await inspect('agent_status', { runId, waitSeconds: 20 })).structuredContent
      expect(status).toMatchObject({
        status: 'completed',
        outcome: 'finished',
        plantedGit: [{ path: 'sub/.git/config', what: 'core.pager = less -R' }],
      })
      // An answer nobody signed is refused by the run, and the tool says why.
      const refused = await inspect('agent_answer', {
        runId,
        approvalId: pending!.approvalId,
        decision: 'approve',
        approver: 'alice',
      })
      expect(refused.isError).toBe(true)
    } finally {
      await ws.cleanup()
    }
  }, 300_000)

  it('serves the same tools over Streamable HTTP at the inbox, behind its access', async () => {
    const { ws } = await scriptedWorkspace()
    const model = `scripted:${await writeScript(ws.path, { turns: [{ text: 'nothing to do' }] } as never)}`
    const temporal = await connectClient()
    const token = 'mcp-test-token-0123456789'
    const inbox = await startInbox({
      audit,
      client: temporal.client,
      namespace: inject('namespace'),
      port: 0,
      access: { mode: 'local', token },
      mcp: mcpHttpHandler({
        client: temporal.client,
        audit,
        taskQueue: env.TETHER_TASK_QUEUE!,
        policies: await loadMcpPolicies(env.TETHER_MCP_POLICIES),
        workspaceRoots: [tmpdir()],
      }),
    })
    const client = new McpClient({ name: 'http-client', version: '1' })
    try {
      const refused = await fetch(`${inbox.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      expect(refused.status).toBe(401)
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${inbox.url}/mcp`), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      )
      const started = await client.callTool({ name: 'agent_run', arguments: runArgs(ws.path, model) })
      const runId = (started.structuredContent as { runId: string }).runId
      let status = started.structuredContent as Record<string, unknown>
      while (status.status === 'working')
        status = (await client.callTool({ name: 'agent_status', arguments: { runId, waitSeconds: 20 } }))
          .structuredContent as Record<string, unknown>
      expect(status).toMatchObject({ status: 'completed', outcome: 'finished' })
      // A policy the operator does not allow, and a workspace outside the roots, are refused in one line.
      const notAllowed = await client.callTool({
        name: 'agent_run',
        arguments: { ...runArgs(ws.path, model), policy: 'mine' },
      })
      expect(notAllowed).toMatchObject({
        isError: true,
        content: [{ text: 'no policy "mine": the operator allows review' }],
      })
      const outside = await client.callTool({ name: 'agent_run', arguments: { ...runArgs('/etc', model) } })
      expect((outside.content as Array<{ text: string }>)[0]!.text).toMatch(
        /^the workspace \/etc is not under one of the operator's workspace roots/,
      )
    } finally {
      await client.close()
      await inbox.close()
      await temporal.close()
      await ws.cleanup()
    }
  }, 180_000)
})
