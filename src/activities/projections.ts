/**
 * Projection activities: the audit rows of a run (runs, steps, refusals, approvals and decisions) and the
 * approver notifications. Every write is idempotent (keyed by run, step and call, or the approval id), so a
 * retried activity never duplicates a row. Timestamps are the workflow's, so a replayed write is identical.
 */
import {
  type AuditStore,
  approvalDecisionRecords,
  approvalRequestRecord,
  rejectedAnswerEvent,
  runFinishedRecord,
  runStartedRecord,
  stepRecords,
} from '../audit/index.js'
import type { TaskContract } from '../contract.js'
import type { PendingApproval } from '../run/index.js'
import { untilText, utcText } from '../time.js'
import { visible } from '../visible.js'
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
    async tetherStartRun(input) {
      // What the preparation judged the run's policy to be on this floor, stored under the name history keeps.
      const effective = input.policyDigest
        ? {
            policy: deps.runs.effectiveAs(input.runId, input.policy, input.policyDigest),
            floor: deps.runs.floor.source,
          }
        : undefined
      await audit.recordRunStarted(runStartedRecord(input, effective))
      await audit.appendMessages(input.runId, 0, [{ role: 'user', content: input.contract.goal }])
    },

    async tetherFinishRun(input) {
      await audit.recordRunFinished(runFinishedRecord(input))
    },

    async tetherRecordStep(record) {
      const { step, refusals } = stepRecords(record)
      await audit.recordStep(step)
      if (refusals.length > 0) await audit.recordPolicyEvents(refusals)
    },

    async tetherApprovalRequested({ runId, request, contract }) {
      await audit.recordApprovalRequested(approvalRequestRecord(runId, request))
      await notify(post, runId, request, await deps.runs.contract(runId, contract), 0)
    },

    async tetherApprovalDecided(input) {
      const { decision, events } = approvalDecisionRecords(input)
      const { won } = await audit.recordApprovalDecision(decision)
      // The first decision stands; a different one already stored means this one changed nothing.
      if (won) await audit.recordPolicyEvents(events)
    },

    async tetherApprovalRejected(input) {
      // Recorded so an operator sees a bad or unauthorised answer; it changed nothing in the run.
      rejectedCount += 1
      await audit.recordPolicyEvents([rejectedAnswerEvent(input, rejectedCount)])
    },

    async tetherRemindApprover({ runId, request, contract, reminder }) {
      await notify(post, runId, request, await deps.runs.contract(runId, contract), reminder)
    },
  }
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
 * survives), invisible characters shown as escapes as everywhere a person reads (newlines kept), and the
 * length bounded.
 */
export function slackText(text: string, limit: number): string {
  const clean = visible(text, { lines: true })
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
