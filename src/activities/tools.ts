/**
 * The tool activities: `exec`, the file tools and the verification gate. Each writes its full (bounded)
 * observation straight into the transcript at the position the workflow reserved, and its row into the
 * audit, then returns one summary line — command output never travels through Temporal history.
 */

import { createHash } from 'node:crypto'
import { Context } from '@temporalio/activity'
import { ApplicationFailure } from '@temporalio/common'
import type { AuditStore, AuditWrites, ExecResultRecord } from '../audit/index.js'
import { ExecInputError, type ExecResult, type SandboxReport } from '../exec/index.js'
import { judgeCall } from '../judge/index.js'
import { clip, formatArgv, formatBytes } from '../present/index.js'
import type { ActionVerdict, ApprovedCall, TetherActivities } from '../run/index.js'
import {
  ATTR,
  approvedDecision,
  auditRow,
  FAILURE,
  gateFailureMessage,
  type InlineMessage,
  replacementVerdict,
  workspaceOf,
} from '../run/index.js'
import { type ValidatedCall, validateToolCall } from '../tools/index.js'
import {
  adviceFor,
  editFile,
  listDir,
  readFile,
  searchFiles,
  type ToolOptions,
  workspaceView,
  writeFile,
} from '../workspace/index.js'
import { CommandAttempts, WORKER, workerStopping } from './attempts.js'
import { runCommandWithHeartbeats } from './exec.js'
import { heartbeating } from './heartbeat.js'
import { judgeCalls } from './policy.js'
import { recordDecision } from './projections.js'
import type { RunConfigs } from './run-config.js'
import { type CommandSandbox, commandOptions, HIDDEN_REASON, resultRecord } from './sandbox.js'
import type { StepSnapshots } from './snapshots.js'
import { type ActivityTelemetry, annotate, annotateContent, type RunMetrics } from './telemetry.js'
import { appendInOrder } from './transcript.js'

type ExecInput = Parameters<TetherActivities['tetherExec']>[0]

export function toolActivities(deps: {
  audit: AuditStore
  runs: RunConfigs
  sandbox: CommandSandbox
  snapshots: StepSnapshots
  metrics?: RunMetrics
  telemetry?: ActivityTelemetry | undefined
}): Pick<TetherActivities, 'tetherExec' | 'tetherFileTool' | 'tetherVerify'> {
  const { audit, runs, sandbox, snapshots } = deps
  /** What the span of a command's activity says of it, and what the metrics count. */
  const reportCommand = (argv: readonly string[], result: ExecResult) => {
    if (result.sandbox?.limitHit) deps.metrics?.limitHit(result.sandbox.limitHit)
    annotateContent(deps.telemetry, () => ({
      [ATTR.argvExcerpt]: formatArgv(argv),
      [ATTR.outputExcerpt]: `${result.stdout.text}${result.stderr.text ? `\n${result.stderr.text}` : ''}`,
    }))
  }
  const attempts = new CommandAttempts(audit)
  /** Writes the observations the workflow made since the last write, then this call's own. */
  const writeObservation = (
    input: { runId: string; seq: number; callId: string; pending: InlineMessage[] },
    name: string,
    output: string,
    writes: Pick<AuditWrites, 'appendMessages'> = audit,
  ) =>
    appendInOrder(writes, input.runId, [
      ...input.pending,
      { seq: input.seq, message: { role: 'tool', results: [{ callId: input.callId, name, output }] } },
    ])

  async function fileTool(input: Parameters<TetherActivities['tetherFileTool']>[0]) {
    const { runId, name } = input
    const changes = name === 'write_file' || name === 'edit_file'
    const recorded = await recordedObservation(audit, input)
    if (recorded) return { ...recorded, ...(changes ? await snapshots.recorded(input, 'tool') : {}) }
    const { path: workspace, note } = await snapshots.before(input, changes ? 'change' : 'read')
    const call = await callFromTranscript(audit, runId, input.replySeq, input.call, name)
    // Judged again at execution: a symlink swapped since the policy check must not slip through.
    const policy = await runs.policy(runId, input.policy, input.remembered, input.policyDigest)
    const verdict = judgeCall(policy, workspaceView(workspace), call, [])
    if (input.approved) {
      // Its approval's decision, as for an approved command (judgedAfterApproval); a deny stops it here.
      deps.metrics?.verdict(verdict.act, verdict.effect)
      await recordDecision(deps, approvedDecision(runId, input.approved, verdict))
      if (verdict.effect === 'deny')
        return { ok: false, summary: `${name} refused after its approval`, refused: verdict }
    }
    let outcome: { ok: boolean; output: string; summary: string }
    if (verdict.effect === 'deny') {
      outcome = {
        ok: false,
        output: `[${verdict.act} refused] ${verdict.target}: ${verdict.reason}`,
        summary: `${name} refused`,
      }
    } else {
      const act = name === 'write_file' || name === 'edit_file' ? 'write' : 'read'
      const hidden = sandbox.hiddenIn(policy, workspace)
      outcome = await runFileTool(call, workspace, {
        // The tool re-resolves the path when it opens it; a deny on either form still stops it there.
        authorize: ({ normalised, resolved }) => {
          for (const target of new Set([normalised, resolved])) {
            if (hidden.covers(target)) return `[${act} refused] ${target}: ${HIDDEN_REASON}`
            const check = policy.check(act, target)
            if (check.effect === 'deny') return `[${act} refused] ${target}: ${check.reason}`
          }
          return true
        },
        canRead: (path) => !hidden.covers(path) && policy.check('read', path).effect !== 'deny',
        hidden: hidden.covers,
      })
    }
    annotateContent(deps.telemetry, () => ({ [ATTR.fileExcerpt]: outcome.output }))
    const observation = noted(note, outcome.output)
    // A change's observation and the workspace's snapshot after it: one commit.
    const tree = changes
      ? await snapshots.after(input, 'tool', async (snapshot) => {
          await audit.together('finishFileTool', (writes) =>
            Promise.all([writeObservation(input, name, observation, writes), snapshot(writes)]),
          )
        })
      : await writeObservation(input, name, observation).then(() => ({}))
    return { ok: outcome.ok, summary: clip(outcome.summary, 300), ...tree }
  }

  /**
   * An approved command judged again under the policy and what the run remembered (an approval never crosses
   * a deny), and its decision recorded: here, on the command's way to its start, rather than by activities of
   * their own between the answer and the command. Each attempt judges again (a retry after a crash runs the
   * command again only if it may still run); the decision is recorded once. A first attempt that may run is
   * begun in the decision's commit (one commit fewer on the way to the command).
   */
  async function judgedAfterApproval(input: ExecInput, approved: ApprovedCall): Promise<ActionVerdict> {
    const { runId, argv, policyDigest, tree } = input
    const { contract } = await runs.get(runId)
    const request = {
      ...(policyDigest !== undefined ? { policyDigest } : {}),
      remembered: input.remembered ?? [],
      workspace: input.workspace,
      noRetry: contract.noRetry,
      ...(tree !== undefined ? { tree } : {}),
    }
    const call = { id: input.callId, name: 'exec' as const, args: { argv } }
    const { step, call: index } = input
    const at = { at: { step, call: index } }
    const [judged] = (await judgeCalls(deps, runId, request, [call], at)) as [ActionVerdict]
    // A note means the approvers edited the command: they answered for exactly this one (replacementVerdict).
    const verdict = input.note !== undefined ? replacementVerdict(judged, approved.resolution) : judged
    const attempt = Context.current().info.attempt
    const begin =
      verdict.effect !== 'deny' && attempt === 1
        ? { key: { runId, step, call: index, attempt }, worker: WORKER }
        : undefined
    await recordDecision(deps, approvedDecision(runId, approved, verdict), begin)
    return verdict
  }

  return {
    async tetherExec(input) {
      const { runId, step, call, argv } = input
      annotate({ [ATTR.runId]: runId, [ATTR.auditRows]: [auditRow('exec_results', step, call)] })
      const context = Context.current()
      const key = { runId, step, call, attempt: context.info.attempt }
      const records = await audit.commandRecords(key, input.seq)
      const recorded = observed(records.observation)
      if (recorded) return { ...recorded, ...(await snapshots.recorded(input, 'tool')) }
      let { noRetry } = input
      if (input.approved) {
        const verdict = await judgedAfterApproval(input, input.approved)
        if (verdict.effect === 'deny') {
          const summary = `exec ${clip(argv.join(' '), 120)} → refused after its approval`
          return { ok: false, summary, status: 'refused', refused: verdict }
        }
        noRetry = verdict.noRetry === true
      }
      // Never two attempts of one command at once: an earlier one still running is stopped first. An approved
      // first attempt was begun in its decision's commit (judgedAfterApproval), after `records` were read.
      const attempt = await attempts.begin(key, context, input.approved !== undefined || records.open)
      let outcome = 'failed'
      /** Whether the attempt's end was committed with the command's result. */
      let ended = false
      try {
        // An earlier attempt may have finished (and recorded its result) while this one waited for it.
        const finished = context.info.attempt > 1 ? await recordedObservation(audit, input) : undefined
        if (finished) {
          outcome = 'recorded by an earlier attempt'
          return { ...finished, ...(await snapshots.recorded(input, 'tool')) }
        }
        // A retry after a crash re-runs the command, unless re-running it could do harm twice.
        if (context.info.attempt > 1 && noRetry) {
          const output =
            `[exec interrupted] \`${argv.join(' ')}\` was cut off by a worker failure and was not run again ` +
            '(it is on the no-retry list); its outcome is unknown. Check its effect before you repeat it.'
          // In "what ran" too, from when it started: a cut-off push or deploy is what an auditor most needs.
          await audit.recordExecResult(await cutOffRecord(audit, key, argv, input.workspace))
          await writeObservation(input, 'exec', noted(input.note, output))
          outcome = 'not re-run'
          return {
            ok: false,
            summary: `exec ${clip(argv.join(' '), 120)} → interrupted, not re-run`,
            status: 'interrupted',
          }
        }
        const { path: workspace, note: workspaceNote } = await snapshots.before(input, 'change')
        const note = [workspaceNote, input.note].filter(Boolean).join('\n') || undefined
        const [run, policy] = await Promise.all([
          runs.get(runId),
          runs.policy(runId, undefined, [], input.policyDigest),
        ])
        const setup = sandbox.setup(policy, { workspace, env: run.contract.env })
        const startedAt = attempt.started()
        let result: ExecResult
        try {
          result = await runCommandWithHeartbeats({
            argv,
            cwd: workspace,
            workspace,
            timeoutMs: input.timeoutMs,
            outputCeiling: input.outputCeiling,
            signal: attempt.superseded,
            ...commandOptions(setup),
          })
        } catch (error) {
          if (!(error instanceof ExecInputError)) throw error
          // Nothing ran, and the same input would be refused again: the model hears why, the run goes on.
          outcome = 'refused'
          await writeObservation(input, 'exec', `[exec refused] nothing ran: ${error.message}`)
          return {
            ok: false,
            summary: `exec ${clip(argv.join(' '), 120)} → refused: ${clip(error.message, 150)}`,
            status: 'refused',
          }
        }
        // A stopping worker hands the command over (see attempts.ts): nothing is recorded of it here.
        if (workerStopping(context)) throw context.cancellationSignal.reason
        // A later attempt took over: it runs the command; this one records nothing.
        if (attempt.superseded.aborted && !context.cancellationSignal.aborted) {
          outcome = 'superseded'
          throw ApplicationFailure.nonRetryable(
            'a later attempt of this command took over',
            FAILURE.superseded,
          )
        }
        outcome = result.status
        reportCommand(argv, result)
        const record = {
          runId,
          step,
          call,
          argv,
          cwd: input.workspace,
          ...resultRecord(setup, result, startedAt),
          attempt: context.info.attempt,
        }
        // The partial result is recorded; a cancelled activity still reports as cancelled.
        if (result.status === 'cancelled' && context.cancellationSignal.aborted) {
          await audit.recordExecResult(record)
          throw context.cancellationSignal.reason
        }
        // What ran, what the model is told, the attempt's end and the workspace after it: one commit, its
        // rows sent together (see AuditStore.together).
        const tree = await snapshots.after(input, 'tool', async (snapshot) => {
          await audit.together('finishCommand', (writes) =>
            Promise.all([
              writes.recordExecResult(record),
              writeObservation(input, 'exec', noted(note, execObservation(argv, result)), writes),
              attempt.end(outcome, writes),
              snapshot(writes),
            ]),
          )
          ended = true
        })
        return {
          ok: result.status === 'exited' && result.exitCode === 0,
          summary: `exec ${clip(argv.join(' '), 120)} → ${statusText(result)}`,
          status: result.status,
          ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
          ...tree,
        }
      } catch (error) {
        const failed = await attempts.failure(
          key,
          error,
          outcome,
          context,
          `\`${clip(argv.join(' '), 120)}\``,
        )
        outcome = failed.outcome
        throw failed.error
      } finally {
        if (!ended) await attempt.end(outcome)
      }
    },

    // Short or long (a search over a big tree), a file tool heartbeats, so a dead worker is noticed within
    // the workflow's heartbeat timeout.
    tetherFileTool: (input) => heartbeating(() => fileTool(input), { tool: input.name }),

    async tetherVerify({
      runId,
      step,
      seq,
      pending,
      contract: carried,
      policy: spec,
      policyDigest,
      timeoutMs,
      tree,
    }) {
      annotate({
        [ATTR.runId]: runId,
        [ATTR.auditRows]: [auditRow('gate_events', step), auditRow('exec_results', step, -1)],
      })
      const contract = await runs.contract(runId, carried)
      const policy = await runs.policy(runId, spec, [], policyDigest)
      const verification = contract.verification
      if (!verification)
        throw ApplicationFailure.nonRetryable('this run has no verification command', FAILURE.noGate)
      const { command, expectExit } = verification
      const at = () => new Date()
      // The gate runs only when the policy *allows* it: nobody is there to answer an ask.
      const verdict = policy.checkExec(command)
      if (verdict.effect !== 'allow') {
        const detail = `verification command \`${command.join(' ')}\` is not allowed by the policy (${verdict.effect}: ${verdict.reason})`
        await audit.recordGateEvent({ runId, step, kind: 'gate_phase_failed', detail, at: at() })
        return { passed: false, summary: detail, status: 'refused' }
      }
      const ref = { runId, step, call: -1, workspace: workspaceOf(contract), tree, policyDigest }
      const { path: workspace } = await snapshots.before(ref, 'change')
      const setup = sandbox.setup(policy, { workspace, env: contract.env })
      const context = Context.current()
      // The gate is call -1 of its step: fenced and recorded in "what ran" like any command.
      const key = { runId, step, call: -1, attempt: context.info.attempt }
      const attempt = await attempts.begin(key, context)
      const startedAt = attempt.started()
      let result: ExecResult
      let outcome = 'failed'
      try {
        result = await runCommandWithHeartbeats({
          argv: command,
          cwd: workspace,
          workspace,
          timeoutMs,
          outputCeiling: contract.outputCeiling,
          signal: attempt.superseded,
          ...commandOptions(setup),
        })
        outcome = result.status
        // A stopping worker hands the gate over, like any command.
        if (workerStopping(context)) throw context.cancellationSignal.reason
      } catch (error) {
        const failed = await attempts.failure(key, error, outcome, context, 'the verification command')
        outcome = failed.outcome
        throw failed.error
      } finally {
        await attempt.end(outcome)
      }
      if (attempt.superseded.aborted && !context.cancellationSignal.aborted) {
        throw ApplicationFailure.nonRetryable('a later attempt of the gate took over', FAILURE.superseded)
      }
      await audit.recordExecResult({
        ...key,
        kind: 'gate',
        argv: command,
        cwd: workspaceOf(contract),
        ...resultRecord(setup, result, startedAt),
      })
      if (result.status === 'cancelled' && context.cancellationSignal.aborted) {
        throw context.cancellationSignal.reason
      }
      const passed = result.status === 'exited' && result.exitCode === expectExit
      reportCommand(command, result)
      deps.metrics?.gate(passed)
      const summary = `\`${command.join(' ')}\` → ${statusText(result)}${passed ? '' : ` (expected exit ${expectExit})`}`
      await audit.recordGateEvent({
        runId,
        step,
        kind: 'gate_output',
        detail: execObservation(command, result),
        at: at(),
      })
      await audit.recordGateEvent({
        runId,
        step,
        kind: passed ? 'gate_passed' : 'gate_phase_failed',
        detail: summary,
        at: at(),
      })
      if (!passed && seq !== null) {
        await appendInOrder(audit, runId, [
          ...pending,
          gateFailureMessage(seq, `${summary}\n${execObservation(command, result)}`),
        ])
      }
      const verified = await snapshots.after(ref, 'gate')
      if (passed) await snapshots.branch(ref, verified.tree, `verified: ${summary}`)
      return {
        passed,
        summary,
        status: result.status,
        ...(result.exitCode !== undefined ? { exitCode: result.exitCode } : {}),
        ...verified,
      }
    },
  }
}

/** Nothing captured: what a cut-off command's streams are recorded as. */
const NOT_CAPTURED = {
  text: '',
  elided: 0,
  bytes: 0,
  lines: 0,
  sha256: createHash('sha256').update('').digest('hex'),
}

/**
 * The "what ran" row of a command a lost or stopping worker cut off and that is not run again: `unknown`,
 * from the start of the attempt that ran it to when that attempt was found cut off.
 */
async function cutOffRecord(
  audit: AuditStore,
  key: { runId: string; step: number; call: number; attempt: number },
  argv: string[],
  cwd: string,
): Promise<ExecResultRecord> {
  const earlier = (await audit.execAttempts(key.runId)).filter(
    (a) => a.step === key.step && a.call === key.call && a.attempt < key.attempt,
  )
  const ran = earlier.find((a) => a.outcome === 'lost' || a.outcome === 'handed over') ?? earlier[0]
  const finishedAt = ran?.endedAt ?? new Date()
  const startedAt = ran?.startedAt ?? finishedAt
  return {
    ...key,
    argv,
    cwd,
    status: 'unknown',
    durationMs: Math.max(0, finishedAt.getTime() - startedAt.getTime()),
    stdout: NOT_CAPTURED,
    stderr: NOT_CAPTURED,
    startedAt,
    finishedAt,
  }
}

/**
 * An earlier attempt that finished the call and wrote its observation, then died before reporting: its
 * result stands, and the command is not run a second time.
 */
export async function recordedObservation(
  audit: AuditStore,
  input: { runId: string; seq: number },
): Promise<{ ok: boolean; summary: string } | undefined> {
  const [stored] = await audit.loadMessages(input.runId, { fromSeq: input.seq, limit: 1 })
  return observed(stored?.content)
}

/** The result an observation message records, as the activity reports it. */
function observed(message: unknown): { ok: boolean; summary: string } | undefined {
  const output = (message as { results?: Array<{ output: string }> } | undefined)?.results?.[0]?.output
  if (output === undefined) return undefined
  return {
    ok: !/^\[(\w+ )?(refused|interrupted|unavailable)/.test(output),
    summary: `${clip(output.split('\n')[0] ?? '', 200)} (recorded by an earlier attempt)`,
  }
}

async function callFromTranscript(
  audit: AuditStore,
  runId: string,
  replySeq: number,
  index: number,
  name: string,
): Promise<ValidatedCall> {
  const [stored] = await audit.loadMessages(runId, { fromSeq: replySeq, limit: 1 })
  const reply = stored?.content as
    | { toolCalls?: Array<{ id: string; name: string; args: unknown }> }
    | undefined
  const raw = reply?.toolCalls?.[index]
  if (!raw || raw.name !== name) {
    throw ApplicationFailure.nonRetryable(
      `the transcript of run ${runId} has no ${name} call ${index} at message ${replySeq}`,
      'TranscriptMismatch',
    )
  }
  const validated = validateToolCall(raw)
  if (!validated.ok) throw ApplicationFailure.nonRetryable(validated.error, 'InvalidToolCall')
  return validated.call
}

function runFileTool(
  call: ValidatedCall,
  root: string,
  checks: {
    authorize: NonNullable<ToolOptions['authorize']>
    canRead: (path: string) => boolean
    hidden: NonNullable<ToolOptions['hidden']>
  },
) {
  const options = { authorize: checks.authorize, hidden: checks.hidden }
  switch (call.name) {
    case 'read_file':
      return readFile(root, call.args, options)
    case 'write_file':
      return writeFile(root, call.args, options)
    case 'edit_file':
      return editFile(root, call.args, options)
    case 'list_dir':
      return listDir(root, call.args, options)
    case 'search':
      return searchFiles(root, call.args, { ...options, canRead: checks.canRead })
    default:
      throw ApplicationFailure.nonRetryable(`${call.name} is not a file tool`, 'InvalidToolCall')
  }
}

function statusText(result: ExecResult): string {
  switch (result.status) {
    case 'exited':
      return `exit ${result.exitCode}`
    case 'signalled':
      return `killed by ${result.signal}`
    case 'timed-out':
      return `timed out after ${Math.round(result.durationMs / 1000)} s`
    case 'cancelled':
      return 'cancelled'
    case 'unavailable':
      return result.sandbox?.limitHit === 'disk' ? 'not run: the disk is full' : 'program not found'
  }
}

/** An observation with the workflow's note (an approver's edit) before it. */
function noted(note: string | undefined, output: string): string {
  return note ? `${note}\n${output}` : output
}

/** What the model reads about a command: status, the head and tail of each stream, and advice. */
export function execObservation(argv: readonly string[], result: ExecResult): string {
  const joined = argv.join(' ')
  if (result.status === 'unavailable') {
    // A sandbox bound already reached (a full disk) keeps any command from starting: the reason says which.
    if (result.sandbox?.limitHit) return `[exec unavailable] nothing ran: ${result.reason}.`
    return `[exec unavailable] no \`${argv[0]}\` on PATH; use another program or install it as the project does.`
  }
  const elided = result.stdout.elided + result.stderr.elided
  const lines = [
    `[exec \`${joined}\` ${statusText(result)}${elided > 0 ? `; ${elided} characters elided from the middle` : ''}]`,
  ]
  const stdout = result.stdout.text.trimEnd()
  const stderr = result.stderr.text.trimEnd()
  if (stdout) lines.push(stdout)
  if (stderr) lines.push(`[stderr]\n${stderr}`)
  if (!stdout && !stderr) lines.push('(no output)')
  lines.push(...sandboxNotes(result))
  const failed = !(result.status === 'exited' && result.exitCode === 0)
  const advice = failed ? adviceFor(`${stdout}\n${stderr}`) : undefined
  if (advice) lines.push(`[advice] ${advice}`)
  return lines.join('\n')
}

const LIMIT_TEXT: Record<NonNullable<SandboxReport['limitHit']>, (report: SandboxReport) => string> = {
  processes: ({ limits }) => `its process limit (${limits.processes} processes and threads)`,
  memory: ({ limits }) =>
    `its memory limit (${formatBytes(limits.memoryBytes)}, which /tmp, /run, /dev/shm and its home count against: they are held in memory)`,
  'file-size': ({ limits }) => `its file-size limit (${formatBytes(limits.fileSizeBytes)})`,
  'cpu-time': ({ limits }) => `its CPU-time limit (${limits.cpuSeconds} s)`,
  disk: ({ disk }) => `its disk bound: ${disk}`,
}

/** What the sandbox did to a command, in words the model can act on. */
function sandboxNotes(result: ExecResult): string[] {
  const report = result.sandbox
  if (!report) return []
  const notes: string[] = []
  if (report.limitHit) notes.push(`[sandbox] the command ran into ${LIMIT_TEXT[report.limitHit](report)}.`)
  const refused = (report.network ?? []).filter((decision) => !decision.allowed)
  if (refused.length > 0) {
    const shown = refused.slice(0, 5).map((d) => `${d.host}:${d.port} (${d.reason})`)
    notes.push(
      `[sandbox] network refused: ${shown.join('; ')}${refused.length > 5 ? `; and ${refused.length - 5} more` : ''}`,
    )
  }
  return notes
}
