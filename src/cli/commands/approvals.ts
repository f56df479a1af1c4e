/** `tether approvals`, `tether approve`, `tether deny`: the approver's side of an `ask`. */
import type { Command } from 'commander'
import { answerApproval, updateRejection } from '../../client.js'
import { formatDeadline } from '../../time.js'
import type { DecisionInput } from '../../workflows/index.js'
import { colour, print, printJson, printTable, visible, withAudit, withTemporal } from '../context.js'
import { CliError } from '../errors.js'

interface AnswerOptions {
  as: string
  reason?: string
  remember?: boolean
  via: 'auto' | 'update' | 'signal'
  json?: boolean
}

export function registerApprovals(program: Command): void {
  program
    .command('approvals')
    .description('List approvals waiting for an answer, oldest first.')
    .option('--approver <name>', 'only those this approver may answer')
    .option('--run <run>', 'only those of one run')
    .option('--json', 'print JSON')
    .action(async (options: { approver?: string; run?: string; json?: boolean }) => {
      const pending = await withAudit((audit) =>
        audit.pendingApprovals({
          ...(options.approver ? { approver: options.approver } : {}),
          ...(options.run ? { runId: options.run } : {}),
        }),
      )
      if (options.json) return printJson(pending)
      if (pending.length === 0) return print('nothing is waiting for an answer')
      printTable(
        ['APPROVAL', 'RUN', 'STEP', 'ACT', 'TARGET', 'RULE', 'DEADLINE'],
        pending.map((a) => [
          a.approvalId,
          a.runId,
          String(a.step),
          a.act,
          visible(a.target).slice(0, 60),
          a.rule !== undefined ? `${a.rule} (${a.layer})` : `default for ${a.act}`,
          formatDeadline(a.deadline),
        ]),
      )
    })

  const answer = (name: 'approve' | 'deny') =>
    program
      .command(name)
      .description(
        name === 'approve'
          ? 'Approve a waiting action; it is judged again before it runs (an approval never crosses a deny).'
          : 'Deny a waiting action; the reason is shown to the model.',
      )
      .argument('<approval>', 'the approval id (see `tether approvals`)')
      .requiredOption('--as <name>', 'who is answering (must be on the policy approver list, if it has one)')
      .option(
        '--via <channel>',
        'auto (Update, or a Signal when no worker answers), update or signal',
        'auto',
      )
      .option('--json', 'print JSON')

  answer('approve')
    .option('--reason <text>', 'why, for the audit')
    .option('--remember', 'also allow this kind of action for the rest of the run')
    .action((id: string, options: AnswerOptions) => decide(id, 'approve', options))
  answer('deny')
    .requiredOption('--reason <text>', 'why; the model reads it')
    .action((id: string, options: AnswerOptions) => decide(id, 'deny', options))
}

async function decide(
  approvalId: string,
  decision: 'approve' | 'deny',
  options: AnswerOptions,
): Promise<void> {
  if (!['auto', 'update', 'signal'].includes(options.via)) {
    throw new CliError(`--via must be auto, update or signal, not ${options.via}`)
  }
  const pending = await withAudit((audit) => audit.pendingApprovals({}))
  const approval = pending.find((a) => a.approvalId === approvalId)
  if (!approval) {
    throw new CliError(
      `no approval ${approvalId} is waiting (already answered, or unknown); see \`tether approvals\``,
    )
  }
  const input: DecisionInput = {
    approvalId,
    decision,
    approver: options.as,
    ...(options.reason ? { reason: options.reason } : {}),
    ...(options.remember ? { remember: true } : {}),
  }
  const outcome = await withTemporal(async (client) => {
    try {
      return await answerApproval(client, approval.runId, input, { via: options.via })
    } catch (error) {
      const rejection = updateRejection(error)
      if (rejection) throw new CliError(`the run refused the answer: ${rejection.message}`)
      throw error
    }
  })
  if (options.json) return printJson({ approvalId, runId: approval.runId, ...outcome })
  if (outcome.channel === 'signal') {
    print(
      `sent as a signal to ${approval.runId}: the run applies it when a worker is running (a bad answer is recorded, not applied)`,
    )
    return
  }
  const verb =
    outcome.result?.decision === 'approved'
      ? colour.green('approved')
      : colour.yellow(outcome.result?.decision ?? decision)
  print(`${verb} ${approval.act} ${visible(approval.target)} in ${approval.runId}`)
  const remembered = outcome.result?.remembered
  if (remembered && 'pattern' in remembered)
    print(`remembered \`${remembered.pattern}\` for the rest of the run`)
  if (remembered && 'refused' in remembered) print(colour.yellow(`nothing remembered: ${remembered.refused}`))
}
