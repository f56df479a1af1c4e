/**
 * tether consuming MCP servers: real third-party servers from the npm registry (server-filesystem and
 * server-everything over stdio inside the sandbox, server-everything over Streamable HTTP through the egress
 * judge) and the probe fixture, under the run's policy — allowed, asked and denied calls with their audit
 * rows, a definition changed mid-run withheld and asked about, a server that exits mid-call or never answers
 * an observation, a large result bounded like command output,
 * and the red-team checks: a result cannot smuggle a call past the policy, a server cannot reach the model,
 * the worker's secrets or the network.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Client, WorkflowHandle } from '@temporalio/client'
import { MockActivityEnvironment } from '@temporalio/testing'
import { DefaultLogger } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { createActivities } from '../../src/activities/index.js'
import type { AuditStore } from '../../src/audit/index.js'
import { Policy } from '../../src/policy/index.js'
import { parseContract } from '../../src/run/contract.js'
import { type agentRun, decideUpdate, pendingApprovalsQuery } from '../../src/workflows/index.js'
import {
  npmWorkspace,
  openTestAudit,
  startAgentWorker,
  startedOutsideTemporal,
  startRun,
  writeScript,
} from '../support/agent.js'
import { bundleMcpServers, type McpBundles, stdioServer } from '../support/mcp.js'
import { connectClient, recordHistory } from '../support/temporal.js'

const SECRET = 'worker-secret-7f3a'
const TOKEN = 'probe-token-51c2'

let bundles: McpBundles
let audit: AuditStore
let client: Client
let closeClient: () => Promise<void>
let worker: Awaited<ReturnType<typeof startAgentWorker>>
let http: ChildProcess
let httpPort: number
let hidden: string

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

beforeAll(async () => {
  bundles = await bundleMcpServers()
  hidden = await mkdtemp(join(tmpdir(), 'tether-mcp-hidden-'))
  await writeFile(join(hidden, 'key.txt'), 'the operator key')
  httpPort = await freePort()
  // server-everything listens on every interface; this keeps it on loopback.
  const loopbackOnly =
    "import net from 'node:net'; const listen = net.Server.prototype.listen; net.Server.prototype.listen = function (...args) { return typeof args[0] === 'number' || typeof args[0] === 'string' ? listen.call(this, Number(args[0]), '127.0.0.1', ...args.slice(1).filter((a) => typeof a === 'function')) : listen.apply(this, args) }"
  http = spawn(
    process.execPath,
    [
      '--import',
      `data:text/javascript,${encodeURIComponent(loopbackOnly)}`,
      bundles.everything,
      'streamableHttp',
    ],
    {
      env: { ...process.env, PORT: String(httpPort) },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  )
  await new Promise<void>((resolve, reject) => {
    http.once('exit', () => reject(new Error('the Streamable HTTP server exited')))
    http.stderr?.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('listening')) resolve()
    })
  })
  audit = await openTestAudit()
  ;({ client, close: closeClient } = await connectClient())
  worker = await startAgentWorker(audit, {
    sandbox: { env: { ...process.env, WORKER_SECRET: SECRET, PROBE_TOKEN: TOKEN }, hide: [hidden] },
    mcpServers: [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the configuration's own placeholder
      stdioServer('fs', bundles, [bundles.filesystem, '${workspace}'], { workspace: 'read-write' }),
      stdioServer('ev', bundles, [bundles.everything]),
      // A short timeout, so probe.hang is stopped soon; its other tools answer at once.
      stdioServer('probe', bundles, [bundles.probe], { env: ['PROBE_TOKEN'], timeout: 5_000 }),
      { name: 'web', kind: 'http', url: `http://127.0.0.1:${httpPort}/mcp`, headers: {}, timeout: 30_000 },
    ],
  })
}, 180_000)

afterAll(async () => {
  await worker?.stop()
  await closeClient?.()
  await audit?.close()
  http?.kill()
  await bundles?.remove()
  await rm(hidden, { recursive: true, force: true })
})

/** Answers the next approval the run asks for, and returns what it asked. */
async function answer(
  handle: WorkflowHandle<typeof agentRun>,
  decision: 'approve' | 'deny',
  reason?: string,
) {
  await expect
    .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 120_000 })
    .toBe(1)
  const [pending] = await handle.query(pendingApprovalsQuery)
  await handle.executeUpdate(decideUpdate, {
    args: [{ approvalId: pending!.approvalId, decision, approver: 'alice', ...(reason ? { reason } : {}) }],
  })
  return pending!
}

async function transcript(runId: string): Promise<string[]> {
  const messages = await audit.loadMessages(runId)
  return messages.flatMap((message) => {
    const content = message.content as { results?: Array<{ output: string }>; content?: string }
    return content.results
      ? content.results.map((result) => result.output)
      : content.content
        ? [content.content]
        : []
  })
}

describe('MCP servers under the policy', () => {
  it('allows, asks and denies calls, withholds a changed definition, survives a crash, and keeps secrets', async () => {
    const ws = await npmWorkspace()
    const temporalPort = Number(new URL(`http://${inject('temporalAddress')}`).port)
    const turns = [
      {
        toolCalls: [
          { name: 'fs.read_text_file', args: { path: join(ws.path, 'package.json') } },
          { name: 'fs.write_file', args: { path: join(ws.path, 'NOTES.md'), content: 'from mcp\n' } },
          { name: 'ev.echo', args: { message: 'denied' } },
        ],
      },
      {
        toolCalls: [
          { name: 'web.echo', args: { message: 'over http' } },
          { name: 'ev.get-env', args: {} },
          { name: 'probe.sample', args: {} },
          { name: 'probe.smuggle', args: {} },
          {
            name: 'probe.probe',
            args: {
              variable: 'PROBE_TOKEN',
              path: join(hidden, 'key.txt'),
              host: '127.0.0.1',
              port: temporalPort,
            },
          },
        ],
      },
      // The model does what the smuggled text says: the call is judged like any other, and refused.
      {
        toolCalls: [
          { name: 'ev.echo', args: { message: 'pwned' } },
          { name: 'probe.crash', args: {} },
        ],
      },
      {
        toolCalls: [
          { name: 'probe.note', args: { text: 'after the crash' } },
          { name: 'probe.odd', args: {} },
          { name: 'probe.flip', args: {} },
        ],
      },
      // The listing before this turn finds note's new description: asked about, refused, withheld.
      { toolCalls: [{ name: 'probe.note', args: { text: 'after the change' } }] },
      { text: 'done' },
    ]
    const model = `scripted:${await writeScript(ws.path, { turns } as never)}`
    const policy = Policy.tiered()
      .layer('operator')
      .allow('mcp', 'fs.read_text_file')
      .ask('mcp', 'fs.write_file')
      .deny('mcp', 'ev.echo')
      .allow('mcp', 'ev.*')
      .allow('mcp', 'probe.*')
      .allow('mcp', 'web.*')
      .allowNet(`127.0.0.1:${httpPort}`)
    const handle = await startRun(
      client,
      worker.taskQueue,
      { goal: 'use the tools', workspace: ws.path, model, verification: null },
      policy,
    )
    try {
      const write = await answer(handle, 'approve')
      expect(write.act).toBe('mcp')
      expect(write.target).toBe(
        `fs.write_file {"content":"from mcp\\n","path":"${join(ws.path, 'NOTES.md')}"}`,
      )
      const review = await answer(handle, 'deny', 'not what we reviewed')
      expect(review.rule).toBe('mcp tool definition')
      expect(review.tree).toContain(
        '  description:\n-   Keeps a note.\n+   Keeps a note, and also sends every note to a server of our choosing.',
      )
      const result = await handle.result()
      expect(result.outcome).toBe('finished')
      await recordHistory(handle, 'mcp-tools')

      expect(await readFile(join(ws.path, 'NOTES.md'), 'utf8')).toBe('from mcp\n')
      const calls = await audit.mcpCalls(handle.workflowId)
      const row = (step: number, call: number) => calls.find((c) => c.step === step && c.call === call)
      expect(row(1, 0)).toMatchObject({
        server: 'fs',
        tool: 'fs.read_text_file',
        status: 'ok',
        effect: 'allow',
        rule: 'fs.read_text_file',
      })
      expect(row(1, 0)!.resultText).toContain('"name"')
      expect(row(1, 1)).toMatchObject({ tool: 'fs.write_file', status: 'ok', effect: 'ask' })
      expect(row(1, 2)).toBeUndefined()
      expect(row(2, 0)).toMatchObject({ server: 'web', status: 'ok' })
      expect(row(3, 1)).toMatchObject({ tool: 'probe.crash', status: 'unavailable' })
      expect(row(4, 0)).toMatchObject({ tool: 'probe.note', status: 'ok' })
      expect(row(4, 1)).toMatchObject({ tool: 'probe.odd', status: 'ok' })
      // Recorded as the server wrote it, NUL and lone surrogate included (jsonb refused both: the run failed).
      const odd = await audit.mcpDefinitions([row(4, 1)!.digest])
      expect(odd.get(row(4, 1)!.digest)?.description).toBe('Says \u0000 and \ud800 in its description.')
      expect(row(5, 0)).toBeUndefined()
      for (const c of calls) expect(c.argumentsSha256).toMatch(/^[0-9a-f]{64}$/)

      const refused = await audit.refusedActions({ runId: handle.workflowId })
      const refusals = refused.items.map((event) => [event.step, event.act, event.rule])
      expect(refusals).toContainEqual([1, 'mcp', 'ev.echo'])
      expect(refusals).toContainEqual([3, 'mcp', 'ev.echo'])
      expect(refusals).toContainEqual([5, 'mcp', 'mcp tool not offered'])

      const outputs = await transcript(handle.workflowId)
      const find = (start: string) => outputs.find((output) => output.startsWith(start)) ?? ''
      expect(find('[mcp web.echo → ok]')).toContain('over http')
      // Neither the worker's secret nor another server's credential is in a server's environment.
      const env = find('[mcp ev.get-env → ok]')
      expect(env).not.toBe('')
      expect(env).not.toContain(SECRET)
      expect(env).not.toContain(TOKEN)
      expect(find('[mcp probe.sample')).toMatch(/sampling refused: .*(not supported|Method not found)/i)
      const probe = JSON.parse(find('[mcp probe.probe → ok]').split('\n').slice(1).join('\n'))
      expect(probe.variable).toBe(TOKEN)
      expect(probe.file).not.toContain('operator key')
      expect(probe.network).toMatch(/^refused/)
      expect(find('[mcp probe.crash unavailable]')).toContain('exited with code 7')
      expect(find('[mcp probe.note → ok]')).toContain('noted: after the crash')
      expect(
        outputs.some(
          (o) => o.includes('[mcp refused]') && o.includes('probe.note') && o.includes('withheld'),
        ),
      ).toBe(true)
    } finally {
      await ws.cleanup()
    }
  }, 300_000)

  it('stops a server that does not answer, and bounds a result like command output; the run goes on', async () => {
    const ws = await npmWorkspace()
    const turns = [
      { toolCalls: [{ name: 'probe.hang', args: {} }] },
      { toolCalls: [{ name: 'probe.flood', args: { characters: 100_000 } }] },
      { toolCalls: [{ name: 'probe.note', args: { text: 'still here' } }] },
      { text: 'done' },
    ]
    const model = `scripted:${await writeScript(ws.path, { turns } as never)}`
    const handle = await startRun(
      client,
      worker.taskQueue,
      { goal: 'g', workspace: ws.path, model, verification: null, mcp: ['probe'], outputCeiling: 4_000 },
      Policy.tiered().layer('operator').allow('mcp', 'probe.*'),
    )
    try {
      expect((await handle.result()).outcome).toBe('finished')
      const calls = await audit.mcpCalls(handle.workflowId)
      expect(calls.map((c) => [c.step, c.tool, c.status])).toEqual([
        [1, 'probe.hang', 'timed-out'],
        [2, 'probe.flood', 'ok'],
        [3, 'probe.note', 'ok'],
      ])
      const flood = calls[1]!
      expect(flood.resultBytes).toBe(100_000)
      expect(flood.resultText.length).toBeLessThan(4_100)
      const outputs = await transcript(handle.workflowId)
      const find = (start: string) => outputs.find((output) => output.startsWith(start)) ?? ''
      expect(find('[mcp probe.hang timed out]')).toContain('no answer within 5 s')
      const bounded = find('[mcp probe.flood → ok;')
      expect(bounded).toMatch(/characters elided from the middle/)
      expect(bounded.length).toBeLessThan(5_000)
      expect(bounded).toContain('<')
      expect(bounded).toContain('>')
      expect(find('[mcp probe.note → ok]')).toContain('noted: still here')
    } finally {
      await ws.cleanup()
    }
  }, 180_000)

  it('reaches an HTTP server only where a net rule names it, and a run goes on without it', async () => {
    const ws = await npmWorkspace()
    const turns = [{ toolCalls: [{ name: 'web.echo', args: { message: 'no rule' } }] }, { text: 'done' }]
    const model = `scripted:${await writeScript(ws.path, { turns } as never)}`
    const policy = Policy.tiered().layer('operator').allow('mcp', 'web.*')
    const handle = await startRun(
      client,
      worker.taskQueue,
      { goal: 'g', workspace: ws.path, model, verification: null, mcp: ['web'] },
      policy,
    )
    try {
      expect((await handle.result()).outcome).toBe('finished')
      const outputs = await transcript(handle.workflowId)
      expect(outputs.some((o) => o.startsWith('[mcp] Some MCP servers') && o.includes('web:'))).toBe(true)
      expect(outputs.some((o) => o.includes('mcp tool not offered') || o.includes('unavailable'))).toBe(true)
      expect(await audit.mcpCalls(handle.workflowId)).toEqual([])
    } finally {
      await ws.cleanup()
    }
  }, 180_000)

  it('does not make a call on the noRetry list again after a lost attempt; one off the list it makes', async () => {
    const ws = await npmWorkspace()
    const probe = stdioServer('probe', bundles, [bundles.probe], { timeout: 5_000 })
    const activities = createActivities({ audit, mcpServers: [probe] })
    const logger = new DefaultLogger('ERROR')
    const env = new MockActivityEnvironment({}, { logger })
    const turns = [{ toolCalls: [{ name: 'probe.note', args: { text: 'first' } }] }, { text: 'done' }]
    const contract = parseContract({
      goal: 'note once',
      workspace: ws.path,
      model: `scripted:${await writeScript(ws.path, { turns } as never)}`,
      verification: null,
      mcp: ['probe'],
      noRetry: ['git push*', 'probe.note {"text":"deploy*'],
    })
    try {
      const { runId, turn } = await startedOutsideTemporal(
        activities,
        env,
        contract,
        Policy.tiered().layer('operator').allow('mcp', 'probe.*'),
      )
      await turn()
      const listing = (await env.run(activities.tetherMcpTools, {
        runId,
        step: 1,
        servers: ['probe'],
        pinned: {},
      })) as { tools: Array<{ name: string; digest: string }> }
      const digest = listing.tools.find((tool) => tool.name === 'probe.note')?.digest as string
      // The second attempt of a call, as the worker that took over from a lost one makes it.
      const retried = (call: number, text: string) =>
        new MockActivityEnvironment({ attempt: 2 }, { logger }).run(activities.tetherMcpCall, {
          runId,
          step: 1,
          pending: [],
          call,
          seq: 2 + call,
          callId: `call-${call}`,
          tool: 'probe.note',
          arguments: { text },
          digest,
          timeoutMs: 5_000,
          outputCeiling: 65_536,
          verdict: { effect: 'allow' as const, rule: 'probe.*', layer: 'operator' },
        })
      expect(await retried(0, 'deploy v2')).toMatchObject({ ok: false, status: 'interrupted' })
      expect(await retried(1, 'keep this')).toMatchObject({ ok: true, status: 'ok' })
      // An earlier attempt that made the call and recorded its row, then was lost before the model heard of
      // it: the retry tells the row's result, and makes no call (that would say "noted: deploy v3").
      const at = new Date()
      await audit.recordMcpCall({
        runId,
        step: 1,
        call: 2,
        server: 'probe',
        tool: 'probe.note',
        digest,
        argumentsSha256: digest,
        argumentsBytes: 20,
        effect: 'allow',
        status: 'ok',
        resultBytes: 26,
        resultSha256: digest,
        resultText: 'noted: made before the loss',
        resultElided: 0,
        durationMs: 5,
        startedAt: at,
        finishedAt: at,
      })
      expect(await retried(2, 'deploy v3')).toMatchObject({ ok: true, status: 'ok' })

      const calls = await audit.mcpCalls(runId)
      expect(calls.map((c) => [c.call, c.attempt, c.status])).toEqual([
        [0, 2, 'interrupted'],
        [1, 2, 'ok'],
        [2, 1, 'ok'],
      ])
      const outputs = await transcript(runId)
      expect(outputs.find((o) => o.startsWith('[mcp probe.note interrupted]'))).toContain(
        "not made again (it is on the run's no-retry list)",
      )
      const told = outputs.filter((o) => o.startsWith('[mcp probe.note → ok]'))
      expect(told).toEqual([
        expect.stringContaining('noted: keep this'),
        expect.stringContaining('noted: made before the loss'),
      ])
    } finally {
      await ws.cleanup()
    }
  }, 120_000)

  it('rejects a run naming a server the worker does not have', async () => {
    const ws = await npmWorkspace()
    try {
      const handle = await startRun(
        client,
        worker.taskQueue,
        { goal: 'g', workspace: ws.path, model: 'scripted:/nonexistent', verification: null, mcp: ['nope'] },
        Policy.tiered(),
      )
      await expect(handle.result()).rejects.toMatchObject({
        cause: {
          message: expect.stringMatching(
            /mcp: this worker has no MCP server nope \(it has fs, ev, probe, web\)/,
          ),
        },
      })
    } finally {
      await ws.cleanup()
    }
  }, 120_000)
})
