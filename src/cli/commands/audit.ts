/**
 * `tether audit refused|ran|approvals|verify|provenance`: what was refused, what ran, who approved what (and
 * proof of it), whether a run's rows still match its Temporal history, and each run's signed provenance.
 */

import { readFile } from 'node:fs/promises'
import type { Command } from 'commander'
import type {
  AnchorReport,
  AnswerCheck,
  ApprovalAnswerRow,
  ApprovalRow,
  AuditStore,
  Finding,
  ProvenanceStatement,
} from '../../audit/index.js'
import { commandStatus, formatBytes, ruleWords, seconds, words } from '../../present/index.js'
import { print, printJson, printTable, runArgument, visible, wholeNumber } from '../context.js'
import { CliError } from '../errors.js'

export function registerAudit(program: Command): void {
  const audit = program.command('audit').description('Query the audit store.')
  audit
    .command('refused')
    .description('What the policy or an approver refused, newest first.')
    .option('--run <run>', 'only one run (its id, or the start of one)', runArgument)
    .option('--limit <n>', 'how many', '50')
    .option('--json', 'print JSON')
    .action(async (options: { run?: string; limit: string; json?: boolean }) => {
      const { withAudit } = await import('../connect.js')
      const page = await withAudit(async (store) => {
        const runId = await onlyRun(store, options.run)
        return store.refusedActions({
          limit: wholeNumber(options.limit, '--limit'),
          ...(runId ? { runId } : {}),
        })
      })
      if (options.json) return printJson(page.items)
      if (page.items.length === 0) return print('nothing was refused')
      printTable(
        ['WHEN (UTC)', 'RUN', 'STEP', 'ACT', 'TARGET', 'BY', 'REASON'],
        page.items.map((e) => [
          e.at.toISOString().replace('T', ' ').slice(0, 19),
          e.runId,
          String(e.step),
          e.act,
          visible(e.target).slice(0, 50),
          e.kind === 'decision'
            ? `${e.decidedBy ?? 'an approver'} (${e.source})`
            : words(ruleWords(e, String)),
          e.reason.slice(0, 80),
        ]),
      )
    })
  audit
    .command('ran')
    .description('The commands that actually ran, with status, exit code and duration.')
    .option(
      '--run <run>',
      'only one run, its id or the start of one (default: the most recent runs)',
      runArgument,
    )
    .option('--limit <n>', 'how many runs to look at without --run', '10')
    .option('--json', 'print JSON')
    .action(async (options: { run?: string; limit: string; json?: boolean }) => {
      const { withAudit } = await import('../connect.js')
      const commands = await withAudit(async (store) => {
        const runId = await onlyRun(store, options.run)
        const runs = runId
          ? [runId]
          : (await store.listRuns({ limit: wholeNumber(options.limit, '--limit') })).items.map((r) => r.runId)
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
          commandStatus(c),
          `${seconds(c.durationMs)}`,
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
    .option('--run <run>', 'only one run (its id, or the start of one)', runArgument)
    .option('--limit <n>', 'how many answers', '1000')
    .option(
      '--verify',
      "re-verify every answer: against the run's Temporal history when Temporal is reachable, else against " +
        "the run's effective policy and the approval as the database records them",
    )
    .option('--json', 'print JSON')
    .action(async (options: { run?: string; limit: string; verify?: boolean; json?: boolean }) => {
      const { withAudit } = await import('../connect.js')
      const { verifyRecordedAnswer } = await import('../../audit/index.js')
      const { records, anchored } = await withAudit(async (store) => {
        const runId = await onlyRun(store, options.run)
        const records = await store.approvalAnswers({
          limit: wholeNumber(options.limit, '--limit'),
          ...(runId ? { runId } : {}),
        })
        const runs = runId ? [runId] : [...new Set(records.map((r) => r.approval.runId))]
        return { records, anchored: options.verify ? await anchorRuns(store, runs) : undefined }
      })
      const rows: AnswerLine[] = records.map((record) => {
        const { approval, answer } = record
        if (!anchored) return { approval, answer }
        const report = anchored.reports.get(approval.runId)
        if (!report) return { approval, answer, check: verifyRecordedAnswer(record), against: 'database' }
        const key = `${approval.approvalId} ${answer.approver}`
        const rowFindings = report.findings.filter((f) => f.table === 'approval_answers' && f.key === key)
        const proof = report.answers.find(
          (a) => a.approvalId === approval.approvalId && a.approver === answer.approver,
        )
        const check: AnswerCheck =
          rowFindings.length > 0
            ? { status: 'failed', reason: rowFindings.map(describeFinding).join('; ') }
            : (proof?.check ?? { status: 'failed', reason: 'not checked against history' })
        return { approval, answer, check, against: 'history' }
      })
      // Answers history holds that the database lost: no row to show, so one line each.
      const deleted = [...(anchored?.reports.values() ?? [])].flatMap((report) =>
        report.findings
          .filter((f) => f.table === 'approval_answers' && f.problem === 'deleted')
          .map((f) => ({ runId: report.runId, finding: f })),
      )
      const others = [...(anchored?.reports.values() ?? [])].flatMap((report) =>
        report.findings.some((f) => f.table !== 'approval_answers') ? [report.runId] : [],
      )
      if (options.json) {
        // One entry per answer, as before --verify checked history; an answer only history holds is one too.
        printJson([
          ...rows.map(({ approval, answer, check, against }) => ({
            approval,
            answer,
            ...(check ? { check, against } : {}),
          })),
          ...deleted.map(({ runId, finding }) => {
            const [approvalId, approver] = finding.key.split(' ')
            return {
              approval: { runId, approvalId },
              answer: { approver },
              check: { status: 'failed', reason: describeFinding(finding) },
              against: 'history',
            }
          }),
        ])
      } else if (rows.length === 0 && deleted.length === 0) {
        print('no approval has been answered')
      } else {
        printTable(
          ['WHEN (UTC)', 'RUN', 'APPROVAL', 'ACTION', 'APPROVER', 'ANSWER', 'VIA', 'PROOF'],
          [
            ...rows.map(({ approval, answer, check }) => [
              answer.answeredAt.toISOString().replace('T', ' ').slice(0, 19),
              approval.runId,
              approval.approvalId.slice(0, 8),
              `${approval.act} ${visible(approval.target)}`.slice(0, 50),
              answer.approver,
              answer.decision,
              answer.channel,
              check ? proofText(check) : (answer.keyFingerprint ?? 'unsigned'),
            ]),
            ...deleted.map(({ runId, finding }) => {
              const [approvalId = '', approver = ''] = finding.key.split(' ')
              return [
                '',
                runId,
                approvalId.slice(0, 8),
                '',
                approver,
                '',
                '',
                `FAILED: ${describeFinding(finding)}`,
              ]
            }),
          ],
        )
      }
      const failed = rows.filter((row) => row.check?.status === 'failed').length + deleted.length
      if (anchored && !options.json) {
        const total = rows.length + deleted.length
        print(`${total - failed} of ${total} answers check out${failed ? `; ${failed} FAILED` : ''}`)
        print(againstText(anchored, rows))
        for (const runId of others) {
          print(`run ${runId} has other rows that do not match its history: tether audit verify ${runId}`)
        }
      }
      if (failed > 0) process.exitCode = 1
    })
  audit
    .command('verify')
    .description(
      "Check a run's audit rows against its Temporal history: every row deleted, added or edited, and every answer's proof.",
    )
    .argument('<run>', 'the run id, or the start of one', runArgument)
    .option('--json', 'print JSON')
    .action(async (given: string, options: { json?: boolean }) => {
      const { resolveId, withAudit, withTemporal } = await import('../connect.js')
      const { ANCHORED_TABLES, HistoryUnavailableError, verifyRunHistory } = await import(
        '../../audit/index.js'
      )
      await quietReplays()
      let runId = given
      const report = await withAudit(async (store) => {
        runId = await resolveId(store, 'run', given, { keepUnknown: true })
        return withTemporal(async (client) => {
          try {
            return await verifyRunHistory(client, store, runId)
          } catch (error) {
            if (error instanceof HistoryUnavailableError)
              throw new CliError(`cannot verify run ${runId}: ${error.message}`)
            throw error
          }
        })
      })
      if (report.findings.length > 0) process.exitCode = 1
      if (options.json) return printJson(report)
      for (const finding of report.findings) {
        print(`FAILED ${finding.table} ${finding.key}: ${describeFinding(finding)}`)
      }
      const checked = ANCHORED_TABLES.filter((t) => report.checked[t] > 0)
        .map((t) => `${report.checked[t]} ${t}`)
        .join(', ')
      const executions = `${report.executions.length} execution${report.executions.length === 1 ? '' : 's'}`
      print(
        report.findings.length === 0
          ? `run ${runId} matches its Temporal history (${executions}; checked ${checked || 'nothing'})${report.running ? '; it is still running' : ''}`
          : `run ${runId} does NOT match its Temporal history: ${report.findings.length} FAILED (${executions}; checked ${checked || 'nothing'})`,
      )
    })
  audit
    .command('provenance')
    .description(
      "A run's signed provenance (an in-toto Statement in a DSSE envelope, signed by the worker's key), or with --verify FILE, check one offline.",
    )
    .argument('[run]', 'the run id, or the start of one (print its envelope)')
    .option('--statement', 'print the statement inside the envelope instead of the envelope')
    .option(
      '--verify <file>',
      'check an envelope saved from `tether audit provenance RUN`, without the audit store',
    )
    .option(
      '--key <key>',
      "with --verify: the worker's public key (ed25519:<base64>, or a PEM file); default: this machine's worker key",
    )
    .option(
      '--workspace <dir>',
      "with --verify: also check that this folder's tree is the statement's subject",
    )
    .action(
      async (
        given: string | undefined,
        options: { statement?: boolean; verify?: string; key?: string; workspace?: string },
      ) => {
        if (options.verify) return verifyProvenanceFile(options.verify, options)
        if (!given) throw new CliError('name the run (`tether audit provenance RUN`), or give --verify FILE')
        const { resolveId, withAudit } = await import('../connect.js')
        const { fromBase64 } = await import('../../identity/index.js')
        let runId = given
        const envelope = await withAudit(async (store) => {
          runId = await resolveId(store, 'run', given)
          return store.provenance(runId)
        })
        if (!envelope) {
          throw new CliError(
            `run ${runId} has no provenance: it has not finished, it was rejected before it ran, or it finished before provenance was recorded (see \`tether show ${runId}\`)`,
          )
        }
        const payload = fromBase64(envelope.payload) ?? new Uint8Array()
        printJson(options.statement ? JSON.parse(new TextDecoder().decode(payload)) : envelope)
      },
    )
}

/** `tether audit provenance --verify FILE`: the envelope's signature, statement and (optionally) subject. */
async function verifyProvenanceFile(
  file: string,
  options: { key?: string; workspace?: string },
): Promise<void> {
  const { checkProvenance } = await import('../../audit/index.js')
  const { fingerprintOf, keyIdOf } = await import('../../identity/index.js')
  const { KeyringError, publicKeyFrom } = await import('../../identity/keyring.js')
  const { workerKeyFile } = await import('../../stack/index.js')
  const { treeDigest } = await import('../../workspace/index.js')
  let envelope: unknown
  try {
    envelope = JSON.parse(await readFile(file, 'utf8'))
  } catch (error) {
    throw new CliError(
      `cannot read ${file} as JSON (${(error as Error).message.split('\n')[0]}); give the envelope \`tether audit provenance RUN\` printed`,
    )
  }
  let publicKey: string
  try {
    publicKey = publicKeyFrom(options.key ?? workerKeyFile())
  } catch (error) {
    if (!(error instanceof KeyringError)) throw error
    throw new CliError(
      options.key
        ? error.message
        : `${error.message}; give the worker's public key with --key ed25519:<base64>`,
    )
  }
  const check = checkProvenance(envelope, publicKey)
  if (!check.ok) throw new CliError(`${file} does NOT verify: ${check.error}`)
  const { statement } = check
  const subject = statement.subject[0] as ProvenanceStatement['subject'][number]
  print(
    `${file} verifies: signed by the worker key ${fingerprintOf(publicKey)} (keyid ${keyIdOf(publicKey)?.slice(0, 16)}…)`,
  )
  const outcome = statement.predicate.runDetails.byproducts.find((b) => b.name === 'outcome')?.annotations
  print(
    `run ${statement.predicate.runDetails.metadata.invocationId}: ${String(outcome?.outcome ?? 'unknown')}` +
      `${outcome?.costUsd !== null && outcome?.costUsd !== undefined ? `, spent ${outcome.costUsd} USD` : ''}`,
  )
  print(`subject: ${subject.name} sha256:${subject.digest.sha256}`)
  if (options.workspace) {
    const tree = await treeDigest(options.workspace)
    if (tree.sha256 !== subject.digest.sha256) {
      throw new CliError(
        `${options.workspace} is NOT the subject: its tree is sha256:${tree.sha256} (${tree.files} files)`,
      )
    }
    print(`${options.workspace} is the subject (${tree.files} files)`)
  }
}

type AnswerLine = {
  approval: ApprovalRow
  answer: ApprovalAnswerRow
  check?: AnswerCheck
  against?: 'history' | 'database'
}

/**
 * Each run compared with its Temporal history, when Temporal is reachable: runs it has no history of (or
 * whose history does not replay) are checked from the database alone, and say so.
 */
async function anchorRuns(
  store: AuditStore,
  runs: string[],
): Promise<{ reports: Map<string, AnchorReport>; unavailable: Map<string, string>; offline?: string }> {
  const reports = new Map<string, AnchorReport>()
  const unavailable = new Map<string, string>()
  if (runs.length === 0) return { reports, unavailable }
  const { withTemporal } = await import('../connect.js')
  const { HistoryUnavailableError, verifyRunHistory } = await import('../../audit/index.js')
  await quietReplays()
  try {
    await withTemporal(async (client) => {
      for (const runId of runs) {
        try {
          reports.set(runId, await verifyRunHistory(client, store, runId))
        } catch (error) {
          if (!(error instanceof HistoryUnavailableError)) throw error
          unavailable.set(runId, error.message)
        }
      }
    })
  } catch (error) {
    if (!(error instanceof CliError)) throw error
    return { reports, unavailable, offline: error.message }
  }
  return { reports, unavailable }
}

/** Which answers were checked against what. */
function againstText(
  anchored: { reports: Map<string, AnchorReport>; unavailable: Map<string, string>; offline?: string },
  rows: AnswerLine[],
): string {
  if (anchored.offline) {
    return `checked from the database alone (its effective policies and approvals), not against Temporal history: ${anchored.offline}`
  }
  const fromDatabase = rows.filter((row) => row.against === 'database').length
  const lines = [`checked against Temporal history for ${anchored.reports.size} run(s)`]
  if (fromDatabase > 0) {
    const why = [...anchored.unavailable.values()][0]
    lines.push(`${fromDatabase} answer(s) from the database alone${why ? ` (${why})` : ''}`)
  }
  return lines.join('; ')
}

function proofText(check: AnswerCheck): string {
  return check.status === 'verified'
    ? `verified ${check.fingerprint}`
    : check.status === 'unsigned'
      ? 'unsigned (the policy trusted names)'
      : `FAILED: ${check.reason}`
}

/** A finding in words: what is wrong with the row, and both values when a column differs. */
function describeFinding(finding: Finding): string {
  if (finding.problem !== 'edited' || finding.column === undefined || !('database' in finding)) {
    return finding.problem === 'failed' ? finding.detail : `${finding.problem}: ${finding.detail}`
  }
  return `edited ${finding.column}: database ${value(finding.database)}, history ${value(finding.history)}`
}

function value(shown: unknown): string {
  const text = JSON.stringify(shown) ?? 'null'
  return visible(text.length > 80 ? `${text.slice(0, 79)}…` : text)
}

/** Replays run in this process: the SDK's runtime logs warnings only (its default is every worker's chatter). */
async function quietReplays(): Promise<void> {
  const { DefaultLogger, Runtime } = await import('@temporalio/worker')
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') })
  } catch {
    // Installed already (a runtime is per process).
  }
}

/** The run `--run` names (an id, or the start of one), when it names one. */
async function onlyRun(store: AuditStore, given: string | undefined): Promise<string | undefined> {
  if (given === undefined) return undefined
  const { resolveId } = await import('../connect.js')
  return resolveId(store, 'run', given)
}
