/**
 * An answer from the page: the server never signs anything. It checks the decision's shape, that the
 * person signed in (when the access mode names them) answers as themselves, that the approval still
 * waits, and that an edited command is not one the policy denies (the run judges it again anyway); then it
 * forwards the decision, exactly as signed, as the `decide` Update and reports the run's verdict in words.
 */

import type { Client } from '@temporalio/client'
import type { AuditStore } from '../audit/index.js'
import { answerApproval, updateRejection } from '../embed/index.js'
import { Policy, PolicyError, renderCommand } from '../policy/index.js'
import { backticks, ruleWords, words } from '../present/index.js'
import { decisionSchema } from '../run/index.js'

export type AnswerReply = { ok: true; message: string } | { ok: false; type: string; message: string }

/**
 * A refused answer is an ordinary outcome of answering, so it comes back as HTTP 200 with `ok: false`, its
 * type and its words; HTTP errors are left to requests that were wrong in themselves (see server.ts).
 */
const refuse = (type: string, message: string) => ({
  status: 200,
  reply: { ok: false as const, type, message },
})

export async function forwardAnswer(
  deps: { audit: AuditStore; client: Client },
  approvalId: string,
  body: unknown,
  user: string | undefined,
): Promise<{ status: number; reply: AnswerReply }> {
  const parsed = decisionSchema.safeParse(body)
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(decision)'}: ${i.message}`)
    return refuse('InvalidDecision', `malformed decision: ${issues.join('; ')}`)
  }
  const decision = parsed.data
  if (decision.approvalId !== approvalId) {
    return refuse('InvalidDecision', `this page answers approval ${approvalId}, not ${decision.approvalId}`)
  }
  if (user !== undefined && decision.approver !== user) {
    return refuse('NotYou', `you are signed in as ${user}; you cannot answer as ${decision.approver}`)
  }
  const approval = await deps.audit.approval(approvalId)
  if (!approval) return refuse('UnknownApproval', `no approval ${approvalId}`)
  if (approval.decision) {
    return refuse(
      'AlreadyDecided',
      `approval ${approvalId} was already ${approval.decision} by ${approval.decidedBy ?? 'tether'}`,
    )
  }
  if (decision.replacement && approval.act === 'exec') {
    const denied = await deniedReplacement(deps.audit, approval.runId, decision.replacement)
    if (denied) return refuse('ReplacementDenied', denied)
  }
  try {
    const sent = await answerApproval(deps.client, approval.runId, decision, {
      via: 'auto',
      updateTimeoutMs: 10_000,
    })
    if (sent.channel === 'signal') {
      return {
        status: 202,
        reply: {
          ok: true,
          message:
            'No worker took the answer in time, so it was sent as a signal: the run applies it when a worker is running (a refused answer is recorded, not applied).',
        },
      }
    }
    const result = sent.result
    const message =
      result?.decision === 'pending'
        ? `Approved (${result.approvals} of ${result.required}); it waits for ${result.required - result.approvals} more approver(s).`
        : result?.decision === 'approved'
          ? `Approved${decision.replacement ? ` with the edited command ${renderCommand(decision.replacement)}` : ''}; the run judges it again and goes on.`
          : `Denied; the model reads your guidance.`
    return { status: 200, reply: { ok: true, message } }
  } catch (error) {
    const rejection = updateRejection(error)
    if (rejection) {
      return refuse(rejection.type, `The run refused the answer (${rejection.type}): ${rejection.message}`)
    }
    return refuse('Unavailable', `Could not reach the run: ${(error as Error).message.split('\n')[0]}`)
  }
}

/**
 * Why the run's policy denies an edited command, if it does: said at once on the page. Only a deny is
 * decided here (remembered rules only ever allow more); the run judges the command again before it runs.
 */
async function deniedReplacement(
  audit: AuditStore,
  runId: string,
  argv: string[],
): Promise<string | undefined> {
  const config = await audit.runConfig(runId)
  let policy: Policy
  try {
    policy = Policy.fromSpec(config?.policy)
  } catch (error) {
    if (error instanceof PolicyError) return `the run's recorded policy does not load: ${error.message}`
    throw error
  }
  const verdict = policy.checkExec(argv)
  if (verdict.effect !== 'deny') return undefined
  return (
    `The edited command ${renderCommand(argv)} is denied by ${words(ruleWords({ ...verdict, act: 'exec' }, backticks))}: ${verdict.reason} ` +
    'An approval never crosses a deny: edit it again, approve the command as asked, or deny.'
  )
}
