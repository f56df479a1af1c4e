/**
 * The pieces inbox pages are made of: an approval's facts, a transcript, commands, a diff, a run's timeline
 * and its chart. Pure functions from audit rows to `Html`; every row value goes through the `html` template
 * (escaped). Words come from present/ — counts, durations, times, which rule decided — as everywhere else.
 */

import type {
  AnswerCheck,
  ApprovalAnswerRow,
  ApprovalRow,
  ExecutedCommand,
  StepRow,
  StoredMessage,
  TimelineEntry,
} from '../audit/index.js'
import { renderCommand } from '../policy/index.js'
import {
  clipNoted,
  commandStatus,
  counted,
  type Decider,
  deadlineSetBy,
  formatBytes,
  formatDeadline,
  formatDuration,
  formatMoney,
  localText,
  rememberWords,
  resolvedHow,
  ruleWords,
  utcText,
  workspaceEventWords,
} from '../present/index.js'
import type { WorkspaceChanges } from './changes.js'
import { type Html, href, html, laidOut, prose } from './html.js'

/** The moment and the viewer's time zone a page is rendered for. */
export interface Clock {
  now: Date
  timeZone: string
}

/** A deadline in UTC, in the viewer's zone and as time left; the browser script refreshes the text. */
export function deadline(at: Date, clock: Clock): Html {
  return html`<time datetime="${at.toISOString()}" data-deadline>${formatDeadline(at, clock.now, clock.timeZone)}</time>`
}

/** A moment in the viewer's time zone, with UTC on hover; the browser script writes it in its own zone. */
export function when(at: Date, clock: Clock): Html {
  return html`<time datetime="${at.toISOString()}" title="${utcText(at)}" data-local>${localText(at, clock.timeZone)}</time>`
}

export function code(text: string): Html {
  return html`<code>${text}</code>`
}

export function ruleText(row: Decider): Html {
  return html`${ruleWords(row, code)}`
}

export function rememberText(offer: ApprovalRow['rememberOffer']): Html {
  return html`${rememberWords(offer, code)}`
}

export function needsText(row: Pick<ApprovalRow, 'approvalsRequired' | 'identity'>): string {
  const who = row.approvalsRequired === 1 ? '1 approver' : `${row.approvalsRequired} different approvers`
  return `${who}, ${row.identity === 'signed' ? 'signed with their keys' : 'unsigned (names are trusted)'}`
}

/**
 * The facts an approver weighs, as a definition list: what is asked first (the action, as judged, why it
 * asks, what remembering adds), then when and for which run.
 */
export function approvalFacts(
  row: ApprovalRow & { goal?: string; workspace?: string },
  clock: Clock,
  options: { tree?: boolean } = {},
): Html {
  const tree = typeof row.tree === 'string' ? row.tree : undefined
  return html`<dl class="facts">
    <dt>Asks to</dt><dd>${row.act} <code class="target">${row.target}</code></dd>
    ${tree && options.tree !== false ? html`<dt>As judged</dt><dd><pre class="tree">${tree}</pre></dd>` : ''}
    <dt>Because of</dt><dd>${ruleText(row)}</dd>
    <dt>Remember would add</dt><dd>${rememberText(row.rememberOffer)}</dd>
    <dt>Needs</dt><dd>${needsText(row)}</dd>
    <dt>Deadline</dt><dd>${deadline(row.deadline, clock)} <small>(${deadlineSetBy(row.deadlineBy)})</small></dd>
    ${row.goal !== undefined ? html`<dt>Goal</dt><dd class="goal">${prose(clipNoted(row.goal, 600))}</dd>` : ''}
    <dt>Run</dt><dd><a href="${href('runs', row.runId)}">${row.runId}</a>, step ${row.step}</dd>
    ${row.workspace !== undefined ? html`<dt>Workspace</dt><dd>${code(row.workspace)}</dd>` : ''}
  </dl>`
}

/** How an approval ended: who, when, through which channel, with what. */
export function decisionText(row: ApprovalRow, clock: Clock): Html {
  if (!row.decision) return html`<strong>waiting</strong>`
  const { how, reason } = resolvedHow(row)
  return html`<strong class="decision ${row.decision}">${row.decision}</strong>${how}${row.decidedAt ? html` at ${when(row.decidedAt, clock)}` : ''}${reason ? html`: “${prose(reason)}”` : ''}${
    row.replacement ? html`; the edited command ${code(renderCommand(row.replacement))} ran instead` : ''
  }${row.raiseTo ? html`; raised the cost cap to ${row.raiseTo}` : ''}${row.remember ? html`; remembered ${code(row.remember)} for the rest of the run` : ''}`
}

export function proofText(check: AnswerCheck): Html {
  switch (check.status) {
    case 'verified':
      return html`<span class="proof ok">signature verified (${check.fingerprint})</span>`
    case 'unsigned':
      return html`<span class="proof">unsigned (the name was trusted)</span>`
    case 'failed':
      return html`<span class="proof bad">proof failed: ${check.reason}</span>`
  }
}

export function answersList(
  answers: Array<{ answer: ApprovalAnswerRow; check: AnswerCheck }>,
  clock: Clock,
): Html {
  if (answers.length === 0) return html``
  return html`<ul class="answers">${answers.map(
    ({ answer, check }) =>
      html`<li>${answer.approver} ${answer.decision === 'approve' ? 'approved' : 'denied'} via ${answer.channel} at
        ${when(answer.answeredAt, clock)}${answer.reason ? html`: “${prose(answer.reason)}”` : ''} — ${proofText(check)}</li>`,
  )}</ul>`
}

export function argsText(name: string, args: unknown): string {
  const a = (args ?? {}) as Record<string, unknown>
  if (name === 'exec' && Array.isArray(a.argv)) return renderCommand(a.argv.map(String))
  if (typeof a.path === 'string') return a.path
  if (typeof a.pattern === 'string')
    return `/${a.pattern}/${typeof a.glob === 'string' ? ` in ${a.glob}` : ''}`
  return clipNoted(JSON.stringify(args) ?? '', 300)
}

function toolCalls(calls: Array<{ name: string; args: unknown }>): Html {
  if (calls.length === 0) return html``
  return html`<ul class="calls">${calls.map(
    (call) => html`<li><span class="tool">${call.name}</span> ${code(argsText(call.name, call.args))}</li>`,
  )}</ul>`
}

/** Transcript messages: the goal and gate messages, the model's turns with their calls, tool results. */
export function transcript(messages: StoredMessage[]): Html {
  if (messages.length === 0) return html`<p>No messages yet.</p>`
  return html`<ol class="transcript">${messages.map((message) => {
    const content = (message.content ?? {}) as {
      role?: string
      content?: unknown
      text?: unknown
      toolCalls?: Array<{ name: string; args: unknown }>
      results?: Array<{ name: string; output: unknown }>
    }
    switch (content.role) {
      case 'assistant':
        return html`<li class="assistant"><span class="who">model</span>
          ${content.text ? html`<p class="said">${prose(clipNoted(String(content.text), 2_000))}</p>` : ''}
          ${toolCalls(content.toolCalls ?? [])}</li>`
      case 'tool':
        return html`<li class="tool-result">${(content.results ?? []).map(
          (result) =>
            html`<span class="who">${result.name} result</span><pre>${laidOut(clipNoted(String(result.output), 2_000))}</pre>`,
        )}</li>`
      default:
        return html`<li class="user"><span class="who">${message.seq === 0 ? 'goal' : (content.role ?? 'message')}</span>
          <pre>${laidOut(clipNoted(typeof content.content === 'string' ? content.content : JSON.stringify(content), 2_000))}</pre></li>`
    }
  })}</ol>`
}

function stream(name: string, capture: ExecutedCommand['stdout']): Html {
  return html`<div class="stream"><span class="who">${name}</span> ${formatBytes(capture.bytes)}, ${counted(capture.lines, 'line')},
    sha256 <code class="hash">${capture.sha256}</code>${capture.elided ? html`, ${counted(capture.elided, 'character')} elided` : ''}
    ${capture.text ? html`<pre>${laidOut(capture.text)}</pre>` : ''}</div>`
}

/** One command as it ran: argv, how it ended, how long, how much output and its hash. */
export function commandResult(command: ExecutedCommand, key: string): Html {
  const ok = command.status === 'exited' && command.exitCode === 0
  return html`<div class="command">
    ${code(renderCommand(command.argv))} → <strong class="${ok ? 'ok' : 'bad'}">${commandStatus(command)}</strong>
    in ${formatDuration(command.durationMs)}, ${formatBytes(command.stdout.bytes + command.stderr.bytes)} of output
    <details data-key="${key}"><summary>Output and hashes</summary>${stream('stdout', command.stdout)}${stream('stderr', command.stderr)}</details>
  </div>`
}

export function commandsSoFar(commands: ExecutedCommand[]): Html {
  if (commands.length === 0) return html`<p>No commands have run yet.</p>`
  return html`<ol class="commands">${commands.map(
    (command) =>
      html`<li><span class="who">${command.kind === 'gate' ? `step ${command.step} gate` : `step ${command.step}`}</span> ${commandResult(command, `cmd-${command.step}-${command.call}`)}</li>`,
  )}</ol>`
}

/** A unified diff as one: files, hunks, added and removed lines each marked (and coloured by the sheet). */
export function diffView(diff: string): Html {
  return html`<pre class="diff">${diff.split('\n').map((line) => {
    const kind = line.startsWith('diff --git')
      ? 'file'
      : line.startsWith('+++') || line.startsWith('---') || line.startsWith('index ')
        ? 'meta'
        : line.startsWith('@@')
          ? 'hunk'
          : line.startsWith('+')
            ? 'add'
            : line.startsWith('-')
              ? 'del'
              : undefined
    // A line a block: copied text keeps its lines, and a marked line is marked across the whole width.
    return html`<span${kind ? html` class="${kind}"` : ''}>${laidOut(line || ' ')}</span>`
  })}</pre>`
}

export function changesView(changes: WorkspaceChanges): Html {
  if (changes.kind === 'unavailable') return html`<p>${changes.why}.</p>`
  if (changes.kind === 'snapshots') {
    const since = `From the run's snapshots: step ${changes.from} → step ${changes.to}`
    if (changes.files.length === 0) return html`<p>${since}, no changes.</p>`
    return html`<p>${since}.</p>
      ${changes.files.map((file) =>
        file.text.startsWith('--- ')
          ? html`<details data-key="${`diff-${file.path}`}" open><summary>${file.change} ${file.path}</summary>${diffView(file.text)}</details>`
          : html`<p>${file.change} ${file.path}: ${file.text}</p>`,
      )}
      ${changes.elided ? html`<p>… and ${counted(changes.elided, 'more change')}: the patch stops at 1 MB.</p>` : ''}`
  }
  if (!changes.status.trim()) return html`<p>No changes: the working tree matches its last commit.</p>`
  return html`<pre class="status">${laidOut(changes.status)}</pre>
    ${changes.diff ? html`<details data-key="diff" open><summary>Diff against HEAD${changes.elided ? ` (${counted(changes.elided, 'character')} elided)` : ''}</summary>${diffView(changes.diff)}</details>` : ''}`
}

type Proofs = Map<string, Array<{ answer: ApprovalAnswerRow; check: AnswerCheck }>>

/** One entry of a step, as a line under it. */
function stepEntry(entry: TimelineEntry, clock: Clock, proofs: Proofs): Html {
  switch (entry.type) {
    case 'step':
      return html``
    case 'policy':
      return entry.kind === 'refusal'
        ? html`<li class="policy refusal"><span class="verdict bad">refused</span> ${entry.act} ${code(entry.target)} by
            ${ruleText(entry)}: ${prose(entry.reason)}</li>`
        : html`<li class="policy verdict"><span class="verdict ${entry.effect === 'allow' ? 'ok' : 'bad'}">${entry.effect === 'allow' ? 'allowed' : entry.effect === 'deny' ? 'denied' : 'noted'}</span>
            ${entry.act} ${code(entry.target)} — ${entry.decidedBy ?? 'tether'} via ${entry.source}: ${prose(entry.reason)}</li>`
    case 'exec':
      return html`<li class="exec"><span class="verdict ${entry.status === 'exited' && entry.exitCode === 0 ? 'ok' : 'bad'}">${entry.kind === 'gate' ? 'gate ran' : 'ran'}</span> ${commandResult(entry, `exec-${entry.step}-${entry.call}`)}</li>`
    case 'gate':
      return html`<li class="gate"><span class="verdict ${entry.kind === 'gate_passed' ? 'ok' : 'bad'}">${entry.kind === 'gate_passed' ? 'gate passed' : 'gate failed'}</span>
        ${prose(clipNoted(entry.detail.split('\n')[0] ?? '', 400))}</li>`
    case 'approval': {
      const waited = entry.decidedAt ? entry.decidedAt.getTime() - entry.requestedAt.getTime() : undefined
      return html`<li class="approval"><span class="verdict ${entry.decision === 'approved' ? 'ok' : entry.decision ? 'bad' : 'waiting'}">${entry.decision ? 'approval' : 'waiting'}</span>
        ${entry.act} ${code(entry.target)} (${ruleText(entry)}): ${decisionText(entry, clock)}${waited !== undefined ? `, after ${formatDuration(waited)}` : ''}
        ${entry.decision ? '' : html` — <a href="${href('approvals', entry.approvalId)}">answer it</a>, deadline ${deadline(entry.deadline, clock)}`}
        ${answersList(proofs.get(entry.approvalId) ?? [], clock)}</li>`
    }
    case 'workspace': {
      const { label, expected, before, named, after } = workspaceEventWords(entry)
      return html`<li class="workspace"><span class="verdict ${expected ? 'ok' : 'bad'}">${label}</span> ${before} ${code(named)} ${after}</li>`
    }
  }
}

/** The run's entries grouped by step, in order; the step's own row (its model turn) heads the group. */
export function bySteps(
  timeline: TimelineEntry[],
): Array<{ step: number; row?: StepRow; entries: TimelineEntry[] }> {
  const groups = new Map<number, { step: number; row?: StepRow; entries: TimelineEntry[] }>()
  for (const entry of timeline) {
    const group = groups.get(entry.step) ?? { step: entry.step, entries: [] }
    if (entry.type === 'step') group.row = entry
    else group.entries.push(entry)
    groups.set(entry.step, group)
  }
  return [...groups.values()]
}

/**
 * A run's timeline to scan: one block per step — how long it took, what the model called, each verdict,
 * command, approval and gate result under it, each with its outcome first.
 */
export function timelineView(timeline: TimelineEntry[], clock: Clock, proofs: Proofs): Html {
  return html`<ol class="timeline">${bySteps(timeline).map(({ step, row, entries }) => {
    const duration = row ? row.finishedAt.getTime() - row.startedAt.getTime() : undefined
    return html`<li class="step" id="step-${step}">
      <h3>Step ${step}${row ? html`<span class="step-facts">${formatDuration(duration ?? 0)} · ${counted(row.toolCalls.length, 'call')} · ${counted(row.inputTokens + row.outputTokens, 'token')}${row.cost === undefined ? '' : ` · ${formatMoney(row.cost)}`} · ${when(row.startedAt, clock)}</span>` : html`<span class="step-facts">in progress</span>`}</h3>
      ${row ? html`<p class="decision-line">${prose(row.decision)}</p>${toolCalls(row.toolCalls)}` : ''}
      ${entries.length ? html`<ul class="entries">${entries.map((entry) => stepEntry(entry, clock, proofs))}</ul>` : ''}
    </li>`
  })}</ol>`
}

/**
 * Where a run's time went, drawn: a bar a step, from its start to its end on the run's scale, with the
 * commands (green when they succeeded, red when not) and the waits for an approval (amber) on it. Only
 * where it helps: a run of two steps or more.
 */
export function timelineChart(timeline: TimelineEntry[], runStart: Date, runEnd: Date): Html {
  const steps = bySteps(timeline).filter((group) => group.row)
  const span = runEnd.getTime() - runStart.getTime()
  if (steps.length < 2 || span <= 0) return html``
  const x = (at: Date) => Math.max(0, Math.min(1000, ((at.getTime() - runStart.getTime()) / span) * 1000))
  const bar = (from: Date, to: Date, kind: string, title: string) => {
    const start = x(from)
    const width = Math.max(2, x(to) - start)
    return html`<rect class="${kind}" x="${start.toFixed(1)}" y="0" width="${width.toFixed(1)}" height="10"><title>${title}</title></rect>`
  }
  return html`<figure class="chart" aria-labelledby="chart-caption">
  <figcaption id="chart-caption">Where the time went: each step from start to end (${formatDuration(span)} in all); commands green or red, waits for an approval amber</figcaption>
  <ol>${steps.map(({ step, row, entries }) => {
    const shown = row as StepRow
    return html`<li><a href="#step-${step}">step ${step}</a><svg viewBox="0 0 1000 10" preserveAspectRatio="none" role="img" aria-label="step ${step}: ${formatDuration(shown.finishedAt.getTime() - shown.startedAt.getTime())}">${bar(
      shown.startedAt,
      shown.finishedAt,
      'step-bar',
      `step ${step}: ${formatDuration(shown.finishedAt.getTime() - shown.startedAt.getTime())}`,
    )}${entries.map((entry) =>
      entry.type === 'exec'
        ? bar(
            entry.startedAt,
            entry.finishedAt,
            entry.status === 'exited' && entry.exitCode === 0 ? 'ran-ok' : 'ran-bad',
            `${renderCommand(entry.argv)}: ${commandStatus(entry)}, ${formatDuration(entry.durationMs)}`,
          )
        : entry.type === 'approval' && entry.decidedAt
          ? bar(
              entry.requestedAt,
              entry.decidedAt,
              'waited',
              `waited ${formatDuration(entry.decidedAt.getTime() - entry.requestedAt.getTime())} for an answer`,
            )
          : '',
    )}</svg></li>`
  })}</ol>
</figure>`
}
