/**
 * Helpers for agent-run integration tests: a fixture workspace, the audit store on the test run's
 * PostgreSQL, and a Worker serving tether's real activities with a scripted model.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Client, WorkflowHandle } from '@temporalio/client'
import type { MockActivityEnvironment } from '@temporalio/testing'
import { afterAll, beforeAll, expect, inject } from 'vitest'
import {
  type ActivityDependencies,
  createActivities,
  type SandboxDependencies,
  type StepPacer,
  waitThroughOutages,
} from '../../src/activities/index.js'
import { type AuditStore, openAudit } from '../../src/audit/index.js'
import { newRunId } from '../../src/embed/client.js'
import { type WorkerFloor, workerFloor } from '../../src/embed/worker.js'
import type { ModelScript, PriceOverrides } from '../../src/model/index.js'
import { Policy } from '../../src/policy/index.js'
import type { TaskContractInput } from '../../src/run/contract.js'
import type { TaskContract } from '../../src/run/index.js'
import type { McpServerConfig } from '../../src/stack/index.js'
import { agentRun, decideUpdate, pendingApprovalsQuery } from '../../src/workflows/index.js'
import { connectClient, createWorker, uniqueTaskQueue } from './temporal.js'

const FIXTURE = fileURLToPath(new URL('../../examples/npm-project/', import.meta.url))

/** A fresh copy of the small npm project whose one test fails (`add` subtracts). */
export async function npmWorkspace(): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), 'tether-ws-'))
  await cp(FIXTURE, path, { recursive: true })
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) }
}

/** The one call that fixes the npm fixture's failing test (`add` subtracts): what a scripted model makes. */
export const FIX_ADD = {
  name: 'edit_file',
  args: { path: 'src/math.js', search: 'a - b', replace: 'a + b' },
} as const

export async function writeScript(dir: string, script: ModelScript): Promise<string> {
  const path = join(dir, `.script-${Math.random().toString(36).slice(2)}.json`)
  await writeFile(path, JSON.stringify(script))
  return path
}

/**
 * A run's start recorded by tether's own activity, outside any workflow (activity-level tests): a new run id,
 * started under `policy`. Returns the id and `turn`, which takes one of its model turns as the workflow's first
 * does (step 1, its reply at `replySeq`, after `pending` observations).
 */
export async function startedOutsideTemporal(
  activities: ReturnType<typeof createActivities>,
  env: MockActivityEnvironment,
  contract: TaskContract,
  policy: Policy,
) {
  const runId = newRunId()
  await env.run(activities.tetherStartRun, {
    runId,
    contract,
    policy: policy.toSpec(),
    taskQueue: 'none',
    startedAt: Date.now(),
  })
  const turn = (replySeq = 1, pending: Array<{ seq: number; message: unknown }> = []) =>
    env.run(activities.tetherModelTurn, { runId, step: 1, replySeq, pending, contract } as never) as Promise<{
      text?: string
    }>
  return { runId, turn }
}

export function openTestAudit(): Promise<AuditStore> {
  return openAudit({ databaseUrl: inject('databaseUrl'), migrate: true, outages: waitThroughOutages() })
}

/** The policy most tests run under: tiered, npm test allowed, `rm` denied in an operator's base layer. */
export function testPolicy(): Policy {
  return Policy.tiered()
    .layer('base')
    .denyExec('rm*')
    .layer('project')
    .allowExec('npm test*')
    .allowWrite('src/*')
}

export async function startAgentWorker(
  audit: AuditStore,
  options: {
    taskQueue?: string
    sandbox?: SandboxDependencies
    floor?: WorkerFloor
    prices?: PriceOverrides
    snapshots?: ActivityDependencies['snapshots']
    mcpServers?: McpServerConfig[]
    /** A pacer of the test's own, with its sink (default: the process's). */
    pacer?: StepPacer
  } = {},
) {
  const taskQueue = options.taskQueue ?? uniqueTaskQueue('agent')
  const activities = createActivities({
    ...(options.pacer ? { pacer: options.pacer } : {}),
    audit,
    floor: workerFloor(options.floor),
    ...(options.sandbox ? { sandbox: options.sandbox } : {}),
    ...(options.prices ? { prices: options.prices } : {}),
    ...(options.snapshots ? { snapshots: options.snapshots } : {}),
    ...(options.mcpServers ? { mcpServers: options.mcpServers } : {}),
  })
  const { worker, connection } = await createWorker({
    taskQueue,
    activities,
    ...(options.pacer ? { sinks: options.pacer.sinks() } : {}),
  })
  const running = worker.run()
  return {
    taskQueue,
    worker,
    stop: async () => {
      worker.shutdown()
      await running
      await connection.close()
    },
  }
}

export function startRun(
  client: Client,
  taskQueue: string,
  contract: TaskContractInput,
  policy: Policy,
  workflowId = `run-${Math.random().toString(36).slice(2)}`,
) {
  return client.workflow.start(agentRun, {
    taskQueue,
    workflowId,
    args: [{ contract, policy: policy.toSpec() }],
  })
}

/**
 * A run in a fresh copy of the npm fixture whose model plays `turns`; `files` are written to the workspace
 * first. Returns the workspace (for its cleanup) and the run's handle.
 */
export async function startScriptedRun(
  on: { client: Client; taskQueue: string },
  turns: unknown[],
  options: {
    contract?: Record<string, unknown>
    policy?: Policy
    files?: Record<string, string>
    /** Runs on the workspace after `files` are written, before the run starts. */
    prepare?: (path: string) => void
    taskQueue?: string
    /** The run's id; a recorded history with signed answers replays only under the id they signed. */
    workflowId?: string
  } = {},
) {
  const ws = await npmWorkspace()
  for (const [name, content] of Object.entries(options.files ?? {})) {
    await writeFile(join(ws.path, name), content)
  }
  options.prepare?.(ws.path)
  const model = `scripted:${await writeScript(ws.path, { turns } as never)}`
  const handle = await startRun(
    on.client,
    options.taskQueue ?? on.taskQueue,
    { goal: 'g', workspace: ws.path, model, ...options.contract },
    options.policy ?? testPolicy(),
    ...(options.workflowId ? [options.workflowId] : []),
  )
  return { ws, handle }
}

/**
 * One more agent Worker, with its own audit connection, this worker's side of the sandbox (its
 * environment, its PATH) and its floor, for the tests of one describe block; stopped after its last test.
 */
export function useAgentWorker(
  sandbox: SandboxDependencies,
  floor?: WorkerFloor,
): { audit: AuditStore; taskQueue: string } {
  const extra = {} as { audit: AuditStore; taskQueue: string }
  let stop: (() => Promise<void>) | undefined
  beforeAll(async () => {
    extra.audit = await openTestAudit()
    const worker = await startAgentWorker(extra.audit, { sandbox, ...(floor !== undefined ? { floor } : {}) })
    extra.taskQueue = worker.taskQueue
    stop = worker.stop
  })
  afterAll(async () => {
    await stop?.()
    await extra.audit?.close()
  })
  return extra
}

/** One audit store, Temporal client and agent Worker per test file, stopped after its last test. */
export function useAgentHarness(): { audit: AuditStore; client: Client; taskQueue: string } {
  const harness = {} as { audit: AuditStore; client: Client; taskQueue: string }
  let stopAgent: (() => Promise<void>) | undefined
  let closeClient: (() => Promise<void>) | undefined
  beforeAll(async () => {
    harness.audit = await openTestAudit()
    const connected = await connectClient()
    harness.client = connected.client
    closeClient = connected.close
    const agent = await startAgentWorker(harness.audit)
    harness.taskQueue = agent.taskQueue
    stopAgent = agent.stop
  })
  afterAll(async () => {
    await stopAgent?.()
    await closeClient?.()
    await harness.audit?.close()
  })
  return harness
}

/** Waits for the run's one pending ask, then `approver` approves it (by name: the policy trusts names). */
export async function approveTheAsk(
  handle: Pick<WorkflowHandle<typeof agentRun>, 'query' | 'executeUpdate'>,
  approver = 'alice',
): Promise<void> {
  await expect
    .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
    .toBe(1)
  const [pending] = await handle.query(pendingApprovalsQuery)
  await handle.executeUpdate(decideUpdate, {
    args: [{ approvalId: pending?.approvalId as string, decision: 'approve', approver }],
  })
}
