/** `tether run`, `tether ls`, `tether show`, `tether cancel`. What each runs is loaded when it runs. */
import type { Client } from '@temporalio/client'
import type { Command } from 'commander'
import type { Policy } from '../../policy/index.js'
import type { TaskContractInput } from '../../run/index.js'
import {
  colour,
  print,
  printJson,
  printJsonLine,
  printTable,
  runArgument,
  visible,
  wholeNumber,
} from '../context.js'
import { CliError, EXIT } from '../errors.js'

interface RunOptions {
  goal: string
  workspace?: string
  git?: string
  ref?: string
  verify?: string
  policy?: string
  model?: string
  maxSteps?: string
  maxTokens?: string
  maxTime?: string
  maxCost?: string
  id?: string
  follow?: boolean
  json?: boolean
}

export function registerRuns(program: Command): void {
  program
    .command('run')
    .description('Start an agent run on a workspace; with --follow, watch it until it ends.')
    .requiredOption('--goal <text>', 'what the run should achieve')
    .option('--workspace <dir>', 'the project folder the agent works in')
    .option(
      '--git <url>',
      'instead of --workspace: a git repository the worker clones, under the run policy, into a folder of its own',
    )
    .option('--ref <ref>', 'with --git: the branch, tag or commit to check out')
    .option(
      '--verify <command>',
      'the command whose success ends the run, e.g. "npm test" (quotes group words); default: the test ' +
        'command detected from the workspace (package.json, Cargo.toml, go.mod, …); "none" for no gate',
    )
    .option(
      '--policy <file>',
      "a policy file (JSON or YAML); default: TETHER_POLICY, else your profile's policy, else the tiered preset",
    )
    .option('--model <choice>', 'openrouter:<model>, anthropic:<model>, openai:<model>, scripted:<file>, …')
    .option('--max-steps <n>', 'step budget (default 50)')
    .option('--max-tokens <n>', 'token budget (default 2000000)')
    .option('--max-time <duration>', 'wall-time budget, e.g. 30m or 4h (default 4h)')
    .option(
      '--max-cost <amount>',
      'cost cap, e.g. "25 USD": at it the run waits for a budget approver to raise it or end the run (default: none)',
    )
    .option('--id <run-id>', 'the run id (default: run-<time>-<random>)')
    .option(
      '--follow',
      'show steps, commands and approvals as they happen, then the outcome (exit 3 unless it succeeds)',
    )
    .option('--json', 'print the run id as JSON; with --follow, one JSON object per event, a line each')
    .action(async (options: RunOptions) => {
      const { withAudit, withTemporal } = await import('../connect.js')
      const { InvalidRunIdError, newRunId, RunIdTakenError, RunRejectedError, startAgentRun, waitForStart } =
        await import('../../embed/index.js')
      const { PolicyError } = await import('../../policy/index.js')
      const { ContractError, FAILURE } = await import('../../run/index.js')
      const { loadPolicy } = await import('./policy.js')
      // A policy file that does not load is said first, before anything is detected from the workspace.
      const given = await loadPolicy(options.policy)
      const contract = await buildContract(options)
      const policy = given ?? (await defaultRunPolicy(contract))
      await withTemporal(async (client, target) => {
        let handle: Awaited<ReturnType<typeof startAgentRun>>
        try {
          // The policy goes into the audit the worker reads, and the run carries its digest only.
          handle = await withAudit((audit) =>
            startAgentRun(client, {
              contract,
              policy,
              taskQueue: target.taskQueue,
              runId: options.id ?? newRunId(),
              // Someone watching it go waits on each step: it goes before runs nobody watches.
              scheduling: { interactive: options.follow === true },
              policyStore: audit,
            }),
          )
        } catch (error) {
          if (
            error instanceof ContractError ||
            error instanceof PolicyError ||
            error instanceof InvalidRunIdError ||
            error instanceof RunIdTakenError
          )
            throw new CliError(error.message)
          throw error
        }
        const runId = handle.workflowId
        if (options.json && options.follow) {
          printJsonLine({ event: 'started', runId, taskQueue: target.taskQueue })
        } else if (!options.json) print(`run ${colour.bold(runId)} started on task queue ${target.taskQueue}`)
        // The worker checks the contract against its world before the first step: a run that cannot work
        // is refused here, in one line, before anyone is asked anything.
        let started: Awaited<ReturnType<typeof waitForStart>>
        try {
          started = await waitForStart(handle)
        } catch (error) {
          if (error instanceof RunRejectedError) {
            throw new CliError(
              `run ${runId} ${error.type === FAILURE.contractRejected ? 'was rejected' : 'failed'}: ${error.message}`,
            )
          }
          throw error
        }
        if (started === 'no-worker') {
          process.stderr.write(
            `note: no worker has picked up ${runId} on task queue ${target.taskQueue} yet; it starts when one ` +
              'does (`tether dev`, or a worker on that queue)\n',
          )
        }
        if (!options.follow) {
          if (options.json) printJson({ runId })
          else print(`watch it with \`tether show ${runId} --follow\``)
          return
        }
        await follow(client, runId, options.json === true)
      })
    })

  program
    .command('ls')
    .description('List runs, newest first.')
    .option('--status <status>', 'running or finished')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON')
    .action(async (options: { status?: string; limit: string; json?: boolean }) => {
      if (options.status && options.status !== 'running' && options.status !== 'finished') {
        throw new CliError(`--status must be running or finished, not ${options.status}`)
      }
      const { withAudit } = await import('../connect.js')
      const page = await withAudit((audit) =>
        audit.listRuns({
          limit: wholeNumber(options.limit, '--limit'),
          ...(options.status ? { status: options.status as 'running' | 'finished' } : {}),
        }),
      )
      if (options.json) return printJson(page.items)
      if (page.items.length === 0) return print('no runs yet; start one with `tether run`')
      const { formatMoney } = await import('../../present/index.js')
      printTable(
        ['RUN', 'STATUS', 'OUTCOME', 'STARTED (UTC)', 'SPENT', 'GOAL', 'REASON'],
        page.items.map((run) => [
          run.runId,
          run.status,
          run.outcome ?? '',
          run.startedAt.toISOString().replace('T', ' ').slice(0, 19),
          run.cost === undefined ? '' : formatMoney(run.cost),
          oneLine(run.goal, 40),
          oneLine(run.reason ?? '', 100),
        ]),
      )
    })

  program
    .command('show')
    .description(
      "A run's summary and timeline: steps, decisions, commands, approvals and gate results; and, for a run on a folder of this machine, git files it wrote there that would make git run a program.",
    )
    .argument('<run>', 'the run id, or the start of one no other run id starts with', runArgument)
    .option('--follow', 'keep showing new entries until the run ends (exit 3 unless it succeeds)')
    .option('--json', 'print JSON; with --follow, one JSON object per event, a line each')
    .action(async (given: string, options: { follow?: boolean; json?: boolean }) => {
      const { resolveId, withAudit, withTemporal } = await import('../connect.js')
      if (options.follow) {
        const runId = await withAudit((audit) => resolveId(audit, 'run', given))
        await withTemporal((client) => follow(client, runId, options.json === true))
        return
      }
      await withAudit(async (audit) => {
        const runId = await resolveId(audit, 'run', given)
        const summary = await audit.runSummary(runId)
        if (!summary) throw new CliError(`no run ${runId} in the audit; list runs with \`tether ls\``)
        const timeline = await audit.runTimeline(runId)
        const { runLinks } = await import('../../snapshots/catalog.js')
        const links = await runLinks(audit.pool, runId)
        const { heldFolderLine, plantedGitLines, plantedGitOf, printTimeline } = await import(
          '../timeline.js'
        )
        const { files: plantedGit, held } = await plantedGitOf(summary)
        if (options.json) return printJson({ summary, timeline, links, plantedGit })
        const { linkLines } = await import('./snapshots.js')
        printTimeline(summary, timeline)
        for (const line of linkLines(links)) print(line)
        for (const line of plantedGitLines(plantedGit, 'the run wrote', held)) print(line)
        const heldFolder = await heldFolderLine(summary)
        if (heldFolder) print(heldFolder)
      })
    })

  program
    .command('cancel')
    .description(
      'Cancel a run: its running command is killed, pending approvals are resolved as cancelled. A run Temporal no longer has (its history lost) is recorded as cancelled in the audit.',
    )
    .argument('<run>', 'the run id, or the start of one no other run id starts with', runArgument)
    .action(async (given: string) => {
      const { resolveId, withAudit, withTemporal } = await import('../connect.js')
      const { WorkflowNotFoundError } = await import('@temporalio/client')
      // The audit knows every run's id; one it does not know may still be a workflow on the server.
      const runId = await withAudit((audit) => resolveId(audit, 'run', given)).catch((error: unknown) => {
        if (error instanceof CliError && error.message.startsWith('no run ')) return given
        throw error
      })
      await withTemporal(async (client) => {
        const handle = client.workflow.getHandle(runId)
        try {
          const { status } = await handle.describe()
          // Cancelling what already ended would change nothing: say so, and fail like any no-op request.
          if (status.name !== 'RUNNING') {
            throw new CliError(
              `run ${runId} is already closed (${status.name.toLowerCase().replace('_', ' ')}); nothing to cancel`,
            )
          }
          await handle.cancel()
        } catch (error) {
          if (!(error instanceof WorkflowNotFoundError)) throw error
          // The audit still has it running, but this server has no workflow for it (its history was lost
          // with a dev server's, or deleted): nothing in Temporal can end it, so the audit records the end.
          const { lostRunReason } = await import('../../run/index.js')
          const lost = lostRunReason(client.options.namespace)
          await withAudit(async (audit) => {
            const summary = await audit.runSummary(runId)
            if (!summary)
              throw new CliError(
                `no run ${runId}, neither in the audit nor on Temporal (namespace ${client.options.namespace})`,
              )
            if (summary.status !== 'running')
              throw new CliError(`run ${runId} already ended (${summary.outcome}); nothing to cancel`)
            await audit.recordEndedOutside(
              { runId },
              {
                outcome: 'cancelled',
                reason: `cancelled with tether cancel; ${lost}`,
                at: new Date(),
                decidedBy: 'tether',
                why: lost,
              },
            )
          })
          print(`run ${runId}: ${lost}; recorded as cancelled in the audit`)
          return
        }
        print(`cancellation requested for ${runId}`)
      })
    })
}

/** Follows a run to its end; a run that ends without success exits 3. */
async function follow(client: Client, runId: string, json: boolean): Promise<void> {
  const { withAudit } = await import('../connect.js')
  const { followRun } = await import('../follow.js')
  const result = await withAudit((audit) => followRun(client, audit, runId, { json }))
  if (result.outcome !== 'verified' && result.outcome !== 'finished') process.exitCode = EXIT.runFailed
}

async function buildContract(options: RunOptions): Promise<TaskContractInput> {
  if ((options.workspace === undefined) === (options.git === undefined)) {
    throw new CliError('give the project as --workspace DIR or as --git URL (with --ref), one of the two')
  }
  if (options.ref !== undefined && options.git === undefined) throw new CliError('--ref goes with --git')
  const { resolve } = await import('node:path')
  const workspace = options.workspace === undefined ? undefined : resolve(options.workspace)
  if (!workspace && options.verify === undefined) {
    throw new CliError(
      'with --git, name the gate: --verify "npm test" (or --verify none); there is no folder here to detect it from',
    )
  }
  const command = options.verify === undefined ? await detectedTest(workspace as string) : options.verify
  const verification = command && command !== 'none' ? { command: splitCommand(command) } : null
  return {
    goal: options.goal,
    ...(workspace
      ? { workspace }
      : { source: { git: options.git as string, ...(options.ref ? { ref: options.ref } : {}) } }),
    verification,
    ...(options.model ? { model: options.model } : {}),
    budgets: {
      ...(options.maxSteps ? { maxSteps: wholeNumber(options.maxSteps, '--max-steps') } : {}),
      ...(options.maxTokens ? { maxTokens: wholeNumber(options.maxTokens, '--max-tokens') } : {}),
      ...(options.maxTime ? { maxWallTime: options.maxTime } : {}),
      ...(options.maxCost ? { maxCost: options.maxCost } : {}),
    },
  }
}

/** The project's own test command, when its toolchain says what it is (printed, so nobody is surprised). */
async function detectedTest(workspace: string): Promise<string | undefined> {
  const { detectToolchain } = await import('../../workspace/index.js')
  const { formatArgv } = await import('../../present/index.js')
  const test = (await detectToolchain(workspace))?.commands.test
  if (!test) return undefined
  const line = formatArgv(test)
  process.stderr.write(`verification: \`${line}\` (detected from the workspace; --verify none for no gate)\n`)
  return line
}

/**
 * The run's policy when no file is given or configured (TETHER_POLICY, the profile's): the tiered preset
 * plus a `contract` layer allowing exactly the verification command (the person who named it asked for it
 * to run unattended).
 */
async function defaultRunPolicy(contract: TaskContractInput): Promise<Policy> {
  const { Policy } = await import('../../policy/index.js')
  const tiered = Policy.tiered()
  const gate = contract.verification?.command.join(' ')
  // A command with glob characters would allow more than itself: then a policy file must say so.
  if (!gate || /[*?]/.test(gate)) return tiered
  return tiered.layer('contract').allowExec(gate)
}

/** Splits a command line into argv the way a person reads it: spaces separate, quotes group, no expansion. */
export function splitCommand(line: string): string[] {
  const argv: string[] = []
  let current = ''
  let quote: '"' | "'" | undefined
  let started = false
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string
    if (quote) {
      if (ch === quote) quote = undefined
      else if (ch === '\\' && quote === '"' && i + 1 < line.length) current += line[++i]
      else current += ch
    } else if (ch === '"' || ch === "'") {
      quote = ch
      started = true
    } else if (ch === '\\' && i + 1 < line.length) {
      current += line[++i]
      started = true
    } else if (/\s/.test(ch)) {
      if (started) argv.push(current)
      current = ''
      started = false
    } else {
      current += ch
      started = true
    }
  }
  if (quote) throw new CliError(`unbalanced ${quote} quote in the command: ${line}`)
  if (started) argv.push(current)
  if (argv.length === 0) throw new CliError('the verification command is empty')
  return argv
}

/** The first line of `text`, visible and clipped to `limit` characters. */
function oneLine(text: string, limit: number): string {
  const line = visible(text.split('\n')[0] ?? '')
  return line.length <= limit ? line : `${line.slice(0, limit - 1)}…`
}
