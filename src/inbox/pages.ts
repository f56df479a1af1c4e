/**
 * Whole pages and the fragments that live regions refresh. Server-rendered HTML that reads on a phone as on
 * a desktop; the one script (`/assets/app.js`) adds signing, live updates and local times, and every form
 * control has a label.
 */

import { createHash } from 'node:crypto'
import type {
  AnswerCheck,
  ApprovalAnswerRow,
  ApprovalRow,
  ExecutedCommand,
  InboxApproval,
  RunRow,
  RunSummary,
  StoredMessage,
  TimelineEntry,
} from '../audit/index.js'
import { tellsSomethingNew } from '../audit/index.js'
import type { PlantedGitFile } from '../exec/index.js'
import {
  clipNoted,
  counted,
  deadlineSetBy,
  formatDuration,
  formatMoney,
  type InFlight,
  inFlightWords,
  plantedGitWarning,
  runLinkLines,
} from '../present/index.js'
import type { RunLinks } from '../snapshots/index.js'
import type { WorkspaceChanges } from './changes.js'
import { type Html, href, html, jsonData, prose } from './html.js'
import {
  approvalFacts,
  type Clock,
  changesView,
  code,
  commandsSoFar,
  deadline,
  decisionText,
  ruleText,
  timelineChart,
  timelineView,
  transcript,
  when,
} from './views.js'

export interface Viewer {
  /** The approver name of the viewer's imported key (the browser says), or the signed-in name. */
  name?: string | undefined
  /** Who the access mode says is asking (tokens, identity header); absent on a loopback inbox. */
  user?: string | undefined
}

/** A page; `live` is the URL of its event stream, which keeps its live regions up to date. */
export function layout(title: string, viewer: Viewer, body: Html, live?: string): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · tether</title>
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
</head>
<body>
<header class="top">
  <nav aria-label="tether"><a href="/">Inbox</a><a href="/runs">Runs</a></nav>
  <p id="who">${viewer.user ? html`Signed in as <strong>${viewer.user}</strong>. ` : ''}<a id="key-summary" href="#key-panel">${
    viewer.name ? html`Signing as <strong>${viewer.name}</strong>` : 'No signing key yet'
  }</a></p>
</header>
<main id="main"${live ? html` data-live="${live}"` : ''}>
${body}
</main>
</body>
</html>`.markup
}

/** A fingerprint of a fragment: the live endpoint sends a fragment again only when it changed. */
export function fragmentVersion(fragment: Html): string {
  return createHash('sha256').update(fragment.markup).digest('hex').slice(0, 16)
}

/** A region the browser script keeps up to date from the page's event stream (re-rendered HTML). */
function liveRegion(id: string, fragment: Html): Html {
  return html`<div id="${id}" data-live-region data-version="${fragmentVersion(fragment)}">${fragment}</div>`
}

/**
 * The approver's private key, imported once into this browser (or forgotten). Folded away once a key is
 * there; the name it signs as is the one the policies give that key, never typed.
 */
function keyPanel(): Html {
  return html`<details id="key-panel" class="panel key" data-key="key-panel">
  <summary id="key-title">Your signing key</summary>
  <p id="key-status" role="status">Looking for your key in this browser…</p>
  <form id="key-import" hidden>
    <p><label for="key-file">Private key file (the <code>.pem</code> that <code>tether keys new NAME</code> wrote)</label>
    <input type="file" id="key-file" name="key-file" accept=".pem,application/x-pem-file" required></p>
    <p><button type="submit">Import key</button></p>
    <p class="hint">The key stays in this browser as a key that cannot be read back out; the server never sees it. You sign as the name the run's policy gives this key.</p>
  </form>
  <p><button type="button" id="key-forget" hidden>Forget this key</button></p>
</details>`
}

export interface InboxPageData {
  items: InboxApproval[]
  total: number
  forMe: number
  page: number
  pageSize: number
}

export function inboxPage(data: InboxPageData, viewer: Viewer, clock: Clock): string {
  const live = `/live/inbox?page=${data.page}`
  return layout(
    'Inbox',
    viewer,
    html`<h1>Approvals waiting</h1>
${liveRegion('inbox', inboxList(data, viewer, clock))}
${keyPanel()}`,
    live,
  )
}

export function inboxList(data: InboxPageData, viewer: Viewer, clock: Clock): Html {
  const pages = Math.max(1, Math.ceil(data.total / data.pageSize))
  const summary =
    data.total === 0
      ? 'Nothing is waiting for an answer.'
      : `${counted(data.total, 'approval')} waiting${viewer.name ? `, ${data.forMe} of them for ${viewer.name}` : ''}; page ${data.page} of ${pages}.`
  return html`<p id="inbox-summary">${summary}</p>
<ol class="cards">${data.items.map(
    (item) => html`<li class="card${item.forMe ? ' for-me' : ''}">
  <h2><a href="${href('approvals', item.approvalId)}">${item.act} ${code(clipNoted(item.target, 200))}</a>
    ${item.forMe ? html`<span class="badge">waiting for you</span>` : ''}</h2>
  ${approvalFacts(item, clock, { tree: false })}
  <p class="open"><a class="button" href="${href('approvals', item.approvalId)}">Answer</a></p>
</li>`,
  )}</ol>
${pages > 1 ? pager(data.page, pages) : ''}`
}

function pager(page: number, pages: number): Html {
  return html`<nav aria-label="Pages" class="pager">
  ${page > 1 ? html`<a href="/?page=${page - 1}" rel="prev">← Previous page</a>` : ''}
  ${page < pages ? html`<a href="/?page=${page + 1}" rel="next">Next page →</a>` : ''}
</nav>`
}

export interface ApprovalPageData {
  approval: ApprovalRow
  run: RunSummary
  /** The approvers of the run's effective policy, with their keys: the browser finds its own name among them. */
  approvers: Array<{ name: string; keys: string[] }>
  /** The argv the model asked for (exec), to start an edit from. */
  argv?: string[] | undefined
  messages: StoredMessage[]
  commands: ExecutedCommand[]
  answers: Array<{ answer: ApprovalAnswerRow; check: AnswerCheck }>
  changes: WorkspaceChanges
  plantedGit?: PlantedGitFile[] | undefined
}

export function approvalPage(data: ApprovalPageData, viewer: Viewer, clock: Clock): string {
  const { approval, run } = data
  return layout(
    `${approval.act} ${clipNoted(approval.target, 60)}`,
    viewer,
    html`<h1>${approval.act} ${code(clipNoted(approval.target, 300))}</h1>
${liveRegion('approval-status', approvalStatus(data, clock))}
<div class="columns">
  <section aria-labelledby="what-title" class="panel what">
    <h2 id="what-title">What is asked</h2>
    ${approvalFacts({ ...approval, goal: run.goal, workspace: run.workspace }, clock)}
  </section>
  <div class="side">
    ${approval.decision ? '' : answerForm(data, viewer)}
    ${approval.identity === 'signed' ? keyPanel() : ''}
  </div>
</div>
<section aria-labelledby="context-title">
  <h2 id="context-title">So far in this run</h2>
  ${data.plantedGit?.length ? plantedGitView(data.plantedGit) : ''}
  ${liveRegion('approval-context', approvalContext(data))}
  <h3>Workspace changes so far</h3>
  ${changesView(data.changes)}
</section>
${jsonData('approval-data', {
  runId: approval.runId,
  approvalId: approval.approvalId,
  act: approval.act,
  target: approval.target,
  tree: approval.tree ?? null,
  actionDigest: approval.actionDigest ?? null,
  rememberOffer: approval.rememberOffer ?? null,
  identity: approval.identity ?? 'unsigned',
  approvers: data.approvers,
  user: viewer.user ?? null,
})}`,
    href('live', 'approvals', approval.approvalId),
  )
}

export function approvalStatus(data: Pick<ApprovalPageData, 'approval' | 'answers'>, clock: Clock): Html {
  const { approval } = data
  if (!approval.decision) {
    return html`<p class="status waiting" role="status">Waiting for an answer; the run holds until then (deadline
      ${deadline(approval.deadline, clock)}, ${deadlineSetBy(approval.deadlineBy)}).</p>`
  }
  return html`<p class="status decided" role="status">${decisionText(approval, clock)}.</p>
    ${data.answers.length ? html`<ul class="answers">${data.answers.map(({ answer }) => html`<li>${answer.approver}: ${answer.decision}</li>`)}</ul>` : ''}
    <p><a href="${href('runs', approval.runId)}">Follow the run →</a></p>`
}

export function approvalContext(data: Pick<ApprovalPageData, 'messages' | 'commands'>): Html {
  return html`<h3>Last steps of the transcript</h3>
  ${transcript(data.messages)}
  <h3>Commands so far</h3>
  ${commandsSoFar(data.commands)}`
}

/**
 * One button per answer and nothing chosen beforehand: approve, deny (with the guidance the model reads),
 * or — folded away — approve an edited command. The form's first, disabled button keeps Enter in a field
 * from submitting anything.
 */
function answerForm(data: ApprovalPageData, viewer: Viewer): Html {
  const { approval } = data
  const offer = approval.rememberOffer
  const canEdit = approval.act === 'exec'
  const signed = approval.identity === 'signed'
  const budget = approval.act === 'budget'
  return html`<section aria-labelledby="answer-title" class="panel answer">
<h2 id="answer-title">Your answer</h2>
<noscript><p>Answering signs in the browser: turn on JavaScript for this page, or use <code>tether approve ${approval.approvalId}</code>.</p></noscript>
<form id="answer" data-approval="${approval.approvalId}" novalidate>
  <button type="submit" disabled hidden tabindex="-1">Choose an answer</button>
  ${
    budget
      ? html`<p><label for="raise-to">New cost cap, e.g. 50 USD (to approve: more than the run has spent; denying ends the run)</label>
    <input type="text" id="raise-to" name="raise-to" inputmode="decimal" autocomplete="off"></p>`
      : ''
  }
  <p><label for="reason">Guidance for the model (needed to deny; with an approval, a note for the audit)</label>
    <textarea id="reason" name="reason" rows="3" maxlength="2000"></textarea></p>
  <p><label for="remember">If you approve, also remember it for the rest of the run</label>
    <select id="remember" name="remember"${!offer || 'refused' in offer ? ' disabled' : ''}>
      <option value="">No, just this once</option>
      ${offer && 'exact' in offer ? html`<option value="exact">Exactly ${offer.exact}</option>` : ''}
      ${offer && 'exact' in offer && offer.wider ? html`<option value="wider">Wider: ${offer.wider}</option>` : ''}
    </select></p>
  ${
    signed
      ? html`<p class="hint" id="signing-as">Your answer is signed in this browser with your key.</p>`
      : html`<p><label for="approver">Your name (this run trusts names as typed)</label>
    <input type="text" id="approver" name="approver" autocomplete="username" value="${viewer.user ?? viewer.name ?? ''}" required></p>`
  }
  <p class="actions">
    <button type="submit" name="decision" value="approve" id="answer-approve" class="approve">Approve</button>
    <button type="submit" name="decision" value="deny" id="answer-deny" class="deny">Deny with guidance</button>
  </p>
  ${
    canEdit
      ? html`<details id="edit" data-key="edit"><summary>Approve an edited command instead</summary>
    <p><label for="replacement">Edited command, one argument per line (it is judged by the policy again before it runs)</label>
    <textarea id="replacement" name="replacement" rows="4" spellcheck="false" aria-describedby="replacement-preview">${(data.argv ?? []).join('\n')}</textarea>
    <span id="replacement-preview" class="hint" aria-live="polite"></span></p>
    <p class="actions"><button type="submit" name="decision" value="edit" id="answer-edit">Approve the edited command</button></p>
  </details>`
      : ''
  }
  <p id="answer-result" role="status" aria-live="polite"></p>
</form>
</section>`
}

export interface RunFilters {
  status?: 'running' | 'finished' | undefined
  outcome?: string | undefined
  waiting?: boolean | undefined
  before?: string | undefined
}

export const OUTCOMES = [
  'verified',
  'finished',
  'step-cap',
  'token-budget',
  'time-budget',
  'cost-budget',
  'cancelled',
  'failed',
] as const

export function runsPage(
  data: { runs: Array<RunRow & { waiting: boolean }>; next?: string | undefined },
  filters: RunFilters,
  viewer: Viewer,
  clock: Clock,
): string {
  const option = (value: string, label: string, selected: boolean) =>
    html`<option value="${value}"${selected ? ' selected' : ''}>${label}</option>`
  const query = (extra: Record<string, string>) => {
    const params = new URLSearchParams()
    if (filters.status) params.set('status', filters.status)
    if (filters.outcome) params.set('outcome', filters.outcome)
    if (filters.waiting !== undefined) params.set('waiting', filters.waiting ? 'yes' : 'no')
    for (const [key, value] of Object.entries(extra)) params.set(key, value)
    return `/runs?${params}`
  }
  return layout(
    'Runs',
    viewer,
    html`<h1>Runs</h1>
<form method="get" action="/runs" class="filters">
  <p><label for="filter-status">Status</label>
  <select id="filter-status" name="status">${option('', 'any', !filters.status)}${option('running', 'running', filters.status === 'running')}${option('finished', 'finished', filters.status === 'finished')}</select></p>
  <p><label for="filter-outcome">Outcome</label>
  <select id="filter-outcome" name="outcome">${option('', 'any', !filters.outcome)}${OUTCOMES.map((o) => option(o, o, filters.outcome === o))}</select></p>
  <p><label for="filter-waiting">Waiting for an approval</label>
  <select id="filter-waiting" name="waiting">${option('', 'either', filters.waiting === undefined)}${option('yes', 'yes', filters.waiting === true)}${option('no', 'no', filters.waiting === false)}</select></p>
  <p><button type="submit">Filter</button></p>
</form>
${
  data.runs.length === 0
    ? html`<p>No runs match.</p>`
    : html`<table class="runs">
  <caption>Newest first</caption>
  <thead><tr><th scope="col">Run</th><th scope="col">Goal</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Spent</th></tr></thead>
  <tbody>${data.runs.map(
    (run) => html`<tr>
    <td data-label="Run"><a href="${href('runs', run.runId)}">${run.runId}</a></td>
    <td data-label="Goal">${prose(clipNoted(run.goal.split('\n')[0] ?? '', 160))}</td>
    <td data-label="Status">${statusBadge(run)}${run.waiting ? html` <span class="badge">waiting for approval</span>` : ''}</td>
    <td data-label="Started">${when(run.startedAt, clock)}</td>
    <td data-label="Spent">${run.cost === undefined ? 'unknown' : formatMoney(run.cost)}</td>
  </tr>`,
  )}</tbody>
</table>`
}
${data.next ? html`<p><a href="${query({ before: data.next })}" rel="next">Older runs →</a></p>` : ''}`,
  )
}

function statusBadge(run: Pick<RunRow, 'status' | 'outcome'>): Html {
  const text = run.outcome ?? run.status
  const tone = text === 'verified' || text === 'finished' ? 'ok' : text === 'running' ? 'live' : 'bad'
  return html`<span class="outcome ${tone}">${text}</span>`
}

export interface RunPageData {
  summary: RunSummary
  timeline: TimelineEntry[]
  answers: Array<{ answer: ApprovalAnswerRow; check: AnswerCheck }>
  messages: StoredMessage[]
  /** What Temporal says: the workflow's status and what it is doing now (the command running, …), if anything. */
  temporal: { status?: string; inFlight?: InFlight; error?: string }
  temporalLink?: string | undefined
  /** Read when the page loads (loadRunPage), not for its live region. */
  links?: RunLinks | undefined
  plantedGit?: PlantedGitFile[] | undefined
}

export function runPage(data: RunPageData, viewer: Viewer, clock: Clock): string {
  const { summary } = data
  return layout(
    `Run ${summary.runId}`,
    viewer,
    html`<h1>Run ${code(summary.runId)}</h1>
${data.temporalLink ? html`<p><a href="${data.temporalLink}" rel="noreferrer">Open this run in the Temporal UI</a></p>` : ''}
${data.links ? linksView(data.links) : ''}
${data.plantedGit?.length ? plantedGitView(data.plantedGit) : ''}
${liveRegion('run-live', runLive(data, clock))}`,
    href('live', 'runs', summary.runId),
  )
}

/** The runs a run was rewound from and into, and the branch its verified tree became. */
function linksView(links: RunLinks): Html | string {
  const items = runLinkLines(links).map(
    (line) =>
      html`<li>${line.before}${line.run ? html`<a href="${href('runs', line.name)}">${code(line.name)}</a>` : code(line.name)}${line.after}</li>`,
  )
  return items.length === 0 ? '' : html`<ul class="links">${items}</ul>`
}

/** The planted-git warning `tether show` prints, for whoever opens the run's folder next. */
function plantedGitView(found: PlantedGitFile[]): Html {
  return html`<div class="panel warning" role="alert"><p><strong>Warning:</strong> ${plantedGitWarning('the run wrote')}:</p>
<ul>${found.map((file) => html`<li>${code(file.path)}: ${code(file.what)}</li>`)}</ul></div>`
}

/** What the run is doing now: what is in flight (ticking with every live update), or why nothing is. */
function nowText(data: RunPageData): Html | string {
  const { summary, temporal } = data
  if (summary.status === 'finished') return 'nothing: the run has ended'
  if (temporal.inFlight) return prose(inFlightWords(temporal.inFlight))
  if (temporal.error) return temporal.error
  if (summary.pendingApprovals > 0) return 'waiting for an approval'
  return temporal.status ? `${temporal.status}, between steps` : 'unknown'
}

/** So far: steps, tokens, commands, refusals and approvals waiting, in words that count right. */
function soFar(summary: RunSummary): string {
  const steps =
    summary.steps === 0 && summary.status === 'running'
      ? 'the first step is under way'
      : counted(summary.steps, 'step')
  return [
    steps,
    counted(summary.inputTokens + summary.outputTokens, 'token'),
    counted(summary.commands, 'command'),
    `${summary.refusals} refused`,
    `${counted(summary.pendingApprovals, 'approval')} waiting`,
  ].join(', ')
}

export function runLive(data: RunPageData, clock: Clock): Html {
  const { summary } = data
  const timeline = data.timeline.filter(tellsSomethingNew)
  const proofs = new Map<string, Array<{ answer: ApprovalAnswerRow; check: AnswerCheck }>>()
  for (const entry of data.answers) {
    const list = proofs.get(entry.answer.approvalId) ?? []
    list.push(entry)
    proofs.set(entry.answer.approvalId, list)
  }
  // Every refusal, an approver's denial included (the timeline shows that on its approval's entry).
  const refusals = data.timeline.filter(
    (e): e is Extract<TimelineEntry, { type: 'policy' }> =>
      e.type === 'policy' && (e.kind === 'refusal' || e.effect === 'deny'),
  )
  const end = summary.finishedAt ?? clock.now
  return html`<dl class="facts summary">
  <dt>Outcome</dt><dd id="run-outcome">${statusBadge(summary)}${summary.reason ? html` — ${prose(clipNoted(summary.reason, 600))}` : ''}</dd>
  <dt>Goal</dt><dd class="goal">${prose(clipNoted(summary.goal, 2_000))}</dd>
  <dt>Workspace</dt><dd>${code(summary.workspace)}</dd>
  <dt>Started</dt><dd>${when(summary.startedAt, clock)}${summary.finishedAt ? html`; finished ${when(summary.finishedAt, clock)}` : ''}${
    summary.durationMs !== undefined ? ` (${formatDuration(summary.durationMs)})` : ''
  }</dd>
  <dt>So far</dt><dd>${soFar(summary)}</dd>
  <dt>Spent</dt><dd id="run-spend">${summary.cost === undefined ? 'unknown (no price for its model)' : formatMoney(summary.cost)}</dd>
  <dt>Sandbox</dt><dd>${summary.sandbox ?? 'not recorded'}</dd>
  <dt>Now</dt><dd id="run-now">${nowText(data)}</dd>
</dl>
<h2>Timeline</h2>
${timelineChart(timeline, summary.startedAt, end)}
${timeline.length === 0 ? html`<p>Nothing has happened yet.</p>` : timelineView(timeline, clock, proofs)}
<h2>Refused</h2>
${
  refusals.length === 0
    ? html`<p>Nothing was refused.</p>`
    : html`<ul class="refusals">${refusals.map(
        (r) =>
          html`<li>step ${r.step}: ${r.act} ${code(r.target)} — ${r.decidedBy ? html`${r.decidedBy}: ` : html`${ruleText(r)}: `}${prose(r.reason)}</li>`,
      )}</ul>`
}
<h2>Transcript, last ${counted(data.messages.length, 'message')}</h2>
${transcript(data.messages)}`
}

/** A one-line page for errors and refusals: what was wrong and what to do. */
export function messagePage(title: string, message: string, viewer: Viewer = {}): string {
  return layout(
    title,
    viewer,
    html`<h1>${title}</h1><p class="message">${message}</p><p><a href="/">Back to the inbox</a></p>`,
  )
}
