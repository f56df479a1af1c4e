/**
 * What `tether dev` says while it runs: tether's own events, one line each — a run started, an approval
 * waiting (with how to answer it), an approval answered, a run's outcome — read from the audit every second,
 * and the Temporal SDK's log kept to what a person must see. A run that was refused or failed is an event
 * with its reason, not a stack trace; `--verbose` brings the SDK's own log back.
 */
import type { LogEntry } from '@temporalio/worker'
import type { ApprovalRow, AuditStore, RunRow } from '../audit/index.js'
import { clip, formatDeadline, visible } from '../present/index.js'
import { FAILURE } from '../run/index.js'
import { colour, resolution } from './context.js'

/** Runs the SDK's log through `keep` (warnings and errors, one line each; tether's own failures dropped). */
export async function quietTemporalLog(write: (line: string) => void): Promise<void> {
  const { DefaultLogger, Runtime } = await import('@temporalio/worker')
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => {
      const line = sdkLine(entry)
      if (line) write(line)
    }),
  })
}

/** Failures that are a run's outcome, which the event lines already say (with the reason). */
const OUTCOMES: ReadonlySet<string> = new Set([
  FAILURE.contractRejected,
  FAILURE.runFailed,
  FAILURE.superseded,
  FAILURE.workspaceInUse,
])

/**
 * One line for an SDK log entry worth a person's attention; undefined for a run's end, which the event
 * lines say with its reason (a failed workflow is a run that failed or was refused: its error arrives from
 * the workflow's sandbox without its type, so it is known by its message).
 */
export function sdkLine(entry: Pick<LogEntry, 'level' | 'message' | 'meta'>): string | undefined {
  if (entry.message === 'Workflow failed') return undefined
  const error = entry.meta?.error as { type?: unknown; message?: unknown } | undefined
  if (error && typeof error.type === 'string' && OUTCOMES.has(error.type)) return undefined
  const what = [entry.meta?.workflowId, entry.meta?.activityType].filter((v) => typeof v === 'string')
  const detail = error && typeof error.message === 'string' ? `: ${error.message.split('\n')[0]}` : ''
  return `temporal ${entry.level.toLowerCase()}: ${entry.message}${what.length ? ` (${what.join(', ')})` : ''}${detail}`
}

/** The audit read every `intervalMs`; each change a line. Returns `stop`. */
export function printEvents(
  audit: AuditStore,
  write: (line: string) => void,
  options: { intervalMs?: number; inboxUrl?: string | undefined } = {},
): () => Promise<void> {
  const runs = new Map<string, RunRow['status']>()
  const waiting = new Map<string, ApprovalRow>()
  let first = true
  let stopped = false
  const say = (text: string) => {
    const time = new Date().toLocaleTimeString('en-GB', { hour12: false })
    write(`${colour.dim(time)}  ${text}`)
  }
  const poll = async () => {
    const [listed, pending] = await Promise.all([
      audit.listRuns({ limit: 50 }),
      audit.pendingApprovals({ limit: 500 }),
    ])
    // Oldest first, so lines come in the order things happened.
    for (const run of [...listed.items].reverse()) {
      const known = runs.get(run.runId)
      runs.set(run.runId, run.status)
      if (first) continue
      if (known === undefined)
        say(`run ${colour.bold(run.runId)} started: ${visible(clip(firstLine(run.goal), 80))}`)
      if (run.status === 'finished' && known !== 'finished') say(outcomeLine(run))
    }
    const open = new Set(pending.map((a) => a.approvalId))
    for (const approval of pending) {
      if (waiting.has(approval.approvalId)) continue
      waiting.set(approval.approvalId, approval)
      if (!first) say(waitingLine(approval, options.inboxUrl))
    }
    for (const [approvalId] of waiting) {
      if (open.has(approvalId)) continue
      waiting.delete(approvalId)
      const answered = await audit.approval(approvalId)
      if (answered?.decision) say(answeredLine(answered))
    }
    first = false
  }
  const loop = (async () => {
    while (!stopped) {
      await poll().catch((error: unknown) =>
        say(colour.yellow(`could not read the audit: ${firstLine(String((error as Error).message))}`)),
      )
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 1_000))
    }
  })()
  return async () => {
    stopped = true
    await loop
  }
}

function outcomeLine(run: RunRow): string {
  const ok = run.outcome === 'verified' || run.outcome === 'finished'
  const outcome = run.outcome ?? 'finished'
  return `run ${colour.bold(run.runId)} ${ok ? colour.green(outcome) : colour.red(outcome)}${run.reason ? `: ${visible(clip(firstLine(run.reason), 160))}` : ''}`
}

function waitingLine(approval: ApprovalRow, inboxUrl: string | undefined): string {
  const where = inboxUrl
    ? `${inboxUrl.replace(/\/(login\?.*)?$/, '')}/approvals/${encodeURIComponent(approval.approvalId)}`
    : undefined
  return (
    `run ${colour.bold(approval.runId)} ${colour.yellow('waits for approval')} ${approval.approvalId.slice(0, 8)}: ` +
    `${approval.act} ${visible(clip(approval.target, 100))} — answer by ${formatDeadline(approval.deadline)}` +
    ` (tether approve ${approval.approvalId.slice(0, 8)}${where ? `, or ${where}` : ''})`
  )
}

function answeredLine(approval: ApprovalRow): string {
  const decision =
    approval.decision === 'approved' ? colour.green('approved') : colour.yellow(approval.decision ?? '')
  return `run ${colour.bold(approval.runId)} approval ${approval.approvalId.slice(0, 8)} ${approval.act} ${visible(clip(approval.target, 100))}: ${decision}${resolution(approval, 100)}`
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? ''
}
