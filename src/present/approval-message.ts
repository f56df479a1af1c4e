/**
 * The message an approval webhook posts, as JSON for a program or as a Slack message for people. In Slack,
 * everything the model can choose (the command, its tree) and everything a run starter wrote (goal, run id)
 * is escaped plain text: no formatting, mention (`<!channel>`) or link can be injected.
 */
import { type RememberOffer, rememberWords, ruleWords, words } from './rules.js'
import { deadlineSetBy, untilText, utcText } from './time.js'
import { visible } from './visible.js'
import { clip, counted } from './words.js'

/** What the message shows of an approval request (the run's PendingApproval has this shape). */
export interface NoticedApproval {
  approvalId: string
  act: string
  target: string
  rule?: string | undefined
  layer?: string | undefined
  remember?: RememberOffer | undefined
  approvalsRequired?: number | undefined
  identity?: 'signed' | 'unsigned' | undefined
  /** Unix milliseconds: when the wait ends. */
  deadline: number
  deadlineBy?: 'approval timeout' | 'wall-time budget' | undefined
}

export interface ApprovalNotice {
  runId: string
  goal: string
  request: NoticedApproval
  /** 0 for the request itself, then 1, 2, … for each reminder. */
  reminder: number
  now: number
}

export function approvalMessage(format: 'json' | 'slack', notice: ApprovalNotice): unknown {
  const { runId, goal, request, reminder } = notice
  const signed = request.identity === 'signed'
  const answer = {
    approve: `tether approve ${request.approvalId} --as <you>${signed ? ' (signs with your key)' : ''} [--remember [exact|wider]]`,
    deny: `tether deny ${request.approvalId} --as <you> --reason "…"`,
  }
  if (format !== 'slack') {
    return {
      type: reminder === 0 ? 'approval.requested' : 'approval.reminder',
      reminder,
      runId,
      goal,
      approval: request,
      answer,
    }
  }
  const remember = request.remember ? words(rememberWords(request.remember, String)) : undefined
  const title = `${reminder === 0 ? 'Approval needed' : `Reminder ${reminder}: approval still needed`} for run ${runId}`
  const needs = `needs ${counted(request.approvalsRequired ?? 1, 'approver')}, ${signed ? 'signed' : 'unsigned (names trusted)'}`
  const plain = (text: string) => ({
    type: 'section',
    text: { type: 'plain_text', text: slackText(text, 2_900), emoji: false },
  })
  return {
    text: slackText(`${title}: ${request.act} approval`, 300),
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: slackText(title, 150), emoji: false } },
      plain(`Goal: ${goal}`),
      plain(`${request.act}: ${request.target}`),
      plain(
        `${words(ruleWords(request, String))}; ${needs}${remember ? `\nRemember would add: ${remember}` : ''}`,
      ),
      // Built from numbers only: the one mrkdwn block, for Slack's own time-zone rendering.
      {
        type: 'section',
        text: {
          type: 'mrkdwn',
          text: `deadline ${slackDeadline(request.deadline, notice.now)}, ${deadlineSetBy(request.deadlineBy)}`,
        },
      },
      plain(`Approve: ${answer.approve}\nDeny: ${answer.deny}`),
    ],
  }
}

/**
 * Text Slack shows as written: `&`, `<` and `>` escaped (so no `<!channel>`, `<@user>` or `<url|label>`
 * survives), invisible characters shown as escapes as everywhere a person reads (newlines kept), and the
 * length bounded.
 */
export function slackText(text: string, limit: number): string {
  return clip(
    visible(text, { lines: true }).replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;'),
    limit,
  )
}

/** Slack shows `<!date^…>` in each reader's own time zone; UTC and the time left go beside it. */
function slackDeadline(deadline: number, now: number): string {
  const utc = utcText(new Date(deadline))
  return `<!date^${Math.floor(deadline / 1000)}^{date_short_pretty} {time} your time|${utc}> (${utc}, ${untilText(new Date(deadline), new Date(now))})`
}
