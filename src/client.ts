/**
 * Starting runs and answering approvals from a Temporal client: what the CLI, the demo and a user's own
 * tooling call. Bad input is refused here, before anything reaches Temporal.
 */
import { randomBytes } from 'node:crypto'
import { type Client, type WorkflowHandle, WorkflowUpdateFailedError } from '@temporalio/client'
import { ContractError, parseContract, type TaskContractInput } from './contract.js'
import type { Policy } from './policy/index.js'
import {
  agentRun,
  type DecideResult,
  type DecisionInput,
  decideSignal,
  decideUpdate,
} from './workflows/index.js'

export interface StartRunOptions {
  contract: TaskContractInput
  policy: Policy
  taskQueue: string
  /** Default: `run-<utc date and time>-<random>`. */
  runId?: string
}

/** Starts `agentRun`; a contract whose gate the policy would not allow is refused before it starts. */
export async function startAgentRun(
  client: Client,
  options: StartRunOptions,
): Promise<WorkflowHandle<typeof agentRun>> {
  const contract = parseContract(options.contract)
  if (contract.verification) {
    const verdict = options.policy.checkExec(contract.verification.command)
    if (verdict.effect !== 'allow') {
      throw new ContractError(
        `the verification command \`${contract.verification.command.join(' ')}\` is not allowed by the policy ` +
          `(${verdict.effect}: ${verdict.reason}); the gate runs unattended, so add an allow rule for it`,
      )
    }
  }
  return client.workflow.start(agentRun, {
    taskQueue: options.taskQueue,
    workflowId: options.runId ?? newRunId(),
    args: [{ contract, policy: options.policy.toSpec() }],
  })
}

export function newRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-')
  return `run-${stamp}-${randomBytes(3).toString('hex')}`
}

export interface AnswerResult {
  channel: 'update' | 'signal'
  result?: DecideResult
}

/**
 * Answers an approval of run `runId`: as an Update (validated by the run, the answer is final when this
 * returns), or — when no worker takes the Update within `updateTimeoutMs` — as a Signal, which the run
 * applies (or records as rejected) once a worker is back.
 */
export async function answerApproval(
  client: Client,
  runId: string,
  decision: DecisionInput,
  options: { via?: 'auto' | 'update' | 'signal'; updateTimeoutMs?: number } = {},
): Promise<AnswerResult> {
  const handle = client.workflow.getHandle(runId)
  const via = options.via ?? 'auto'
  if (via === 'signal') {
    await handle.signal(decideSignal, decision)
    return { channel: 'signal' }
  }
  const update = handle.executeUpdate(decideUpdate, { args: [decision] })
  if (via === 'update') return { channel: 'update', result: await update }
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), options.updateTimeoutMs ?? 15_000)
  })
  try {
    const first = await Promise.race([update, timedOut])
    if (first !== 'timeout') return { channel: 'update', result: first }
  } finally {
    clearTimeout(timer)
  }
  update.catch(() => {})
  await handle.signal(decideSignal, decision)
  return { channel: 'signal' }
}

/** The run's own words for a refused Update (unknown id, already decided, not an approver, malformed). */
export function updateRejection(error: unknown): string | undefined {
  if (!(error instanceof WorkflowUpdateFailedError)) return undefined
  const cause = error.cause as Error | undefined
  return cause?.message ?? error.message
}
