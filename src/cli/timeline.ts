/** A run's timeline for a person: a line per entry (`tether show`, and `--follow` as it grows). */

import { join } from 'node:path'
import { type RunSummary, type TimelineEntry, tellsSomethingNew } from '../audit/reader.js'
import type { PlantedGitFile } from '../exec/index.js'
import {
  commandStatus,
  counted,
  deadlineSetBy,
  formatBytes,
  formatDeadline,
  formatMoney,
  plantedGitWarning,
  ruleWords,
  seconds,
  words,
  workspaceEventWords,
} from '../present/index.js'
import { colour, print, rememberText, resolution, visible } from './context.js'

export function printTimeline(summary: RunSummary, timeline: TimelineEntry[]): void {
  print(`${colour.bold(summary.runId)}  ${outcomeText(summary.outcome ?? summary.status)}`)
  if (summary.reason) print(`reason: ${visible(summary.reason)}`)
  print(colour.dim(`goal: ${summary.goal.split('\n')[0] ?? ''}`))
  // A folder on the workers, or the source a worker laid out (`git URL at ref`, an earlier run's step).
  if (summary.workspace) print(colour.dim(`workspace: ${visible(summary.workspace)}`))
  print(colour.dim(`sandbox: ${sandboxText(summary.sandbox)}`))
  if (summary.policyDigest) {
    print(
      colour.dim(
        `policy: ${summary.policyDigest.slice(0, 12)} (the worker's floor ${summary.floor ?? 'unrecorded'}, then the run's own layers; "(the worker's floor)" marks the floor's rules)`,
      ),
    )
  }
  if (summary.buildId)
    print(
      colour.dim(
        `build: ${visible(summary.buildId)} (the worker build that started the run; with Worker Versioning, the run is pinned to it)`,
      ),
    )
  for (const entry of timeline.filter(tellsSomethingNew)) print(entryLine(entry))
  print(
    colour.dim(
      `${counted(summary.steps, 'step')}, ${counted(summary.inputTokens + summary.outputTokens, 'token')}, ` +
        spendText(summary.cost) +
        (summary.durationMs !== undefined ? `, ${seconds(summary.durationMs)}` : ''),
    ),
  )
}

/**
 * What a run on a folder of this machine left there for git to run (nothing for a folder elsewhere), and
 * whether a root worker kept any of it its commands' identity's when it gave the folder back.
 */
export async function plantedGitOf(summary: {
  workspace: string
  startedAt: Date
}): Promise<{ files: PlantedGitFile[]; held: boolean }> {
  // A source's folder is named by its source (`git URL at ref`), not by a path: no need to load the check.
  if (!summary.workspace.startsWith('/')) return { files: [], held: false }
  const { heldByIdentity, plantedGitFiles } = await import('../exec/index.js')
  const files = plantedGitFiles(summary.workspace, summary.startedAt)
  return { files, held: files.some((file) => heldByIdentity(join(summary.workspace, file.path))) }
}

/**
 * For a running run whose folder (on this machine) a root worker took over: root's git refuses it meanwhile,
 * and git's own advice for that, safe.directory, would outlast the run and make root's git obey whatever git
 * files the run writes there. Undefined otherwise.
 */
export async function heldFolderLine(summary: {
  workspace: string
  status: string
}): Promise<string | undefined> {
  if (summary.status !== 'running' || !summary.workspace.startsWith('/')) return undefined
  const { heldByIdentity } = await import('../exec/index.js')
  if (!heldByIdentity(summary.workspace)) return undefined
  return (
    `${colour.yellow('note')}      while the run goes, its folder is its commands' identity's: git run there as root ` +
    'refuses it as another user\'s ("dubious ownership") until the run ends. Do not add it to safe.directory: ' +
    "root's git would then obey git files the run writes there"
  )
}

/**
 * Git files that make git run a program (exec's plantedGitFiles), as a warning: inside the sandbox they do
 * nothing, but git run there by a person, or by an editor on its own, obeys them. `held`: a root worker left
 * them to its commands' identity, so git refuses them — and git's own advice, safe.directory, would undo that.
 */
export function plantedGitLines(found: readonly PlantedGitFile[], where: string, held = false): string[] {
  if (found.length === 0) return []
  return [
    `${colour.yellow('warning')}   ${plantedGitWarning(where)}:`,
    ...found.map((file) => `            ${visible(file.path)}: ${visible(file.what)}`),
    ...(held
      ? [
          "            tether left them its commands' identity's, so git refuses them as another user's (\"dubious " +
            'ownership"): read them before you add them to safe.directory or chown them',
        ]
      : []),
  ]
}

/** A run's spend as `tether show` says it. */
function spendText(cost: number | undefined): string {
  return cost === undefined ? 'spend unknown (no price for its model)' : `spent ${formatMoney(cost)}`
}

function sandboxText(mode: RunSummary['sandbox']): string {
  if (mode === 'enforce') return 'enforce (commands ran inside the OS sandbox)'
  if (mode === 'off') return "off (the worker's floor turned it off: commands ran with the worker's access)"
  return 'not recorded (a run from before the sandbox)'
}

export function outcomeText(outcome: string): string {
  if (outcome === 'verified' || outcome === 'finished') return colour.green(outcome)
  if (outcome === 'running') return colour.yellow(outcome)
  return colour.red(outcome)
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
    case 'workspace':
      return `workspace:${entry.step}:${entry.call}:${entry.kind}`
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
      const status = commandStatus(entry)
      const bytes = entry.stdout.bytes + entry.stderr.bytes
      return `  ${colour.dim('ran')}       ${visible(entry.argv.join(' '))}  → ${entry.exitCode === 0 ? colour.green(status) : colour.yellow(status)}  ${colour.dim(`${seconds(entry.durationMs)}, ${formatBytes(bytes)}`)}`
    }
    case 'gate':
      return `  ${entry.kind === 'gate_passed' ? colour.green('gate') : entry.kind === 'gate_output' ? colour.dim('gate') : colour.red('gate')}      ${visible((entry.detail.split('\n')[0] ?? '').slice(0, 160))}`
    case 'approval':
      return entry.decision
        ? `  ${colour.bold('approval')}  ${entry.act} ${visible(entry.target)} → ${entry.decision}${resolution(entry)}` +
            `${entry.replacement ? `; ran the edited command ${visible(entry.replacement.join(' '))} instead` : ''}` +
            `${entry.raiseTo ? `; raised the cost cap to ${visible(entry.raiseTo)}` : ''}` +
            `${entry.remember ? `; remembered ${visible(`\`${entry.remember}\``)}` : ''}`
        : `  ${colour.yellow('waiting')}   approval ${entry.approvalId}: ${entry.act} ${visible(entry.target)} — answer by ${formatDeadline(entry.deadline)} (${deadlineSetBy(entry.deadlineBy)}) with \`tether approve ${entry.approvalId} --as <you>${entry.act === 'budget' ? ' --raise-to "<amount> USD"' : ''}\` or \`tether deny …\`` +
            `${entry.approvalsRequired > 1 ? `; needs ${entry.approvalsRequired} approvers` : ''}` +
            `${entry.identity === 'signed' ? ', signed' : entry.identity === 'unsigned' ? ', unsigned' : ''}` +
            `${entry.rememberOffer ? `; remember would add ${visible(rememberText(entry))}` : ''}`
    case 'workspace': {
      const { label, expected, before, named, after } = workspaceEventWords(entry)
      return `  ${(expected ? colour.dim : colour.yellow)(label.padEnd(9))} ${before} ${visible(named)}  ${colour.dim(after)}`
    }
  }
}
