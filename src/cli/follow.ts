/** Rendering a run's timeline, and following a live run until it ends (`--follow`). */

import type { Client } from '@temporalio/client'
import {
  type ApprovalRow,
  type AuditStore,
  decisionChannels,
  type RunSummary,
  type TimelineEntry,
} from '../audit/index.js'
import {
  backticks,
  deadlineSetBy,
  formatBytes,
  formatDeadline,
  formatMoney,
  rememberWords,
  ruleWords,
  seconds,
  words,
} from '../present/index.js'
import type { AgentRunResult } from '../workflows/index.js'
import { colour, print, visible } from './context.js'

export function printTimeline(summary: RunSummary, timeline: TimelineEntry[]): void {
  print(`${colour.bold(summary.runId)}  ${outcomeText(summary.outcome ?? summary.status)}`)
  if (summary.reason) print(`reason: ${visible(summary.reason)}`)
  print(colour.dim(`goal: ${summary.goal.split('\n')[0] ?? ''}`))
  print(colour.dim(`sandbox: ${sandboxText(summary.sandbox)}`))
  if (summary.policyDigest) {
    print(
      colour.dim(
        `policy: ${summary.policyDigest.slice(0, 12)} (the worker's floor ${summary.floor ?? 'unrecorded'}, then the run's own layers; "(the worker's floor)" marks the floor's rules)`,
      ),
    )
  }
  if (summary.buildId)
    print(colour.dim(`build: ${visible(summary.buildId)} (Worker Versioning: the run is pinned to it)`))
  for (const entry of timeline.filter(shown)) print(entryLine(entry))
  print(
    colour.dim(
      `${summary.steps} steps, ${summary.inputTokens + summary.outputTokens} tokens, ${spendText(summary.cost)}` +
        (summary.durationMs !== undefined ? `, ${seconds(summary.durationMs)}` : ''),
    ),
  )
}

/** A run's spend as `tether show`, `tether ls` and the inbox say it. */
export function spendText(cost: number | undefined): string {
  return cost === undefined ? 'spend unknown (no price for its model)' : `spent ${formatMoney(cost)}`
}

function sandboxText(mode: RunSummary['sandbox']): string {
  if (mode === 'enforce') return 'enforce (commands ran inside the OS sandbox)'
  if (mode === 'off') return "off (the worker's floor turned it off: commands ran with the worker's access)"
  return 'not recorded (a run from before the sandbox)'
}

function outcomeText(outcome: string): string {
  if (outcome === 'verified' || outcome === 'finished') return colour.green(outcome)
  if (outcome === 'running') return colour.yellow(outcome)
  return colour.red(outcome)
}

/** How approvals end: a policy decision from one of these repeats the approval line that shows the answer. */
const ANSWER_CHANNELS: ReadonlySet<string> = new Set(decisionChannels)

/**
 * Whether a timeline entry gets its own line. Left out, because another line says it: the policy record of
 * an approval's answer (the approval line shows who answered, how, and what was remembered) and the gate's
 * output record (the command's own line shows its status and size; `tether audit ran` has the output).
 */
function shown(entry: TimelineEntry): boolean {
  if (entry.type === 'policy') return !(entry.kind === 'decision' && ANSWER_CHANNELS.has(entry.source))
  if (entry.type === 'gate') return entry.kind !== 'gate_output'
  return true
}

export function entryKey(entry: TimelineEntry): string {
  switch (entry.type) {
    case 'step':
      return `step:${entry.step}`
    case 'policy':
      return `policy:${entry.id}`
    case 'exec':
      return `exec:${entry.step}:${entry.call}:${entry.attempt}`
    case 'gate':
      return `gate:${entry.step}:${entry.kind}:${entry.at.getTime()}`
    case 'approval':
      return `approval:${entry.approvalId}:${entry.decision ?? 'pending'}`
  }
}

export function entryLine(entry: TimelineEntry): string {
  switch (entry.type) {
    case 'step':
      return `${colour.bold(`step ${entry.step}`)}  ${visible(entry.decision)}${
        entry.cost === undefined ? '' : colour.dim(`  (${formatMoney(entry.cost)})`)
      }`
    case 'policy':
      return entry.kind === 'refusal'
        ? `  ${colour.red('refused')}   ${entry.act} ${visible(entry.target)}  ${colour.dim(
            words(ruleWords(entry, String)),
          )}`
        : `  ${entry.effect === 'allow' ? colour.green('decided') : colour.yellow('decided')}   ${entry.act} ${visible(entry.target)}  ${colour.dim(`${entry.decidedBy ?? ''} via ${entry.source}: ${entry.reason}`)}`
    case 'exec': {
      const status = entry.status === 'exited' ? `exit ${entry.exitCode}` : entry.status
      const bytes = entry.stdout.bytes + entry.stderr.bytes
      return `  ${colour.dim('ran')}       ${visible(entry.argv.join(' '))}  → ${entry.exitCode === 0 ? colour.green(status) : colour.yellow(status)}  ${colour.dim(`${seconds(entry.durationMs)}, ${formatBytes(bytes)}`)}`
    }
    case 'gate':
      return `  ${entry.kind === 'gate_passed' ? colour.green('gate') : entry.kind === 'gate_output' ? colour.dim('gate') : colour.red('gate')}      ${visible((entry.detail.split('\n')[0] ?? '').slice(0, 160))}`
    case 'approval':
      return entry.decision
        ? `  ${colour.bold('approval')}  ${entry.act} ${visible(entry.target)} → ${entry.decision} by ${entry.decidedBy} via ${entry.channel}${entry.reason ? `: ${entry.reason}` : ''}` +
            `${entry.replacement ? `; ran the edited command ${visible(entry.replacement.join(' '))} instead` : ''}` +
            `${entry.raiseTo ? `; raised the cost cap to ${visible(entry.raiseTo)}` : ''}` +
            `${entry.remember ? `; remembered ${visible(`\`${entry.remember}\``)}` : ''}`
        : `  ${colour.yellow('waiting')}   approval ${entry.approvalId}: ${entry.act} ${visible(entry.target)} — answer by ${formatDeadline(entry.deadline)} (${deadlineSetBy(entry.deadlineBy)}) with \`tether approve ${entry.approvalId} --as <you>${entry.act === 'budget' ? ' --raise-to "<amount> USD"' : ''}\` or \`tether deny …\`` +
            `${entry.approvalsRequired > 1 ? `; needs ${entry.approvalsRequired} approvers` : ''}` +
            `${entry.identity === 'signed' ? ', signed' : entry.identity === 'unsigned' ? ', unsigned' : ''}` +
            `${entry.rememberOffer ? `; remember would add ${visible(rememberText(entry))}` : ''}`
  }
}

/** What approving with "remember" would add, as the approver reads it before answering. */
export function rememberText(approval: { rememberOffer?: ApprovalRow['rememberOffer'] }): string {
  return approval.rememberOffer
    ? words(rememberWords(approval.rememberOffer, backticks, ' with --remember wider'))
    : ''
}

/**
 * Prints a live run's timeline as it grows (commands with a live elapsed time and byte count from their
 * heartbeats, approvals waiting) until the run closes; returns its result.
 */
export async function followRun(
  client: Client,
  audit: AuditStore,
  runId: string,
  options: { json: boolean; intervalMs?: number },
): Promise<AgentRunResult | { runId: string; outcome: string; reason?: string }> {
  const handle = client.workflow.getHandle(runId)
  const seen = new Set<string>()
  const live = Boolean(process.stdout.isTTY) && !options.json
  let liveLine = false
  let lastProgress = 0
  const clearLive = () => {
    if (liveLine) process.stdout.write('\r\u001b[2K')
    liveLine = false
  }
  for (;;) {
    const description = await handle.describe()
    if (!options.json) {
      for (const entry of (await audit.runTimeline(runId)).filter(shown)) {
        const key = entryKey(entry)
        if (seen.has(key)) continue
        seen.add(key)
        clearLive()
        print(entryLine(entry))
      }
      const running = description.raw.pendingActivities?.find((a) => a.activityType?.name === 'tetherExec')
      if (running) {
        const details = heartbeat(running.heartbeatDetails?.payloads?.[0]?.data)
        const text = colour.dim(
          `  running … ${((details?.elapsedMs ?? 0) / 1000).toFixed(0)} s, ${formatBytes(details?.bytes ?? 0)} of output`,
        )
        if (live) {
          process.stdout.write(`\r\u001b[2K${text}`)
          liveLine = true
        } else if (Date.now() - lastProgress > 10_000) {
          print(text)
          lastProgress = Date.now()
        }
      } else clearLive()
    }
    if (description.status.name !== 'RUNNING') {
      clearLive()
      const summary = await audit.runSummary(runId)
      const result =
        description.status.name === 'COMPLETED'
          ? ((await handle.result()) as AgentRunResult)
          : {
              runId,
              outcome: summary?.outcome ?? description.status.name.toLowerCase(),
              ...(summary?.reason ? { reason: summary.reason } : {}),
            }
      if (!options.json) {
        print(
          `${colour.bold('outcome')}   ${outcomeText(result.outcome)}${result.reason ? colour.dim(` — ${result.reason}`) : ''}`,
        )
      }
      return result
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500))
  }
}

function heartbeat(data: Uint8Array | null | undefined): { elapsedMs?: number; bytes?: number } | undefined {
  if (!data) return undefined
  try {
    return JSON.parse(Buffer.from(data).toString('utf8')) as { elapsedMs?: number; bytes?: number }
  } catch {
    return undefined
  }
}
