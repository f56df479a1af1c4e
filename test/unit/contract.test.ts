/** The task contract: durations (text with a unit, bounded; a bare number refused with the fix), git sources. */
import { describe, expect, it } from 'vitest'
import { ContractError, contractInput, parseContract } from '../../src/run/contract.js'

const base = { goal: 'g', workspace: '/tmp/ws' }

function error(contract: Record<string, unknown>): string {
  try {
    parseContract({ ...base, ...contract })
  } catch (caught) {
    expect(caught).toBeInstanceOf(ContractError)
    return (caught as Error).message
  }
  throw new Error('the contract was accepted')
}

describe('contract durations', () => {
  it('reads text with a unit as milliseconds, with defaults', () => {
    const contract = parseContract({
      ...base,
      budgets: { maxWallTime: '30m' },
      execTimeout: '1500ms',
      approvals: { timeout: '2h', reminderEvery: '1d' },
    })
    expect(contract.budgets.maxWallTime).toBe(1_800_000)
    expect(contract.execTimeout).toBe(1_500)
    expect(contract.approvals).toMatchObject({ timeout: 7_200_000, reminderEvery: 86_400_000 })
    const defaults = parseContract(base)
    expect(defaults.budgets.maxWallTime).toBe(4 * 3_600_000)
    expect(defaults.approvals.reminderEvery).toBeUndefined()
  })

  it('refuses a bare number and shows the fix', () => {
    expect(error({ budgets: { maxWallTime: 1800 } })).toBe(
      'invalid task contract: budgets.maxWallTime: 1800 is a number; write a duration with a unit, e.g. "30m" or "1800s"',
    )
    expect(error({ execTimeout: 90 })).toContain(
      'execTimeout: 90 is a number; write a duration with a unit, e.g. "90s"',
    )
    expect(error({ approvals: { timeout: '3600' } })).toContain(
      'approvals.timeout: "3600" has no unit; write a duration with a unit, e.g. "1h" or "3600s"',
    )
  })

  it('refuses durations over a year, naming the bound, and zero', () => {
    expect(parseContract({ ...base, approvals: { timeout: '365d' } }).approvals.timeout).toBe(
      365 * 86_400_000,
    )
    expect(error({ approvals: { reminderEvery: '366d' } })).toContain(
      'approvals.reminderEvery: "366d" is longer than the limit of 365d',
    )
    expect(error({ budgets: { maxWallTime: '9000h' } })).toContain('longer than the limit of 365d')
    expect(error({ execTimeout: '0s' })).toContain('execTimeout: "0s" must be longer than zero')
    expect(error({ execTimeout: 'soon' })).toContain('expected a duration such as "1500ms"')
  })

  it('reads numbers as milliseconds only for runs recorded before units were required', () => {
    const legacy = parseContract({ ...base, budgets: { maxWallTime: 1800 } }, { legacyDurations: true })
    expect(legacy.budgets.maxWallTime).toBe(1800)
  })
})

describe('a contract written back as input (a rewind starts its run from it)', () => {
  it('gives the new run the same cost cap, as money again', () => {
    const contract = parseContract({ ...base, budgets: { maxCost: '0.25 USD', maxWallTime: '30m' } })
    expect(contract.budgets.maxCost).toBe(250_000)
    const again = contractInput(contract)
    expect(again.budgets?.maxCost).toBe('0.250000 USD')
    expect(parseContract(again)).toEqual(contract)
  })
})

describe('a git source', () => {
  it('refuses a ref git would take for one of its options, and takes the others', () => {
    const source = (ref: string) => ({
      workspace: undefined,
      source: { git: 'https://example.com/r.git', ref },
    })
    expect(error(source('--recurse-submodules'))).toContain(
      "source.ref: a git ref never starts with '-': name a branch, tag or commit",
    )
    for (const ref of ['main', 'v1.2.0', 'HEAD~2', '0123abcd'])
      expect(parseContract({ ...base, ...source(ref) }).source).toEqual({
        git: 'https://example.com/r.git',
        ref,
      })
  })
})
