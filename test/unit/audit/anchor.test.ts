/**
 * Comparing a run's rows with what its history proves: a recorded history replayed with today's workflow
 * code, and small executions made by hand for the cases a recorded history does not show.
 */
import { readFile } from 'node:fs/promises'
import { beforeAll, describe, expect, it } from 'vitest'
import { policyOfRules } from '../../../bench/big-policy.js'
import {
  compareWithHistory,
  type Finding,
  type ReplayedCall,
  type ReplayedExecution,
  replayRun,
  type StoredRunRows,
} from '../../../src/audit/index.js'

const empty = (): StoredRunRows => ({
  runs: [],
  steps: [],
  policy_events: [],
  exec_results: [],
  approvals: [],
  approval_answers: [],
  policies: [],
})
const brief = (findings: Finding[]) =>
  findings.map((f) => [f.table, f.key, f.problem, ...(f.column ? [f.column] : [])].join(' ')).sort()

/** The executions of a recorded history (test/histories/RUN.json), replayed as the run it was. */
async function replayed(run: string): Promise<ReplayedExecution[]> {
  const history = JSON.parse(await readFile(new URL(`../../histories/${run}.json`, import.meta.url), 'utf8'))
  const runId = history.events[0].workflowExecutionStartedEventAttributes.originalExecutionRunId as string
  return replayRun({ workflowId: run, executions: [{ runId, history }], running: false })
}

describe('a recorded history, replayed', () => {
  const RUN = 'approval-approved'
  let executions: ReplayedExecution[]
  beforeAll(async () => {
    executions = await replayed(RUN)
  }, 120_000)

  it('shows every activity call with its input and result, local ones included', () => {
    const [execution] = executions
    expect(execution?.taskQueue).toMatch(/^agent-/)
    expect(execution?.calls.map((c) => `${c.type}${c.local ? ' (local)' : ''} ${c.state}`)).toEqual([
      'tetherPrepareRun (local) completed',
      // The run's row, then its workspace's first snapshot, in one activity (begin-run).
      'tetherBeginRun completed',
      // The turn judges its calls; an approved command's own activity judges it again and records the
      // decision before it runs it (approval-judged-by-tool).
      'tetherModelTurn completed',
      'tetherApprovalRequested completed',
      'tetherExec completed',
      // The next turn records step 1; the last step, with no turn after it, records itself.
      'tetherModelTurn completed',
      'tetherRecordStep (local) completed',
      'tetherFinishRun completed',
      // After the outcome, the run's signed provenance (patch `provenance`).
      'tetherRecordProvenance completed',
    ])
    const [first, second] = execution?.calls.filter((c) => c.type === 'tetherModelTurn') ?? []
    expect(first?.result).toMatchObject({ verdicts: [{ effect: 'ask', act: 'exec' }] })
    expect(second?.input).toMatchObject({
      previousStep: { step: 1, decision: 'exec touch approved.txt → exit 0' },
    })
  })

  it('reports every row history holds as deleted from an empty database', () => {
    const report = compareWithHistory(RUN, executions, empty())
    const exec = executions[0]?.calls.find((c) => c.type === 'tetherExec') as ReplayedCall
    const approvalId = (exec.input as { approved: { request: { approvalId: string } } }).approved.request
      .approvalId
    // The run's policy is stored by digest once the run is prepared; history holds that digest too.
    const prepared = executions[0]?.calls.find((c) => c.type === 'tetherPrepareRun') as ReplayedCall
    const { policyDigest } = prepared.result as { policyDigest: string }
    expect(policyDigest).toMatch(/^[0-9a-f]{64}$/)
    expect(brief(report.findings)).toEqual(
      [
        `runs ${RUN} deleted`,
        `policies ${policyDigest} deleted`,
        'steps step 1 deleted',
        'steps step 2 deleted',
        'exec_results step 1 call 0 deleted',
        `approvals ${approvalId} deleted`,
        `approval_answers ${approvalId} alice deleted`,
        'policy_events step 1 call 0 decision update deleted',
      ].sort(),
    )
  })

  it('matches a row written from the same call, and names the column of an edited one and an added row', () => {
    const turns = executions[0]?.calls.filter((c) => c.type === 'tetherModelTurn') ?? []
    const { previousStep: input } = (turns[1] as ReplayedCall).input as {
      previousStep: Record<string, unknown>
    }
    const row = {
      run_id: RUN,
      step: 1,
      tool_calls: input.toolCalls,
      decision: input.decision,
      observation: input.observation,
      input_tokens: input.inputTokens,
      output_tokens: input.outputTokens,
      // The model the turn asked (the scripted one has no price, so no cost).
      model: input.model,
      // As to_json writes a timestamptz.
      started_at: new Date(input.startedAt as number).toISOString().replace('Z', '+00:00'),
      finished_at: new Date(input.finishedAt as number).toISOString().replace('Z', '+00:00'),
    }
    const steps = (rows: object[]) =>
      compareWithHistory(RUN, executions, {
        ...empty(),
        steps: rows as StoredRunRows['steps'],
      }).findings.filter((f) => f.table === 'steps')
    expect(brief(steps([row]))).toEqual(['steps step 2 deleted'])
    const edited = steps([
      { ...row, decision: 'nothing ran' },
      { ...row, step: 9 },
    ])
    expect(edited).toContainEqual({
      table: 'steps',
      key: 'step 1',
      problem: 'edited',
      column: 'decision',
      database: 'nothing ran',
      history: 'exec touch approved.txt → exit 0',
      detail: 'decision differs from history',
    })
    expect(brief(edited)).toContain('steps step 9 added')
  })
})

describe('a run started with its policy by reference, replayed', () => {
  const RUN = 'policy-by-reference'
  let executions: ReplayedExecution[]
  beforeAll(async () => {
    executions = await replayed(RUN)
  }, 120_000)

  it("takes the run's own policy from its row only when that spec hashes to the digest history names", () => {
    const start = executions[0]?.calls.find((c) => c.type === 'tetherStartRun') as ReplayedCall
    const { policyRef, policy } = start.input as { policyRef?: string; policy?: unknown }
    const own = policyOfRules(2_000)
    expect(policy).toBeUndefined()
    expect(policyRef).toBe(own.digest)
    const policyFindings = (spec: unknown) =>
      compareWithHistory(RUN, executions, {
        ...empty(),
        runs: [{ run_id: RUN, policy: spec }],
      }).findings.filter((f) => f.table === 'runs' && f.column === 'policy')
    expect(policyFindings(own.toSpec())).toEqual([])
    // One rule loosened in the row: it no longer hashes to the digest, and is reported as edited.
    const loosened = own.toSpec()
    const team = loosened.layers.find((layer) => layer.name === 'team')
    if (team?.rules[1]) team.rules[1] = { ...team.rules[1], effect: 'allow' }
    expect(policyFindings(loosened)).toMatchObject([
      { problem: 'edited', history: { policyRef: own.digest } },
    ])
  })
})

describe('a priced run, replayed', () => {
  const RUN = 'cost-budget-raised'
  let executions: ReplayedExecution[]
  beforeAll(async () => {
    executions = await replayed(RUN)
  }, 120_000)

  it("proves a step's model and cost from the step record the next model turn carries", () => {
    const previous = (executions[0]?.calls ?? [])
      .filter((c) => c.type === 'tetherModelTurn')
      .map((c) => (c.input as { previousStep?: Record<string, unknown> }).previousStep)
      .find((record) => record !== undefined)
    expect(previous).toMatchObject({ model: expect.any(String), cost: expect.any(Number) })
    const record = previous as Record<string, unknown>
    const row = {
      run_id: RUN,
      step: record.step,
      tool_calls: record.toolCalls,
      decision: record.decision,
      observation: record.observation,
      input_tokens: record.inputTokens,
      output_tokens: record.outputTokens,
      model: record.model,
      // Stored in dollars; PostgreSQL returns a numeric as text.
      cost_usd: String((record.cost as number) / 1_000_000),
      started_at: new Date(record.startedAt as number).toISOString(),
      finished_at: new Date(record.finishedAt as number).toISOString(),
    }
    const findings = (stored: object) =>
      compareWithHistory(RUN, executions, {
        ...empty(),
        steps: [stored] as StoredRunRows['steps'],
      }).findings.filter((f) => f.table === 'steps' && f.key === `step ${record.step}`)
    expect(findings(row)).toEqual([])
    expect(brief(findings({ ...row, cost_usd: '0' }))).toEqual([`steps step ${record.step} edited cost_usd`])
  })
})

describe('commands and refused answers, by hand', () => {
  const RUN = 'run-1'
  const call = (
    type: string,
    input: unknown,
    state: ReplayedCall['state'],
    result?: unknown,
  ): ReplayedCall => ({
    type,
    local: false,
    input,
    state,
    ...(result !== undefined ? { result } : {}),
  })
  const exec = (callIndex: number, state: ReplayedCall['state'], result?: unknown) =>
    call(
      'tetherExec',
      { runId: RUN, step: 1, call: callIndex, argv: ['make'], workspace: '/w' },
      state,
      result,
    )
  const execution = (calls: ReplayedCall[]): ReplayedExecution[] => [
    { runId: 'r1', firstExecutionRunId: 'r1', calls },
  ]
  const row = (callIndex: number, status = 'exited', exitCode: number | null = 0) => ({
    run_id: RUN,
    step: 1,
    call: callIndex,
    argv: ['make'],
    cwd: '/w',
    kind: 'tool',
    status,
    exit_code: exitCode,
  })

  it('expects a row for a command that ran, none for one refused, and either for one still running', () => {
    const calls = [
      exec(0, 'completed', { ok: true, summary: '', status: 'exited', exitCode: 0 }),
      exec(1, 'completed', { ok: false, summary: '', status: 'refused' }),
      exec(2, 'open'),
      // Recorded by an earlier attempt: a row, whatever its status.
      exec(3, 'completed', { ok: true, summary: '(recorded by an earlier attempt)' }),
    ]
    const compare = (rows: object[]) =>
      brief(
        compareWithHistory(RUN, execution(calls), {
          ...empty(),
          exec_results: rows as StoredRunRows['exec_results'],
        }).findings,
      )
    expect(compare([row(0), row(3, 'signalled', null)])).toEqual([])
    expect(compare([row(0, 'exited', 1), row(1), row(2), row(3)])).toEqual([
      'exec_results step 1 call 0 edited exit_code',
      'exec_results step 1 call 1 added',
    ])
    expect(compare([])).toEqual(['exec_results step 1 call 0 deleted', 'exec_results step 1 call 3 deleted'])
  })

  it('pairs refused answers recorded at one instant in the order their worker counted them', () => {
    const rejected = (approver: string) =>
      call(
        'tetherApprovalRejected',
        { runId: RUN, step: 2, channel: 'signal', at: 5, error: 'bad', input: { approver, approvalId: 'a' } },
        'completed',
      )
    const event = (counter: number, approver: string) => ({
      run_id: RUN,
      step: 2,
      call: 0,
      kind: 'decision',
      source: `signal-rejected:5:${counter}`,
      act: 'exec',
      target: 'approval a',
      effect: 'ask',
      rule: null,
      layer: null,
      decided_by: approver,
      reason: 'rejected signal answer: bad',
      checks: null,
      at: '1970-01-01T00:00:00.005+00:00',
    })
    const compare = (rows: object[]) =>
      brief(
        compareWithHistory(RUN, execution([rejected('eve'), rejected('bob')]), {
          ...empty(),
          policy_events: rows as StoredRunRows['policy_events'],
        }).findings,
      )
    // Another worker's counter, the same order.
    expect(compare([event(17, 'bob'), event(12, 'eve')])).toEqual([])
    expect(compare([event(12, 'eve')])).toEqual([
      'policy_events step 2 call 0 decision signal-rejected:5:#2 deleted',
    ])
  })
})
