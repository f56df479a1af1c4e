/**
 * What each page reads: the audit projections (one indexed query each) and, for a run, what Temporal says
 * about it now (its status and the command running, from the activity's heartbeat).
 */
import type { Client } from '@temporalio/client'
import type { ApprovalRow, AuditStore, StoredMessage } from '../audit/index.js'
import { verifyRecordedAnswer } from '../audit/index.js'
import { plantedGitFiles } from '../exec/index.js'
import { Policy, PolicyError } from '../policy/index.js'
import { inFlight } from '../run/index.js'
import { runLinks } from '../snapshots/index.js'
import { runChanges } from './changes.js'
import type { ApprovalPageData, InboxPageData, RunPageData } from './pages.js'

export interface InboxSources {
  audit: AuditStore
  client: Client
  namespace: string
  /** The Temporal UI's base URL, for links to runs. */
  temporalUi?: string | undefined
}

export const PAGE_SIZE = 50

export async function loadInbox(
  audit: AuditStore,
  viewer: string | undefined,
  page: number,
): Promise<InboxPageData> {
  const { items, total, forMe } = await audit.inboxApprovals({
    viewer,
    limit: PAGE_SIZE,
    offset: (page - 1) * PAGE_SIZE,
  })
  return { items, total, forMe, page, pageSize: PAGE_SIZE }
}

/** The last `count` messages of a run's transcript. */
async function lastMessages(audit: AuditStore, runId: string, count: number): Promise<StoredMessage[]> {
  const total = await audit.messageCount(runId)
  return audit.loadMessages(runId, { fromSeq: Math.max(0, total - count) })
}

/** Every recorded answer of a run with the result of re-verifying its proof. */
async function checkedAnswers(audit: AuditStore, runId: string) {
  const records = await audit.approvalAnswers({ runId })
  return records.map((record) => ({ answer: record.answer, check: verifyRecordedAnswer(record) }))
}

/** What changes while an approval waits: its status, the transcript's end and the commands so far. */
export async function loadApprovalLive(audit: AuditStore, approval: ApprovalRow) {
  const [messages, commands, answers] = await Promise.all([
    lastMessages(audit, approval.runId, 8),
    audit.executedCommands({ runId: approval.runId }),
    checkedAnswers(audit, approval.runId),
  ])
  return {
    messages,
    commands,
    answers: answers.filter((a) => a.answer.approvalId === approval.approvalId),
  }
}

export async function loadApproval(
  audit: AuditStore,
  approvalId: string,
): Promise<ApprovalPageData | undefined> {
  const approval = await audit.approval(approvalId)
  if (!approval) return undefined
  const [run, config, live] = await Promise.all([
    audit.runSummary(approval.runId),
    audit.runConfig(approval.runId),
    loadApprovalLive(audit, approval),
  ])
  if (!run) return undefined
  // Approvers are the operator's (the floor's): the run's effective policy names them, not its own.
  const effective = config?.policyDigest ? await audit.policyByDigest(config.policyDigest) : undefined
  return {
    approval,
    run,
    approvers: approversOf(effective ?? config?.policy),
    argv: askedArgv(approval, live.messages),
    ...live,
    changes: await runChanges(audit, approval.runId, run.workspace),
    // A run whose commands planted programs for git is worth knowing of before saying yes to it.
    plantedGit: plantedGitFiles(run.workspace, run.startedAt),
  }
}

/** The approvers (with keys) of a recorded policy; none when it no longer loads. */
function approversOf(spec: unknown): Array<{ name: string; keys: string[] }> {
  try {
    return Policy.fromSpec(spec).identity.approvers.map((a) => ({ name: a.name, keys: [...a.keys] }))
  } catch (error) {
    if (error instanceof PolicyError) return []
    throw error
  }
}

/**
 * The argv the model asked for: while the run waits, its newest reply holds the call. Only a start for an
 * edit — what is signed is whatever the approver submits.
 */
function askedArgv(approval: ApprovalRow, messages: StoredMessage[]): string[] | undefined {
  if (approval.act !== 'exec') return undefined
  for (const message of [...messages].reverse()) {
    const content = message.content as { role?: string; toolCalls?: Array<{ name: string; args: unknown }> }
    if (content?.role !== 'assistant') continue
    const argv = (content.toolCalls?.[approval.call]?.args as { argv?: unknown } | undefined)?.argv
    return Array.isArray(argv) && argv.every((word) => typeof word === 'string') ? argv : undefined
  }
  return undefined
}

export async function loadRun(sources: InboxSources, runId: string): Promise<RunPageData | undefined> {
  const { audit } = sources
  const summary = await audit.runSummary(runId)
  if (!summary) return undefined
  const [timeline, answers, messages, temporal] = await Promise.all([
    audit.runTimeline(runId),
    checkedAnswers(audit, runId),
    lastMessages(audit, runId, 20),
    summary.status === 'running' ? temporalState(sources.client, runId) : Promise.resolve({}),
  ])
  return {
    summary,
    timeline,
    answers,
    messages,
    temporal: summary.status === 'running' ? temporal : { status: 'closed' },
    temporalLink: sources.temporalUi
      ? `${sources.temporalUi.replace(/\/$/, '')}/namespaces/${encodeURIComponent(sources.namespace)}/workflows/${encodeURIComponent(runId)}`
      : undefined,
  }
}

/**
 * A run's page as it loads: what its live region shows, and what is read only then — the runs it is linked
 * to and its branch, and git files the run wrote in a folder of this machine that would make git run a
 * program (a walk of the folder: too much for every second of a live region).
 */
export async function loadRunPage(sources: InboxSources, runId: string): Promise<RunPageData | undefined> {
  const data = await loadRun(sources, runId)
  if (!data) return undefined
  const { summary } = data
  return {
    ...data,
    links: await runLinks(sources.audit.pool, runId),
    plantedGit: plantedGitFiles(summary.workspace, summary.startedAt),
  }
}

/** The workflow's status and what it is doing now (a command, the gate, a file tool, a model turn), if anything. */
async function temporalState(client: Client, runId: string): Promise<RunPageData['temporal']> {
  try {
    const description = await client.withDeadline(Date.now() + 3_000, () =>
      client.workflow.getHandle(runId).describe(),
    )
    const flight = inFlight(description.raw.pendingActivities)
    return {
      status: description.status.name.toLowerCase(),
      ...(flight ? { inFlight: flight } : {}),
    }
  } catch (error) {
    return { error: `Temporal did not answer (${(error as Error).message.split('\n')[0]})` }
  }
}
