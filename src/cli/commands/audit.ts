/** `tether audit refused|ran|approvals`: what was refused, what ran, who approved what (and proof of it). */
import type { Command } from 'commander'
import { verifyRecordedAnswer } from '../../audit/index.js'
import { formatBytes } from '../../visible.js'
import { print, printJson, printTable, visible, withAudit } from '../context.js'
import { CliError } from '../errors.js'

export function registerAudit(program: Command): void {
  const audit = program.command('audit').description('Query the audit store.')
  audit
    .command('refused')
    .description('What the policy or an approver refused, newest first.')
    .option('--run <run>', 'only one run')
    .option('--limit <n>', 'how many', '50')
    .option('--json', 'print JSON')
    .action(async (options: { run?: string; limit: string; json?: boolean }) => {
      const page = await withAudit((store) =>
        store.refusedActions({ limit: limit(options.limit), ...(options.run ? { runId: options.run } : {}) }),
      )
      if (options.json) return printJson(page.items)
      if (page.items.length === 0) return print('nothing was refused')
      printTable(
        ['WHEN', 'RUN', 'STEP', 'ACT', 'TARGET', 'BY', 'REASON'],
        page.items.map((e) => [
          e.at.toISOString().replace('T', ' ').slice(0, 19),
          e.runId,
          String(e.step),
          e.act,
          visible(e.target).slice(0, 50),
          e.kind === 'decision'
            ? `${e.decidedBy ?? 'an approver'} (${e.source})`
            : e.rule !== undefined
              ? `rule ${e.rule} in ${e.layer}`
              : `default for ${e.act}`,
          e.reason.slice(0, 80),
        ]),
      )
    })
  audit
    .command('ran')
    .description('The commands that actually ran, with status, exit code and duration.')
    .option('--run <run>', 'only one run (default: the most recent runs)')
    .option('--limit <n>', 'how many runs to look at without --run', '10')
    .option('--json', 'print JSON')
    .action(async (options: { run?: string; limit: string; json?: boolean }) => {
      const commands = await withAudit(async (store) => {
        const runs = options.run
          ? [options.run]
          : (await store.listRuns({ limit: limit(options.limit) })).items.map((r) => r.runId)
        const all = []
        for (const runId of runs) all.push(...(await store.executedCommands({ runId })))
        return all
      })
      if (options.json) return printJson(commands)
      if (commands.length === 0) return print('no commands ran')
      printTable(
        ['RUN', 'STEP', 'COMMAND', 'STATUS', 'DURATION', 'OUTPUT', 'SHA256'],
        commands.map((c) => [
          c.runId,
          c.kind === 'gate' ? `${c.step} gate` : String(c.step),
          visible(c.argv.join(' ')).slice(0, 60),
          c.status === 'exited' ? `exit ${c.exitCode}` : c.status,
          `${(c.durationMs / 1000).toFixed(1)} s`,
          formatBytes(c.stdout.bytes + c.stderr.bytes),
          c.stdout.sha256.slice(0, 12),
        ]),
      )
    })
  audit
    .command('approvals')
    .description(
      'Who answered which approval, how, and (with --verify) whether each signature still proves it.',
    )
    .option('--run <run>', 'only one run')
    .option('--limit <n>', 'how many answers', '1000')
    .option(
      '--verify',
      "re-verify every signed answer against its statement, the recorded action and the run's policy",
    )
    .option('--json', 'print JSON')
    .action(async (options: { run?: string; limit: string; verify?: boolean; json?: boolean }) => {
      const records = await withAudit((store) =>
        store.approvalAnswers({
          limit: limit(options.limit),
          ...(options.run ? { runId: options.run } : {}),
        }),
      )
      const rows = records.map((record) => ({
        ...record,
        check: options.verify ? verifyRecordedAnswer(record) : undefined,
      }))
      if (options.json) {
        printJson(
          rows.map(({ approval, answer, check }) => ({ approval, answer, ...(check ? { check } : {}) })),
        )
      } else if (rows.length === 0) {
        print('no approval has been answered')
      } else {
        printTable(
          ['WHEN', 'RUN', 'APPROVAL', 'ACTION', 'APPROVER', 'ANSWER', 'VIA', 'PROOF'],
          rows.map(({ approval, answer, check }) => [
            answer.answeredAt.toISOString().replace('T', ' ').slice(0, 19),
            approval.runId,
            approval.approvalId.slice(0, 8),
            `${approval.act} ${visible(approval.target)}`.slice(0, 50),
            answer.approver,
            answer.decision,
            answer.channel,
            check
              ? check.status === 'verified'
                ? `verified ${check.fingerprint}`
                : check.status === 'unsigned'
                  ? 'unsigned (the policy trusted names)'
                  : `FAILED: ${check.reason}`
              : (answer.keyFingerprint ?? 'unsigned'),
          ]),
        )
      }
      const failed = rows.filter((row) => row.check?.status === 'failed').length
      if (options.verify && !options.json) {
        print(
          `${rows.length - failed} of ${rows.length} answers check out${failed ? `; ${failed} FAILED` : ''}`,
        )
      }
      if (failed > 0) process.exitCode = 1
    })
}

function limit(value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 1)
    throw new CliError(`--limit must be a positive whole number, not ${value}`)
  return n
}
