/**
 * Projection activities: the audit rows of a run (runs, steps, refusals, approvals and decisions) and the
 * approver notifications. Every write is idempotent (keyed by run, step and call, or the approval id), so a
 * retried activity never duplicates a row. Timestamps are the workflow's, so a replayed write is identical.
 */
import type { AuditStore } from '../audit/index.js'
import type { TaskContract } from '../contract.js'
import { Policy, PolicyError } from '../policy/index.js'
import type { PendingApproval } from '../run/index.js'
import { untilText, utcText } from '../time.js'
import type { RunConfigs } from './run-config.js'
import type { TetherActivities } from './types.js'

/** Inside the projection activities' 10 s start-to-close (agentRun), so a slow webhook is retried, not cut. */
const WEBHOOK_TIMEOUT_MS = 8_000

export function projectionActivities(deps: {
  audit: AuditStore
  runs: RunConfigs
  fetch?: typeof fetch
}): Pick<
  TetherActivities,
  | 'tetherStartRun'
  | 'tetherFinishRun'
  | 'tetherRecordStep'
  | 'tetherApprovalRequested'
  | 'tetherApprovalDecided'
  | 'tetherApprovalRejected'
  | 'tetherRemindApprover'
> {
  const { audit } = deps
  const post = deps.fetch ?? fetch
  let rejectedCount = 0

  return {
    async tetherStartRun({
      runId,
      executionId,
      contract,
      policy,
      policyDigest,
      taskQueue,
      parentRunId,
      startedAt,
    }) {
      let sandbox = sandboxMode(policy)
      let effective: { digest: string; spec: unknown } | undefined
      if (policyDigest) {
        // What the preparation judged the run's policy to be on this floor, stored under the name history keeps.
        const onFloor = deps.runs.effectiveAs(runId, policy, policyDigest)
        effective = { digest: policyDigest, spec: onFloor.toSpec() }
        sandbox = onFloor.sandbox.mode
      }
      await audit.recordRunStarted({
        runId,
        ...(executionId ? { executionId } : {}),
        goal: contract.goal,
        workspace: contract.workspace,
        contract,
        policy,
        taskQueue,
        ...(parentRunId ? { parentRunId } : {}),
        ...(sandbox ? { sandbox } : {}),
        ...(effective ? { effective, floor: deps.runs.floor.source } : {}),
        startedAt: new Date(startedAt),
      })
      await audit.appendMessages(runId, 0, [{ role: 'user', content: contract.goal }])
    },

    async tetherFinishRun({
      runId,
      executionId,
      outcome,
      reason,
      steps,
      inputTokens,
      outputTokens,
      finishedAt,
    }) {
      await audit.recordRunFinished({
        runId,
        ...(executionId ? { executionId } : {}),
        outcome,
        ...(reason ? { reason } : {}),
        steps,
        inputTokens,
        outputTokens,
        finishedAt: new Date(finishedAt),
      })
    },

    async tetherRecordStep(record) {
      await audit.recordStep({
        runId: record.runId,
        step: record.step,
        toolCalls: record.toolCalls,
        decision: record.decision,
        observation: record.observation,
        inputTokens: record.inputTokens,
        outputTokens: record.outputTokens,
        startedAt: new Date(record.startedAt),
        finishedAt: new Date(record.finishedAt),
      })
      if (record.refusals.length === 0) return
      await audit.recordPolicyEvents(
        record.refusals.map(({ call, verdict }) => ({
          runId: record.runId,
          step: record.step,
          call,
          act: verdict.act,
          target: verdict.target,
          effect: 'deny' as const,
          ...(verdict.rule !== undefined ? { rule: verdict.rule } : {}),
          ...(verdict.layer !== undefined ? { layer: verdict.layer } : {}),
          kind: 'refusal' as const,
          reason: verdict.reason,
          source: 'policy',
          ...(verdict.checks !== undefined ? { checks: verdict.checks } : {}),
          at: new Date(record.finishedAt),
        })),
      )
    },

    async tetherApprovalRequested({ runId, request, contract }) {
      await audit.recordApprovalRequested({
        approvalId: request.approvalId,
        runId,
        step: request.step,
        call: request.call,
        act: request.act,
        target: request.target,
        tree: request.tree ?? null,
        ...(request.rule !== undefined ? { rule: request.rule } : {}),
        ...(request.layer !== undefined ? { layer: request.layer } : {}),
        requestedAt: new Date(request.requestedAt),
        deadline: new Date(request.deadline),
        approvers: request.approvers,
        ...(request.actionDigest ? { actionDigest: request.actionDigest } : {}),
        approvalsRequired: request.approvalsRequired ?? 1,
        ...(request.remember ? { rememberOffer: request.remember } : {}),
        ...(request.identity ? { identity: request.identity } : {}),
      })
      await notify(post, runId, request, await deps.runs.contract(runId, contract), 0)
    },

    async tetherApprovalDecided({ runId, request, resolution, remembered, refusedAfterApproval }) {
      const { won } = await audit.recordApprovalDecision({
        approvalId: request.approvalId,
        decision: resolution.decision,
        decidedBy: resolution.decidedBy,
        channel: resolution.channel,
        decidedAt: new Date(resolution.decidedAt),
        ...(resolution.reason ? { reason: resolution.reason } : {}),
        ...(remembered && 'pattern' in remembered ? { remember: remembered.pattern } : {}),
        ...(resolution.replacement ? { replacement: resolution.replacement } : {}),
        answers: (resolution.answers ?? []).map((answer) => ({
          approver: answer.approver,
          decision: answer.decision,
          channel: answer.channel,
          answeredAt: new Date(answer.at),
          ...(answer.reason ? { reason: answer.reason } : {}),
          ...(answer.remember ? { remember: answer.remember } : {}),
          ...(answer.signed
            ? {
                signed: {
                  key: answer.signed.key,
                  fingerprint: answer.signed.fingerprint,
                  signature: answer.signed.signature,
                  statement: answer.signed.statement,
                },
              }
            : {}),
        })),
      })
      // The first decision stands; a different one already stored means this one changed nothing.
      if (!won) return
      const at = new Date(resolution.decidedAt)
      const base = { runId, step: request.step, call: request.call, act: request.act, target: request.target }
      await audit.recordPolicyEvents([
        {
          ...base,
          effect: resolution.decision === 'approved' ? 'allow' : 'deny',
          ...(request.rule !== undefined ? { rule: request.rule } : {}),
          ...(request.layer !== undefined ? { layer: request.layer } : {}),
          kind: 'decision',
          decidedBy: resolution.decidedBy,
          reason: decisionReason(resolution, remembered),
          source: resolution.channel,
          at,
        },
        ...(refusedAfterApproval
          ? [
              {
                ...base,
                // The command judged: the asked one, or the edited one the approvers put in its place.
                target: refusedAfterApproval.target,
                effect: 'deny' as const,
                ...(refusedAfterApproval.rule !== undefined ? { rule: refusedAfterApproval.rule } : {}),
                ...(refusedAfterApproval.layer !== undefined ? { layer: refusedAfterApproval.layer } : {}),
                kind: 'refusal' as const,
                reason: `approved by ${resolution.decidedBy}, but an approval never crosses a deny: ${refusedAfterApproval.reason}`,
                source: 'policy',
                at,
              },
            ]
          : []),
      ])
    },

    async tetherApprovalRejected({ runId, step, channel, at, error, input }) {
      // Recorded so an operator sees a bad or unauthorised answer; it changed nothing in the run.
      rejectedCount += 1
      const claimed = input as { approver?: unknown; approvalId?: unknown } | null
      await audit.recordPolicyEvents([
        {
          runId,
          step,
          call: 0,
          act: 'exec',
          target:
            typeof claimed?.approvalId === 'string'
              ? `approval ${claimed.approvalId}`
              : 'approval (unknown id)',
          effect: 'ask',
          kind: 'decision',
          ...(typeof claimed?.approver === 'string' ? { decidedBy: claimed.approver } : {}),
          reason: `rejected ${channel} answer: ${error}`,
          source: `${channel}-rejected:${at}:${rejectedCount}`,
          at: new Date(at),
        },
      ])
    },

    async tetherRemindApprover({ runId, request, contract, reminder }) {
      await notify(post, runId, request, await deps.runs.contract(runId, contract), reminder)
    },
  }
}

function decisionReason(
  resolution: { decision: string; reason?: string | undefined; replacement?: string[] | undefined },
  remembered: { pattern: string } | undefined,
): string {
  const parts = [resolution.reason ?? resolution.decision]
  if (resolution.replacement)
    parts.push(`approved the edited command \`${resolution.replacement.join(' ')}\` instead`)
  if (remembered) parts.push(`remembered \`${remembered.pattern}\` for the rest of the run`)
  return parts.join('; ')
}

/**
 * Posts an approval request (or a reminder) to the contract's webhook: tether's own JSON shape, or a
 * Slack-compatible `{ text, blocks }` payload. A failing webhook fails the activity, so Temporal retries it.
 *
 * Everything the model can choose (the command, its tree) and everything a run starter wrote (goal, run id)
 * reaches Slack only as escaped plain text: no formatting, mention (`<!channel>`) or link can be injected.
 */
async function notify(
  post: typeof fetch,
  runId: string,
  request: PendingApproval,
  contract: TaskContract,
  reminder: number,
): Promise<void> {
  const webhook = contract.approvals.webhook
  if (!webhook) return
  const signed = request.identity === 'signed'
  const answer = {
    approve: `tether approve ${request.approvalId} --as <you>${signed ? ' (signs with your key)' : ''} [--remember [exact|wider]]`,
    deny: `tether deny ${request.approvalId} --as <you> --reason "…"`,
  }
  const remember = rememberLine(request)
  const payload = {
    type: reminder === 0 ? 'approval.requested' : 'approval.reminder',
    reminder,
    runId,
    goal: contract.goal,
    approval: request,
    answer,
  }
  const title = `${reminder === 0 ? 'Approval needed' : `Reminder ${reminder}: approval still needed`} for run ${runId}`
  const needs = `needs ${request.approvalsRequired ?? 1} approver(s), ${signed ? 'signed' : 'unsigned (names trusted)'}`
  const plain = (text: string) => ({
    type: 'section',
    text: { type: 'plain_text', text: slackText(text, 2_900), emoji: false },
  })
  const body =
    webhook.format === 'slack'
      ? {
          text: slackText(`${title}: ${request.act} approval`, 300),
          blocks: [
            { type: 'header', text: { type: 'plain_text', text: slackText(title, 150), emoji: false } },
            plain(`Goal: ${contract.goal}`),
            plain(`${request.act}: ${request.target}`),
            plain(
              `${request.rule !== undefined ? `rule ${request.rule} in layer ${request.layer}` : `the default for ${request.act}`}; ${needs}` +
                `${remember ? `\nRemember would add: ${remember}` : ''}`,
            ),
            // Built from numbers only: the one mrkdwn block, for Slack's own time-zone rendering.
            {
              type: 'section',
              text: { type: 'mrkdwn', text: `deadline ${slackDeadline(request.deadline, Date.now())}` },
            },
            plain(`Approve: ${answer.approve}\nDeny: ${answer.deny}`),
          ],
        }
      : payload
  const response = await post(webhook.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  })
  if (!response.ok) throw new Error(`approval webhook ${webhook.url} answered HTTP ${response.status}`)
}

/** The rule "remember" would add, in words (shown before anyone answers). */
function rememberLine(request: PendingApproval): string | undefined {
  const offer = request.remember
  if (!offer) return undefined
  if ('refused' in offer) return `nothing (${offer.refused})`
  if ('pattern' in offer) return offer.pattern
  return `${offer.exact}${offer.wider ? ` (or, chosen explicitly, ${offer.wider})` : ''}`
}

/**
 * Text Slack shows as written: `&`, `<` and `>` escaped (so no `<!channel>`, `<@user>` or `<url|label>`
 * survives), control characters other than newlines dropped, and the length bounded.
 */
export function slackText(text: string, limit: number): string {
  const clean = text
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]/g, ' ')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
  return clean.length <= limit ? clean : `${clean.slice(0, limit - 1)}…`
}

/** Slack shows `<!date^…>` in each reader's own time zone; UTC and the time left go beside it. */
function slackDeadline(deadline: number, now: number): string {
  const utc = utcText(new Date(deadline))
  return `<!date^${Math.floor(deadline / 1000)}^{date_short_pretty} {time} your time|${utc}> (${utc}, ${untilText(new Date(deadline), new Date(now))})`
}

/** The sandbox mode of a policy spec; none for an invalid one (its run is rejected at the first step). */
function sandboxMode(spec: unknown): 'enforce' | 'off' | undefined {
  try {
    return Policy.fromSpec(spec).sandbox.mode
  } catch (error) {
    if (error instanceof PolicyError) return undefined
    throw error
  }
}
