/**
 * The pieces inbox pages are made of: an approval's facts, a transcript, commands, a run's timeline.
 * Pure functions from audit rows to `Html`; every row value goes through the `html` template (escaped).
 */

import type {
  AnswerCheck,
  ApprovalAnswerRow,
  ApprovalRow,
  ExecutedCommand,
  StoredMessage,
  TimelineEntry,
} from '../audit/index.js'
import { renderCommand } from '../policy/index.js'
import {
  clipNoted,
  type Decider,
  deadlineSetBy,
  formatBytes,
  formatDeadline,
  formatMoney,
  rememberWords,
  ruleWords,
  seconds,
  utcText,
} from '../present/index.js'
import type { WorkspaceChanges } from './changes.js'
import { type Html, href, html } from './html.js'

/** The moment and the viewer's time zone a page is rendered for. */
export interface Clock {
  now: Date
  timeZone: string
}

/** A deadline in UTC, in the viewer's zone and as time left; the browser script refreshes the text. */
export function deadline(at: Date, clock: Clock): Html {
  return html`<time datetime="${at.toISOString()}" data-deadline>${formatDeadline(at, clock.now, clock.timeZone)}</time>`
}

export function when(at: Date): Html {
  return html`<time datetime="${at.toISOString()}">${utcText(at)}</time>`
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

/** The facts an approver weighs, as a definition list. */
export function approvalFacts(
  row: ApprovalRow & { goal?: string; workspace?: string },
  clock: Clock,
  options: { tree?: boolean } = {},
): Html {
  const tree = typeof row.tree === 'string' ? row.tree : undefined
  return html`<dl class="facts">
    ${row.goal !== undefined ? html`<dt>Goal</dt><dd class="goal">${clipNoted(row.goal, 600)}</dd>` : ''}
    <dt>Run</dt><dd><a href="${href('runs', row.runId)}">${row.runId}</a>, step ${row.step}</dd>
    ${row.workspace !== undefined ? html`<dt>Workspace</dt><dd>${code(row.workspace)}</dd>` : ''}
    <dt>Asks to</dt><dd>${row.act} <code class="target">${row.target}</code></dd>
    ${tree && options.tree !== false ? html`<dt>As judged</dt><dd><pre class="tree">${tree}</pre></dd>` : ''}
    <dt>Because of</dt><dd>${ruleText(row)}</dd>
    <dt>Remember would add</dt><dd>${rememberText(row.rememberOffer)}</dd>
    <dt>Needs</dt><dd>${needsText(row)}</dd>
    <dt>Deadline</dt><dd>${deadline(row.deadline, clock)} <small>(${deadlineSetBy(row.deadlineBy)})</small></dd>
  </dl>`
}

/** How an approval ended: who, when, through which channel, with what. */
export function decisionText(row: ApprovalRow): Html {
  if (!row.decision) return html`<strong>waiting</strong>`
  return html`<strong class="decision ${row.decision}">${row.decision}</strong> by ${row.decidedBy ?? '?'}
    via ${row.channel ?? '?'}${row.decidedAt ? html` at ${when(row.decidedAt)}` : ''}${row.reason ? html`: “${row.reason}”` : ''}${
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

export function answersList(answers: Array<{ answer: ApprovalAnswerRow; check: AnswerCheck }>): Html {
  if (answers.length === 0) return html``
  return html`<ul class="answers">${answers.map(
    ({ answer, check }) =>
      html`<li>${answer.approver} ${answer.decision === 'approve' ? 'approved' : 'denied'} via ${answer.channel} at
        ${when(answer.answeredAt)}${answer.reason ? html`: “${answer.reason}”` : ''} — ${proofText(check)}</li>`,
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
          ${content.text ? html`<p class="said">${clipNoted(String(content.text), 2_000)}</p>` : ''}
          ${toolCalls(content.toolCalls ?? [])}</li>`
      case 'tool':
        return html`<li class="tool-result">${(content.results ?? []).map(
          (result) =>
            html`<span class="who">${result.name} result</span><pre>${clipNoted(String(result.output), 2_000)}</pre>`,
        )}</li>`
      default:
        return html`<li class="user"><span class="who">${message.seq === 0 ? 'goal' : (content.role ?? 'message')}</span>
          <pre>${clipNoted(typeof content.content === 'string' ? content.content : JSON.stringify(content), 2_000)}</pre></li>`
    }
  })}</ol>`
}

export function exitText(command: Pick<ExecutedCommand, 'status' | 'exitCode' | 'signal'>): string {
  if (command.status === 'exited') return `exit ${command.exitCode}`
  if (command.status === 'signalled') return `killed by ${command.signal ?? 'a signal'}`
  return command.status
}

function stream(name: string, capture: ExecutedCommand['stdout']): Html {
  return html`<div class="stream"><span class="who">${name}</span> ${formatBytes(capture.bytes)}, ${capture.lines}
    lines, sha256 <code class="hash">${capture.sha256}</code>${capture.elided ? html`, ${capture.elided} characters elided` : ''}
    ${capture.text ? html`<pre>${capture.text}</pre>` : ''}</div>`
}

/** One command as it ran: argv, how it ended, how long, how much output and its hash. */
export function commandResult(command: ExecutedCommand, key: string): Html {
  const ok = command.status === 'exited' && command.exitCode === 0
  return html`<div class="command">
    ${code(renderCommand(command.argv))} → <strong class="${ok ? 'ok' : 'bad'}">${exitText(command)}</strong>
    in ${seconds(command.durationMs)}, ${formatBytes(command.stdout.bytes + command.stderr.bytes)} of output
    <details data-key="${key}"><summary>Output and hashes</summary>${stream('stdout', command.stdout)}${stream('stderr', command.stderr)}</details>
  </div>`
}

export function commandsSoFar(commands: ExecutedCommand[]): Html {
  if (commands.length === 0) return html`<p>No commands have run yet.</p>`
  return html`<ol class="commands">${commands.map(
    (command) =>
      html`<li><span class="who">step ${command.step}</span> ${commandResult(command, `cmd-${command.step}-${command.call}`)}</li>`,
  )}</ol>`
}

export function changesView(changes: WorkspaceChanges): Html {
  if (changes.kind === 'unavailable') return html`<p>${changes.why}.</p>`
  if (!changes.status.trim()) return html`<p>No changes: the working tree matches its last commit.</p>`
  return html`<pre class="status">${changes.status}</pre>
    ${changes.diff ? html`<details data-key="diff" open><summary>Diff against HEAD${changes.elided ? ` (${changes.elided} characters elided)` : ''}</summary><pre class="diff">${changes.diff}</pre></details>` : ''}`
}

/** One timeline entry of a run page. */
export function timelineEntry(
  entry: TimelineEntry,
  clock: Clock,
  proofs: Map<string, Array<{ answer: ApprovalAnswerRow; check: AnswerCheck }>>,
): Html {
  switch (entry.type) {
    case 'step':
      return html`<li class="step"><h3>Step ${entry.step}: model turn</h3>
        <p>${entry.toolCalls.length} call(s), ${entry.inputTokens} + ${entry.outputTokens} tokens${
          entry.cost === undefined ? '' : `, ${formatMoney(entry.cost)}`
        }, ${when(entry.startedAt)}</p>
        ${toolCalls(entry.toolCalls)}
        <p class="decision-line">${entry.decision}</p></li>`
    case 'policy':
      return entry.kind === 'refusal'
        ? html`<li class="policy refusal"><strong class="bad">refused</strong> ${entry.act} ${code(entry.target)} by
            ${ruleText(entry)}: ${entry.reason}</li>`
        : html`<li class="policy verdict"><strong>${entry.effect === 'allow' ? 'allowed' : entry.effect === 'deny' ? 'denied' : 'noted'}</strong>
            ${entry.act} ${code(entry.target)} — ${entry.decidedBy ?? 'tether'} via ${entry.source}: ${entry.reason}</li>`
    case 'exec':
      return html`<li class="exec">${commandResult(entry, `exec-${entry.step}-${entry.call}`)}</li>`
    case 'gate':
      return html`<li class="gate ${entry.kind === 'gate_passed' ? 'ok' : entry.kind === 'gate_phase_failed' ? 'bad' : ''}">
        <strong>${entry.kind === 'gate_passed' ? 'gate passed' : entry.kind === 'gate_phase_failed' ? 'gate failed' : 'gate output'}</strong>
        <pre>${clipNoted(entry.detail, 2_000)}</pre></li>`
    case 'approval':
      return html`<li class="approval"><strong>approval</strong> for ${entry.act} ${code(entry.target)}
        (${ruleText(entry)}): ${decisionText(entry)}
        ${entry.decision ? '' : html` — <a href="${href('approvals', entry.approvalId)}">answer it</a>, deadline ${deadline(entry.deadline, clock)}`}
        ${answersList(proofs.get(entry.approvalId) ?? [])}</li>`
  }
}
