/**
 * Projection activities: the audit rows of a run (runs, steps, refusals, approvals and decisions) and the
 * approver notifications. Every write is idempotent (keyed by run, step and call, or the approval id), so a
 * retried activity never duplicates a row. Timestamps are the workflow's, so a replayed write is identical.
 */
import type { AuditStore } from '../audit/index.js'
import type { TaskContract } from '../contract.js'
import { untilText, utcText } from '../time.js'
import type { PendingApproval } from '../workflows/approvals.js'
import { loadPolicy } from './policy.js'
import type { TetherActivities } from './types.js'

export function projectionActivities(deps: {
  audit: AuditStore
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
    async tetherStartRun({ runId, contract, policy, taskQueue, parentRunId, startedAt }) {
      await audit.recordRunStarted({
        runId,
        goal: contract.goal,
        workspace: contract.workspace,
        contract,
        policy,
        taskQueue,
        ...(parentRunId ? { parentRunId } : {}),
        sandbox: loadPolicy(policy, []).sandbox.mode,
        startedAt: new Date(startedAt),
      })
      await audit.appendMessages(runId, 0, [{ role: 'user', content: contract.goal }])
    },

    async tetherFinishRun({ runId, outcome, reason, steps, inputTokens, outputTokens, finishedAt }) {
      await audit.recordRunFinished({
        runId,
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
      })
      await notify(post, runId, request, contract, 0)
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
          reason: decisionReason(resolution.decision, resolution.reason, remembered),
          source: resolution.channel,
          at,
        },
        ...(refusedAfterApproval
          ? [
              {
                ...base,
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
      await notify(post, runId, request, contract, reminder)
    },
  }
}

function decisionReason(
  decision: string,
  reason: string | undefined,
  remembered: { pattern: string } | { refused: string } | undefined,
): string {
  const parts = [reason ?? decision]
  if (remembered && 'pattern' in remembered)
    parts.push(`remembered \`${remembered.pattern}\` for the rest of the run`)
  if (remembered && 'refused' in remembered) parts.push(`nothing remembered: ${remembered.refused}`)
  return parts.join('; ')
}

/**
 * Posts an approval request (or a reminder) to the contract's webhook: tether's own JSON shape, or a
 * Slack-compatible `{ text, blocks }` payload. A failing webhook fails the activity, so Temporal retries it.
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
  const answer = {
    approve: `tether approve ${request.approvalId} --as <you> [--remember]`,
    deny: `tether deny ${request.approvalId} --as <you> --reason "…"`,
  }
  const payload = {
    type: reminder === 0 ? 'approval.requested' : 'approval.reminder',
    reminder,
    runId,
    goal: contract.goal,
    approval: request,
    answer,
  }
  const title = `${reminder === 0 ? 'Approval needed' : `Reminder ${reminder}: approval still needed`} for run ${runId}`
  const body =
    webhook.format === 'slack'
      ? {
          text: `${title}: ${request.act} \`${request.target}\``,
          blocks: [
            { type: 'section', text: { type: 'mrkdwn', text: `*${title}*\nGoal: ${contract.goal}` } },
            {
              type: 'section',
              text: {
                type: 'mrkdwn',
                text:
                  `*${request.act}* \`${request.target}\`\n` +
                  `${request.rule !== undefined ? `rule \`${request.rule}\` in layer \`${request.layer}\`\n` : ''}` +
                  `deadline ${slackDeadline(request.deadline, Date.now())}`,
              },
            },
            {
              type: 'section',
              text: { type: 'mrkdwn', text: `Approve: \`${answer.approve}\`\nDeny: \`${answer.deny}\`` },
            },
          ],
        }
      : payload
  const response = await post(webhook.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  })
  if (!response.ok) throw new Error(`approval webhook ${webhook.url} answered HTTP ${response.status}`)
}

/** Slack shows `<!date^…>` in each reader's own time zone; UTC and the time left go beside it. */
function slackDeadline(deadline: number, now: number): string {
  const utc = utcText(new Date(deadline))
  return `<!date^${Math.floor(deadline / 1000)}^{date_short_pretty} {time} your time|${utc}> (${utc}, ${untilText(new Date(deadline), new Date(now))})`
}
