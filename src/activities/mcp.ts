/**
 * The MCP activities: listing a run's servers' tools (each definition digested, recorded, and compared with
 * its pin) and calling one tool. Thin: sessions are the mcp adapter's, the sandbox profile the command
 * sandbox's, the words present's. A server that cannot start, exits or hangs is an observation, never a
 * failure of the run; the next use starts it again (on this worker or another).
 */
import { createHash } from 'node:crypto'
import { homedir } from 'node:os'
import { Context } from '@temporalio/activity'
import type { AuditStore, McpCallStatus } from '../audit/index.js'
import { EgressJudge, OutputCapture } from '../exec/index.js'
import { mcpNoRetry } from '../judge/index.js'
import { type McpConnection, McpSession, type McpSessions, resultText } from '../mcp/index.js'
import type { Policy } from '../policy/index.js'
import { clip, definitionText, formatCount, lineDiff } from '../present/index.js'
import type { McpListing, TetherActivities, ToolChange } from '../run/index.js'
import { workspaceOf } from '../run/index.js'
import type { McpServerConfig } from '../stack/index.js'
import { expandVariables } from '../stack/mcp-servers.js'
import {
  type McpToolDefinition,
  mcpArguments,
  mcpToolDigest,
  readsOnly,
  splitMcpToolName,
} from '../tools/index.js'
import { heartbeating } from './heartbeat.js'
import type { RunConfigs } from './run-config.js'
import type { CommandSandbox } from './sandbox.js'
import { recordedObservation } from './tools.js'
import { appendInOrder } from './transcript.js'

/** How long listing one server's tools may take. */
const LIST_TIMEOUT_MS = 30_000
/** Characters of a definition change shown to the approver (history and the approval row carry it). */
const DIFF_LIMIT = 8_000

export interface McpDependencies {
  audit: AuditStore
  runs: RunConfigs
  sandbox: CommandSandbox
  /** The operator's MCP servers (the worker's configuration). */
  servers: readonly McpServerConfig[]
  sessions: McpSessions
  /** The worker's environment: where `${NAME}` in a server's configuration is read. */
  env: NodeJS.ProcessEnv
  /** The folder of a run's workspace on this worker (a run from a `source` has one of this worker's own). */
  folder: (runId: string, workspace: string) => string
}

export function mcpActivities(
  deps: McpDependencies,
): Pick<TetherActivities, 'tetherMcpTools' | 'tetherMcpCall'> {
  const { audit, runs, sandbox, sessions } = deps
  const servers = new Map(deps.servers.map((server) => [server.name, server]))

  async function runPolicy(runId: string): Promise<{ policy: Policy; workspace: string }> {
    const run = await runs.get(runId)
    const policy = await runs.policy(runId, undefined, [], run.policyDigest)
    return { policy, workspace: deps.folder(runId, workspaceOf(run.contract)) }
  }

  /** This run's session with `server` on this worker, started (or reached) when there is none. */
  async function session(runId: string, server: McpServerConfig): Promise<McpSession> {
    return sessions.get(runId, server.name, async () => {
      const { policy, workspace } = await runPolicy(runId)
      return McpSession.open(server.name, connection(server, policy, workspace))
    })
  }

  function connection(server: McpServerConfig, policy: Policy, workspace: string): McpConnection {
    const where = `the MCP server ${server.name}`
    if (server.kind === 'http') {
      const access = sandbox.networkAccess(policy)
      const headers = Object.fromEntries(
        Object.entries(server.headers).map(([name, value]) => [
          name,
          expandVariables(value, { env: deps.env }, `${where}'s header ${name}`),
        ]),
      )
      return {
        kind: 'http',
        url: server.url,
        headers,
        judge: access ? new EgressJudge(access, { reachSelf: 'when-named' }) : undefined,
      }
    }
    const setup = sandbox.serviceSetup(policy, { workspace }, server)
    const argv = server.command.map((word) =>
      expandVariables(word, { workspace, env: deps.env }, `${where}'s command`),
    )
    // A server that sees no workspace starts in its private home.
    const cwd = server.workspace === 'none' ? (setup.sandbox?.home ?? homedir()) : workspace
    return {
      kind: 'stdio',
      service: {
        argv,
        cwd,
        env: setup.env as Record<string, string>,
        ...(setup.sandbox ? { sandbox: setup.sandbox } : {}),
      },
    }
  }

  async function listTools(input: Parameters<TetherActivities['tetherMcpTools']>[0]): Promise<McpListing> {
    const { runId, step, pinned } = input
    const { policy } = await runPolicy(runId)
    const listing: McpListing = { tools: [], changes: [], unavailable: [] }
    const seen: Array<{ definition: McpToolDefinition; digest: string; was?: string; reason?: string }> = []
    for (const name of input.servers) {
      const server = servers.get(name)
      if (!server) {
        listing.unavailable.push({
          server: name,
          reason:
            'this worker has no MCP server of that name (every worker of a task queue needs the same servers)',
        })
        continue
      }
      let listed: Awaited<ReturnType<McpSession['listTools']>>
      try {
        listed = await (await session(runId, server)).listTools(LIST_TIMEOUT_MS)
      } catch (error) {
        await sessions.drop(runId, name)
        listing.unavailable.push({ server: name, reason: clip(oneLine(error), 500) })
        continue
      }
      if (listed.skipped.length > 0) {
        listing.unavailable.push({
          server: name,
          reason: clip(`offers tools tether cannot name, not offered: ${listed.skipped.join(', ')}`, 500),
        })
      }
      for (const definition of listed.tools) {
        const digest = mcpToolDigest(definition)
        listing.tools.push({
          name: definition.name,
          digest,
          ...(readsOnly(definition) ? { readOnly: true } : {}),
        })
        const pin = pinned[definition.name]
        const policyPins = policy.pinsFor(definition.name)
        if (pin !== undefined && pin !== digest) {
          seen.push({
            definition,
            digest,
            was: pin,
            reason: 'its definition changed since the run reviewed it',
          })
        } else if (pin === undefined && policyPins.some((pinnedDigest) => pinnedDigest !== digest)) {
          const was = policyPins.find((pinnedDigest) => pinnedDigest !== digest) as string
          seen.push({
            definition,
            digest,
            was,
            reason: `its definition is not the one the policy pins (${was.slice(0, 12)}…)`,
          })
        } else seen.push({ definition, digest })
      }
    }
    const at = new Date()
    await audit.recordMcpSightings(
      seen.map(({ definition, digest }) => ({
        runId,
        step,
        name: definition.name,
        digest,
        definition: { ...definition },
        at,
      })),
    )
    const earlier = await audit.mcpDefinitions(seen.flatMap((entry) => (entry.was ? [entry.was] : [])))
    for (const entry of seen) {
      if (!entry.was || !entry.reason) continue
      listing.changes.push(
        change(entry.definition, entry.digest, entry.was, entry.reason, earlier.get(entry.was)),
      )
    }
    return listing
  }

  /** Whether the run's contract puts this call on its `noRetry` list. */
  async function notMadeAgain(runId: string, tool: string, args: string): Promise<boolean> {
    const { contract } = await runs.get(runId)
    return mcpNoRetry(contract.noRetry, tool, args)
  }

  async function callTool(input: Parameters<TetherActivities['tetherMcpCall']>[0]) {
    const { runId, step, tool, digest } = input
    const context = Context.current()
    const recorded = await recordedObservation(audit, input)
    if (recorded) return recorded
    // A retry after a lost worker: a call an earlier attempt made and recorded, but did not tell the model
    // of, is told from its row and not made again.
    const earlier = context.info.attempt > 1 ? await recordedCall(runId, step, input.call) : undefined
    if (earlier) return observe(input, earlier.status, earlier.resultText, earlier.resultElided)
    const split = splitMcpToolName(tool)
    const server = split && servers.get(split.server)
    const args = mcpArguments(input.arguments)
    const startedAt = new Date()
    let status: McpCallStatus
    let text: string
    if (!split || !server) {
      status = 'unavailable'
      text = `this worker has no MCP server ${split?.server ?? tool}`
    } else if (context.info.attempt > 1 && (await notMadeAgain(runId, tool, args))) {
      // An earlier attempt may have made the call before its worker was lost: a tool on the run's noRetry
      // list is not called again (as a command on it is not run again), whatever that attempt did.
      status = 'interrupted'
      text =
        'an earlier attempt was cut off by a worker failure and the call was not made again (it is on the ' +
        "run's no-retry list); whether it was made, and its outcome, are unknown: check its effect before you call it again"
    } else {
      try {
        const live = await session(runId, server)
        // The tool must still be the one reviewed: a definition changed since the listing is not called.
        const now = (await live.listTools(LIST_TIMEOUT_MS)).tools.find((listed) => listed.name === tool)
        if (!now || mcpToolDigest(now) !== digest) {
          status = 'withheld'
          text = now
            ? 'its definition changed since it was reviewed; the change is asked about before the tool is offered again'
            : `${server.name} no longer lists it`
        } else {
          const outcome = await live.callTool(split.tool, input.arguments, {
            timeoutMs: input.timeoutMs,
            signal: context.cancellationSignal,
          })
          status = outcome.status
          if ('result' in outcome) text = resultText(outcome.result)
          else {
            text = outcome.reason
            // A server that hung is stopped: the next call starts it afresh.
            if (outcome.status === 'timed-out') await sessions.drop(runId, server.name)
          }
        }
      } catch (error) {
        await sessions.drop(runId, server.name)
        status = context.cancellationSignal.aborted ? 'cancelled' : 'unavailable'
        text = oneLine(error)
      }
    }
    const capture = new OutputCapture(input.outputCeiling)
    capture.push(Buffer.from(text, 'utf8'))
    const result = capture.finish()
    await audit.recordMcpCall({
      runId,
      step,
      call: input.call,
      attempt: context.info.attempt,
      server: split?.server ?? tool,
      tool,
      digest,
      argumentsSha256: sha256(args),
      argumentsBytes: Buffer.byteLength(args),
      effect: input.verdict.effect === 'ask' ? 'ask' : 'allow',
      ...(input.verdict.rule !== undefined ? { rule: input.verdict.rule } : {}),
      ...(input.verdict.layer !== undefined ? { layer: input.verdict.layer } : {}),
      status,
      resultBytes: result.bytes,
      resultSha256: result.sha256,
      resultText: result.text,
      resultElided: result.elided,
      durationMs: Date.now() - startedAt.getTime(),
      startedAt,
      finishedAt: new Date(),
    })
    if (status === 'cancelled' && context.cancellationSignal.aborted) throw context.cancellationSignal.reason
    return observe(input, status, result.text, result.elided)
  }

  async function recordedCall(runId: string, step: number, call: number) {
    return (await audit.mcpCalls(runId)).find((row) => row.step === step && row.call === call)
  }

  /** Tells the model how the call went (its observation, in the transcript) and the workflow in short. */
  async function observe(
    input: Parameters<TetherActivities['tetherMcpCall']>[0],
    status: McpCallStatus,
    text: string,
    elided: number,
  ) {
    const { runId, tool } = input
    const observation = mcpObservation(tool, status, text, elided)
    await appendInOrder(audit, runId, [
      ...input.pending,
      {
        seq: input.seq,
        message: { role: 'tool', results: [{ callId: input.callId, name: tool, output: observation }] },
      },
    ])
    return { ok: status === 'ok', summary: clip(`mcp ${tool} → ${status}`, 300), status }
  }

  return {
    tetherMcpTools: (input) => heartbeating(() => listTools(input)),
    tetherMcpCall: (input) => heartbeating(() => callTool(input)),
  }
}

/** A definition that is not the reviewed one, for an approver: why, and what changed. */
function change(
  definition: McpToolDefinition,
  digest: string,
  was: string,
  reason: string,
  before: Record<string, unknown> | undefined,
): ToolChange {
  const after = definitionText(definition)
  // The earlier definition counts only if it is still the one its digest names.
  const earlier = before && mcpToolDigest(before as unknown as McpToolDefinition) === was ? before : undefined
  const diff = earlier
    ? lineDiff(definitionText(earlier as unknown as McpToolDefinition), after)
    : `(the reviewed definition ${was.slice(0, 12)}… is not in the audit; the new one in full)\n${lineDiff('', after)}`
  return { name: definition.name, digest, reason, diff: clip(diff, DIFF_LIMIT) }
}

/** What the model reads of one call. */
function mcpObservation(tool: string, status: string, text: string, elided: number): string {
  const note = elided > 0 ? `; ${formatCount(elided)} characters elided from the middle` : ''
  switch (status) {
    case 'ok':
      return `[mcp ${tool} → ok${note}]\n${text || '(no content)'}`
    case 'error':
      return `[mcp ${tool} → error${note}]\n${text || '(no content)'}`
    case 'withheld':
      return `[mcp ${tool} withheld] not called: ${text}`
    case 'timed-out':
      return `[mcp ${tool} timed out] ${text}; the server was stopped and starts again on the next call`
    case 'interrupted':
      return `[mcp ${tool} interrupted] ${text}`
    default:
      return `[mcp ${tool} ${status}] ${text}; the server starts again on the next call`
  }
}

function oneLine(error: unknown): string {
  return ((error as Error)?.message ?? String(error)).split('\n')[0] ?? 'unknown error'
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex')
}
