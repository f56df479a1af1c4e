/**
 * A run's Temporal history, and what the workflow did in it: every execution of the run's chain (continue-
 * as-new starts a new one) is fetched from the server and replayed with tether's own workflow code, which
 * reports each activity it asks for with its input and result (replay-interceptor.ts). Replay, not decoding:
 * a local activity's marker keeps its result but not its input, and the rows the audit holds come from those
 * inputs. The workflow is deterministic, so its inputs are a function of history alone.
 *
 * The SDK's worker (with its native core) is loaded only when a history is replayed.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Client } from '@temporalio/client'
import type { RunPreparation } from '../run/index.js'
import { type AnchorReport, compareWithHistory, type ReplayedCall, type ReplayedExecution } from './anchor.js'

export type { ReplayedCall, ReplayedExecution } from './anchor.js'

import type { ReplaySinks } from './replay-interceptor.js'
import type { AuditStore } from './store.js'

/** A run's chain as Temporal holds it. */
export interface RunHistory {
  workflowId: string
  /** Each execution's history, first to last. */
  executions: Array<{ runId: string; history: unknown }>
  /** Whether the last execution is still open. */
  running: boolean
}

/** Why a run's history could not be read (no such workflow: retention may have removed it). */
export class HistoryUnavailableError extends Error {
  override readonly name = 'HistoryUnavailableError'
}

type RawEvent = {
  workflowExecutionStartedEventAttributes?: {
    firstExecutionRunId?: string | null
    taskQueue?: { name?: string | null } | null
  } | null
  workflowExecutionContinuedAsNewEventAttributes?: { newExecutionRunId?: string | null } | null
}

/** The attributes of the events that close an execution (an event carries its type's attributes). */
const CLOSING = [
  'workflowExecutionCompletedEventAttributes',
  'workflowExecutionFailedEventAttributes',
  'workflowExecutionTimedOutEventAttributes',
  'workflowExecutionCanceledEventAttributes',
  'workflowExecutionTerminatedEventAttributes',
  'workflowExecutionContinuedAsNewEventAttributes',
]

/** Most executions a chain is followed through (a loop guard; a run continues as new every few thousand events). */
const MAX_EXECUTIONS = 1_000

/**
 * Every execution of run `workflowId`, starting from `firstRunId` (the run's recorded execution) when it is
 * given and exists, else from the first execution of the workflow's latest chain, and following each
 * continue-as-new to the end.
 */
export async function fetchRunHistory(
  client: Client,
  workflowId: string,
  firstRunId?: string,
): Promise<RunHistory> {
  // Loaded here, not with the module: the audit's readers (the CLI's lists) never need Temporal's code.
  const { WorkflowNotFoundError } = await import('@temporalio/common')
  const events = async (runId: string | undefined) => {
    try {
      return (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events as RawEvent[]
    } catch (error) {
      // The server says NOT_FOUND (5), or INVALID_ARGUMENT (3) for a run id that is not one.
      const code = (error as { code?: unknown }).code
      if (error instanceof WorkflowNotFoundError || code === 5 || code === 3) return undefined
      throw error
    }
  }
  let first = firstRunId ? await events(firstRunId) : undefined
  let runId = firstRunId
  if (!first) {
    const latest = await events(undefined)
    const chainStart = latest?.[0]?.workflowExecutionStartedEventAttributes?.firstExecutionRunId
    if (!latest || !chainStart) {
      throw new HistoryUnavailableError(
        `Temporal has no history of run ${workflowId} (never started here, or removed after the namespace's retention period)`,
      )
    }
    runId = chainStart
    first = await events(chainStart)
    if (!first)
      throw new HistoryUnavailableError(`Temporal has lost the first execution of run ${workflowId}`)
  }
  const executions: RunHistory['executions'] = [{ runId: runId as string, history: { events: first } }]
  let last = first.at(-1)
  for (;;) {
    const next = last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId
    if (!next || executions.length >= MAX_EXECUTIONS) break
    const current = await events(next)
    if (!current)
      throw new HistoryUnavailableError(`Temporal has lost execution ${next} of run ${workflowId}`)
    executions.push({ runId: next, history: { events: current } })
    last = current.at(-1)
  }
  const running = !CLOSING.some((attributes) => (last as Record<string, unknown> | undefined)?.[attributes])
  return { workflowId, executions, running }
}

/** The prebuilt replayer bundle of a build (`npm run build`); in a checkout it is bundled on first use. */
function replayerSource(): { workflowBundle: { code: string } | { codePath: string } } | undefined {
  const bundle = fileURLToPath(new URL('../../audit-bundle.js', import.meta.url))
  return existsSync(bundle) ? { workflowBundle: { codePath: bundle } } : undefined
}

/** A module beside this one or in the workflows folder: the compiled `.js` in a build, the `.ts` in a checkout. */
function sourcePath(relative: string): string {
  const js = fileURLToPath(new URL(relative, import.meta.url))
  return existsSync(js) ? js : js.replace(/\.js$/, '.ts')
}

let bundled: Promise<{ code: string }> | undefined

async function replayer(): Promise<{ workflowBundle: { code: string } | { codePath: string } }> {
  const prebuilt = replayerSource()
  if (prebuilt) return prebuilt
  bundled ??= import('@temporalio/worker').then(({ bundleWorkflowCode }) =>
    bundleWorkflowCode({
      workflowsPath: sourcePath('../workflows/index.js'),
      workflowInterceptorModules: [sourcePath('./replay-interceptor.js')],
      logger: quietLogger,
    }),
  )
  return { workflowBundle: await bundled }
}

/** Bundling and replay report through a logger; only failures matter here, and those are thrown. */
const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
}

/**
 * Replays every execution of a run and returns the activity calls each made. Throws
 * HistoryUnavailableError when an execution does not replay with this tether's workflow code (a history
 * from a newer tether, or one that was not made by tether's workflow).
 */
export async function replayRun(run: RunHistory): Promise<ReplayedExecution[]> {
  const { Worker } = await import('@temporalio/worker')
  const byRun = new Map<string, ReplayedExecution & { open: Map<number, ReplayedCall> }>()
  const execution = (info: { runId: string; firstExecutionRunId: string }) => {
    let found = byRun.get(info.runId)
    if (!found) {
      found = { runId: info.runId, firstExecutionRunId: info.firstExecutionRunId, calls: [], open: new Map() }
      byRun.set(info.runId, found)
    }
    return found
  }
  type Sink = ReplaySinks['tetherAuditReplay']
  const sinks = {
    tetherAuditReplay: {
      called: {
        fn: (info: { runId: string; firstExecutionRunId: string }, call: Parameters<Sink['called']>[0]) => {
          const target = execution(info)
          const entry: ReplayedCall = { type: call.type, local: call.local, input: call.input, state: 'open' }
          target.calls.push(entry)
          target.open.set(call.id, entry)
        },
        callDuringReplay: true,
      },
      settled: {
        fn: (
          info: { runId: string; firstExecutionRunId: string },
          outcome: Parameters<Sink['settled']>[0],
        ) => {
          const entry = execution(info).open.get(outcome.id)
          if (!entry) return
          if (outcome.failed) entry.state = 'failed'
          else {
            entry.state = 'completed'
            entry.result = outcome.result
          }
        },
        callDuringReplay: true,
      },
    },
  }
  const histories = run.executions.map(({ history }) => ({ workflowId: run.workflowId, history }))
  for await (const result of Worker.runReplayHistories({ ...(await replayer()), sinks }, histories)) {
    if (result.error) {
      throw new HistoryUnavailableError(
        `execution ${result.runId} of run ${run.workflowId} does not replay with this tether's workflow code: ${firstLine(result.error.message)}`,
      )
    }
  }
  return run.executions.map(({ runId, history }) => {
    const found = byRun.get(runId)
    const events = (history as { events?: Array<RawEvent & Record<string, unknown>> }).events
    const started = events?.[0]?.workflowExecutionStartedEventAttributes
    const last = events?.at(-1)
    // Closed by Temporal itself, not by the workflow: the audit's reconciliation records these outcomes.
    const closedBy = last?.workflowExecutionTerminatedEventAttributes
      ? ('terminated' as const)
      : last?.workflowExecutionTimedOutEventAttributes
        ? ('timed-out' as const)
        : undefined
    return {
      runId,
      firstExecutionRunId: found?.firstExecutionRunId ?? runId,
      taskQueue: started?.taskQueue?.name ?? undefined,
      calls: found?.calls ?? [],
      ...(closedBy ? { closedBy } : {}),
    }
  })
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? ''
}

/** How many times a running run is compared again when it did not match (see `verifyRunHistory`). */
const RUNNING_RETRIES = 3

/**
 * Compares run `runId`'s audit rows with its Temporal history (anchor.ts). A running run's last writes may
 * be in the database before they are in history (a local activity writes, then its workflow task completes),
 * so a running run that does not match is compared again, a second apart, before its findings stand.
 * Throws HistoryUnavailableError when Temporal has no (replayable) history of the run.
 */
export async function verifyRunHistory(
  client: Client,
  audit: Pick<AuditStore, 'runRows'>,
  runId: string,
): Promise<AnchorReport & { running: boolean }> {
  for (let attempt = 0; ; attempt += 1) {
    const recorded = (await audit.runRows(runId)).runs[0]?.execution_id
    const history = await fetchRunHistory(client, runId, typeof recorded === 'string' ? recorded : undefined)
    const executions = await replayRun(history)
    const digests = executions.flatMap((e) =>
      e.calls.flatMap((call) => {
        const digest = (call.result as RunPreparation | undefined)?.policyDigest
        return call.type === 'tetherPrepareRun' && digest ? [digest] : []
      }),
    )
    const report = compareWithHistory(runId, executions, await audit.runRows(runId, digests))
    if (!history.running || report.findings.length === 0 || attempt >= RUNNING_RETRIES)
      return { ...report, running: history.running }
    await new Promise((resolve) => setTimeout(resolve, 1_000))
  }
}
