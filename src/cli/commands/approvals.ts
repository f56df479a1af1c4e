/** `tether approvals`, `tether approve`, `tether deny`, `tether keys`: the approver's side of an `ask`. */

import type { Command } from 'commander'
import type { ApproverKey } from '../../identity/keyring.js'
import { deadlineSetBy, formatDeadline, ruleWords, words } from '../../present/index.js'
import {
  colour,
  print,
  printJson,
  printTable,
  rememberText,
  runArgument,
  visible,
  wholeNumber,
} from '../context.js'
import { CliError } from '../errors.js'

/** Approvals read per query when listing them all. */
const PAGE = 500

interface AnswerOptions {
  as?: string
  key?: string
  reason?: string
  remember?: boolean | string
  raiseTo?: string
  via: 'auto' | 'update' | 'signal'
  json?: boolean
}

export function registerApprovals(program: Command): void {
  program
    .command('approvals')
    .description(
      'List approvals waiting for an answer, oldest first, with what "remember" would add; then, for a waiting run on a folder of this machine, git files it wrote there that would make git run a program.',
    )
    .option('--approver <name>', 'only those this approver may answer')
    .option('--run <run>', 'only those of one run (its id, or the start of one)', runArgument)
    .option('--limit <n>', 'at most this many (default: all of them, read a page at a time)')
    .option('--json', 'print JSON')
    .action(async (options: { approver?: string; run?: string; limit?: string; json?: boolean }) => {
      const limit =
        options.limit === undefined ? Number.POSITIVE_INFINITY : wholeNumber(options.limit, '--limit')
      const { resolveId, withAudit } = await import('../connect.js')
      const { plantedGitOf, plantedGitLines } = await import('../timeline.js')
      const { pending, planted } = await withAudit(async (audit) => {
        const runId = options.run ? await resolveId(audit, 'run', options.run) : undefined
        const all: Awaited<ReturnType<typeof audit.pendingApprovals>> = []
        for (;;) {
          const last = all.at(-1)
          const page = await audit.pendingApprovals({
            ...(options.approver ? { approver: options.approver } : {}),
            ...(runId ? { runId } : {}),
            limit: Math.min(PAGE, limit - all.length),
            ...(last ? { after: last } : {}),
          })
          all.push(...page)
          if (page.length < PAGE || all.length >= limit) break
        }
        // What a waiting run planted for git, as its approval page in the inbox says: worth knowing before a yes.
        const planted = new Map<string, Awaited<ReturnType<typeof plantedGitOf>>>()
        for (const runId of new Set(all.map((approval) => approval.runId))) {
          const summary = await audit.runSummary(runId)
          const found = summary ? await plantedGitOf(summary) : undefined
          if (found && found.files.length > 0) planted.set(runId, found)
        }
        return { pending: all, planted }
      })
      if (options.json) {
        return printJson(
          pending.map((approval) => {
            const found = planted.get(approval.runId)
            return found ? { ...approval, plantedGit: found.files } : approval
          }),
        )
      }
      if (pending.length === 0) return print('nothing is waiting for an answer')
      printTable(
        ['APPROVAL', 'RUN', 'STEP', 'ACT', 'TARGET', 'RULE', 'NEEDS', 'REMEMBER', 'DEADLINE'],
        pending.map((a) => [
          a.approvalId,
          a.runId,
          String(a.step),
          a.act,
          visible(a.target).slice(0, 60),
          words(ruleWords(a, String)),
          `${a.approvalsRequired} ${a.identity === 'signed' ? 'signed' : 'unsigned'}`,
          visible(rememberText(a)).slice(0, 80),
          `${formatDeadline(a.deadline)} (${deadlineSetBy(a.deadlineBy)})`,
        ]),
      )
      for (const [runId, { files, held }] of planted) {
        for (const line of plantedGitLines(files, `run ${runId} wrote`, held)) print(line)
      }
    })

  const answer = (name: 'approve' | 'deny') =>
    program
      .command(name)
      .description(
        name === 'approve'
          ? 'Approve a waiting action (signed with your key when the policy lists keys); it is judged again before it runs.'
          : 'Deny a waiting action (signed with your key when the policy lists keys); the reason is shown to the model.',
      )
      .argument('<approval>', 'the approval id (see `tether approvals`), or the start of one')
      .option(
        '--as <name>',
        "who is answering, as the policy names them (default: TETHER_APPROVER, else your profile's approver, else the name of --key)",
      )
      .option(
        '--key <name>',
        'the key to sign with, from your keys folder (`tether keys list`; default: the approver name, or your only key)',
      )
      .option(
        '--via <channel>',
        'auto (Update, or a Signal when no worker answers), update or signal',
        'auto',
      )
      .option('--json', 'print JSON')

  answer('approve')
    .option('--reason <text>', 'why, for the audit')
    .option(
      '--remember [which]',
      'also allow it for the rest of the run: `exact` (the default: this exact command, path or host) or `wider` (when the request offers one)',
    )
    .option(
      '--raise-to <amount>',
      'a budget approval: the run\'s new cost cap, e.g. "50 USD" (more than it has spent); deny to end the run instead',
    )
    .action((id: string, options: AnswerOptions) => decide(id, 'approve', options))
  answer('deny')
    .requiredOption('--reason <text>', 'why; the model reads it')
    .action((id: string, options: AnswerOptions) => decide(id, 'deny', options))

  const keys = program
    .command('keys')
    .description("An approver's Ed25519 keys, kept in the user's config folder.")
  keys
    .command('new')
    .description('Make a key pair; prints the approver entry to paste into the policy.')
    .argument('<name>', 'the approver name, as the policy will list it')
    .action(async (name: string) => {
      const { createKey } = await import('../../identity/keyring.js')
      const { fingerprintOf } = await import('../../identity/index.js')
      const { file, publicKey } = await keyringCall(() => createKey(name))
      print(`private key: ${file} (mode 0600; it never leaves this machine)`)
      print(`fingerprint: ${fingerprintOf(publicKey)}`)
      print('add this to the policy (under approvers):')
      print(`  - { name: ${name}, keys: ["${publicKey}"] }`)
    })
  keys
    .command('show')
    .description("A key's public half and the policy entry for it.")
    .argument('<name>', 'the key name')
    .action(async (name: string) => {
      const { loadKey } = await import('../../identity/keyring.js')
      const { fingerprintOf } = await import('../../identity/index.js')
      const key = await keyringCall(() => loadKey(name))
      print(`${key.publicKey}  ${fingerprintOf(key.publicKey)}  ${key.file}`)
      print(`  - { name: ${name}, keys: ["${key.publicKey}"] }`)
    })
  keys
    .command('list')
    .description('The keys in the keyring.')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const { keysDir, listKeys, loadKey } = await import('../../identity/keyring.js')
      const { fingerprintOf } = await import('../../identity/index.js')
      const keys = []
      for (const name of listKeys()) {
        const key = await keyringCall(() => loadKey(name))
        keys.push({
          name,
          fingerprint: fingerprintOf(key.publicKey) ?? '',
          publicKey: key.publicKey,
          file: key.file,
        })
      }
      if (options.json) return printJson(keys)
      if (keys.length === 0) return print(`no keys in ${keysDir()}; make one with \`tether keys new NAME\``)
      printTable(
        ['NAME', 'FINGERPRINT'],
        keys.map((key) => [key.name, key.fingerprint]),
      )
    })
}

async function keyringCall<T>(call: () => T): Promise<T> {
  const { KeyringError } = await import('../../identity/keyring.js')
  try {
    return call()
  } catch (error) {
    if (error instanceof KeyringError) throw new CliError(error.message)
    throw error
  }
}

/** The key to sign with: --key, else the approver's name, else the only key in the keyring. */
async function signingKey(options: AnswerOptions, approver: string | undefined): Promise<ApproverKey> {
  const { keysDir, listKeys, loadKey } = await import('../../identity/keyring.js')
  const name = options.key ?? approver
  if (name) return keyringCall(() => loadKey(name))
  const names = listKeys()
  if (names.length === 1) return keyringCall(() => loadKey(names[0] as string))
  throw new CliError(
    names.length === 0
      ? `this run requires signed decisions and ${keysDir()} holds no key; make one with \`tether keys new NAME\` and have it added to the policy`
      : `several keys in ${keysDir()} (${names.join(', ')}); say which with --key`,
  )
}

function rememberChoice(value: boolean | string | undefined): 'exact' | 'wider' | undefined {
  if (value === undefined || value === false) return undefined
  if (value === true || value === 'exact') return 'exact'
  if (value === 'wider') return 'wider'
  throw new CliError(`--remember takes exact or wider, not ${value}`)
}

async function decide(given: string, decision: 'approve' | 'deny', options: AnswerOptions): Promise<void> {
  if (!['auto', 'update', 'signal'].includes(options.via)) {
    throw new CliError(`--via must be auto, update or signal, not ${options.via}`)
  }
  const { resolveId, userSettings, withAudit, withTemporal } = await import('../connect.js')
  const { AnswerError, answerApproval, draftAnswer, updateRejection } = await import('../../embed/index.js')
  const { fingerprintOf } = await import('../../identity/index.js')
  const { counted } = await import('../../present/index.js')
  const { approvalId, approval } = await withAudit(async (audit) => {
    const approvalId = await resolveId(audit, 'approval', given)
    return { approvalId, approval: await audit.approval(approvalId) }
  })
  if (!approval || approval.decision !== undefined) {
    throw new CliError(
      approval
        ? `approval ${approvalId} was already ${approval.decision} by ${approval.decidedBy}`
        : `no approval ${approvalId}; see \`tether approvals\``,
    )
  }
  const signed = approval.identity === 'signed'
  const named = options.as ?? userSettings().approver
  const key = signed ? await signingKey(options, named) : undefined
  const approver = named ?? key?.name
  if (!approver) throw new CliError('say who is answering with --as NAME (or set approver in your profile)')
  const remember = decision === 'approve' ? rememberChoice(options.remember) : undefined
  let input: ReturnType<typeof draftAnswer>
  try {
    input = draftAnswer(
      approval,
      { decision, approver, reason: options.reason, remember, raiseTo: options.raiseTo },
      key,
    )
  } catch (error) {
    if (error instanceof AnswerError) throw new CliError(error.message)
    throw error
  }
  if (!options.json && key) {
    print(
      colour.dim(
        `signing as ${approver} with ${fingerprintOf(key.publicKey)}: ${decision} ${approval.act} ${visible(approval.target)}`,
      ),
    )
  }
  const outcome = await withTemporal(async (client) => {
    try {
      return await answerApproval(client, approval.runId, input, { via: options.via })
    } catch (error) {
      const rejection = updateRejection(error)
      if (rejection)
        throw new CliError(`the run refused the answer (${rejection.type}): ${rejection.message}`)
      throw error
    }
  })
  if (options.json) return printJson({ approvalId, runId: approval.runId, signed, ...outcome })
  if (outcome.channel === 'signal') {
    print(
      `sent as a signal to ${approval.runId}: the run applies it when a worker is running (a bad answer is recorded, not applied)`,
    )
    return
  }
  const result = outcome.result
  if (result?.decision === 'pending') {
    print(
      `${colour.green('approved')} by ${approver} (${result.approvals} of ${result.required}); ${approval.act} ${visible(approval.target)} waits for ${counted(result.required - result.approvals, 'more approver')}`,
    )
    return
  }
  const verb =
    result?.decision === 'approved' ? colour.green('approved') : colour.yellow(result?.decision ?? decision)
  print(`${verb} ${approval.act} ${visible(approval.target)} in ${approval.runId}`)
  if (result?.remember)
    print(`remembers \`${result.remember}\` for the rest of the run (once the action is judged again)`)
  if (result?.decision === 'approved' && options.raiseTo)
    print(`the run's cost cap is now ${options.raiseTo}`)
}
