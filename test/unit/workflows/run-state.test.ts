import { describe, expect, it } from 'vitest'
import { parseContract } from '../../../src/run/contract.js'
import { replacementVerdict } from '../../../src/run/index.js'
import {
  budgetOutcome,
  commandTimeout,
  initialState,
  nextAfterTurn,
  recordUsage,
  refusalObservation,
  replacementNote,
  reserveSeq,
  reserveSeqs,
} from '../../../src/workflows/run-state.js'

const contract = parseContract({
  goal: 'make the tests pass',
  workspace: '/tmp/ws',
  verification: { command: ['npm', 'test'] },
  budgets: { maxSteps: 3, maxTokens: 1_000, maxWallTime: '1h' },
  execTimeout: '15m',
})
const turn = (calls: number, input = 10, output = 5) => ({
  text: '',
  toolCalls: Array.from({ length: calls }, (_, i) => ({
    id: `c${i}`,
    name: 'exec',
    args: { argv: ['true'] },
  })),
  usage: { inputTokens: input, outputTokens: output },
  modelId: 'scripted',
})

describe('run state', () => {
  it('ends the run at each budget with its own outcome', () => {
    const state = initialState(undefined, 0)
    expect(budgetOutcome(state, contract, 0)).toBeUndefined()
    state.step = 3
    expect(budgetOutcome(state, contract, 0)?.outcome).toBe('step-cap')
    state.step = 1
    recordUsage(state, turn(0, 900, 100))
    expect(budgetOutcome(state, contract, 0)).toEqual({
      outcome: 'token-budget',
      reason: 'used 1000 tokens of a budget of 1000',
    })
    const fresh = initialState(undefined, 0)
    expect(budgetOutcome(fresh, contract, 3_600_000)?.outcome).toBe('time-budget')
    expect(budgetOutcome(fresh, contract, 3_599_999)).toBeUndefined()
  })

  it('never lets a command outlive the wall-time budget', () => {
    const state = initialState(undefined, 0)
    expect(commandTimeout(state, contract, 0)).toBe(15 * 60_000)
    expect(commandTimeout(state, contract, 3_600_000 - 5_000)).toBe(5_000)
    expect(commandTimeout(state, contract, 3_600_000 + 5_000)).toBe(1_000)
  })

  it('verifies when the model ends its turn and a gate exists, otherwise finishes', () => {
    expect(nextAfterTurn(turn(2), contract)).toBe('calls')
    expect(nextAfterTurn(turn(0), contract)).toBe('verify')
    expect(nextAfterTurn(turn(0), { ...contract, verification: null })).toBe('finish')
  })

  it('reserves transcript positions: the reply, then one per call, in order', () => {
    const state = initialState(undefined, 0)
    expect(reserveSeqs(state, 2)).toEqual({ reply: 1, results: [2, 3] })
    expect(reserveSeq(state)).toBe(4)
    expect(reserveSeqs(state, 0)).toEqual({ reply: 5, results: [] })
    expect(state.nextSeq).toBe(6)
  })

  it('tells the model which rule in which layer refused a call', () => {
    const message = refusalObservation(
      7,
      { id: 'c0', name: 'exec', args: { argv: ['rm', '-rf', '/'] } },
      {
        act: 'exec',
        target: 'rm -rf /',
        effect: 'deny',
        rule: 'rm*',
        layer: 'base',
        reason: 'rm is denied.',
      },
    )
    expect(message.seq).toBe(7)
    expect(message.message.role).toBe('tool')
    const output = message.message.role === 'tool' ? message.message.results[0]?.output : ''
    expect(output).toContain('[exec refused] rm -rf / — by rule `rm*` in layer `base`')
    const byDefault = refusalObservation(
      7,
      { id: 'c0', name: 'exec', args: { argv: ['x'] } },
      { act: 'exec', target: 'x', effect: 'deny', reason: 'exec is denied by default.' },
    )
    expect(byDefault.message.role === 'tool' && byDefault.message.results[0]?.output).toContain(
      'the default for exec',
    )
  })
  it('repeats at most 2,000 characters of a refused target: the model knows what it sent', () => {
    const target = `echo ${'y'.repeat(60_000)}`
    const message = refusalObservation(
      3,
      { id: 'c0', name: 'exec', args: { argv: ['echo', 'y'.repeat(60_000)] } },
      { act: 'exec', target, effect: 'deny', rule: 'echo*', layer: 'base', reason: 'no.' },
    )
    const output = message.message.role === 'tool' ? (message.message.results[0]?.output ?? '') : ''
    expect(output).toContain(`[exec refused] ${target.slice(0, 2_000)}… [58,005 more characters] — by rule`)
    expect(output.length).toBeLessThan(2_500)
  })
})

describe('an approved edited command', () => {
  const ask = {
    act: 'exec' as const,
    target: 'kubectl apply -f prod.yaml',
    effect: 'ask' as const,
    rule: 'kubectl apply*',
    layer: 'ops',
    reason: 'asks',
  }
  const approvedBy = (n: number) => ({ answers: Array.from({ length: n }, () => ({ decision: 'approve' })) })

  it('counts its approvers against an ask it meets, and never turns a deny into anything else', () => {
    expect(replacementVerdict(ask, approvedBy(1))).toBe(ask)
    expect(replacementVerdict({ ...ask, approvalsRequired: 2 }, approvedBy(1))).toMatchObject({
      effect: 'deny',
      reason: 'the edited command needs 2 approvers (rule `kubectl apply*` in layer `ops`) and 1 approved it',
    })
    expect(replacementVerdict({ ...ask, approvalsRequired: 2 }, approvedBy(2)).effect).toBe('ask')
    const deny = { ...ask, effect: 'deny' as const }
    expect(replacementVerdict(deny, approvedBy(3))).toBe(deny)
  })

  it('tells the model what ran instead, before the refusal or the result', () => {
    const note = replacementNote(['rm', '-rf', 'build'], ['rm', '-rf', 'build/tmp'], 'alice')
    expect(note).toBe(
      '[approved with an edit] alice approved `rm -rf build/tmp` instead of the command you asked for (`rm -rf build`).',
    )
    const call = { id: 'c0', name: 'exec', args: { argv: ['rm', '-rf', 'build/tmp'] } }
    const refused = refusalObservation(4, call, { ...ask, effect: 'deny', rule: 'rm*' }, note)
    expect(refused.message).toMatchObject({
      role: 'tool',
      results: [{ output: expect.stringMatching(/^\[approved with an edit\].*\n\[exec refused\]/) }],
    })
  })
})
