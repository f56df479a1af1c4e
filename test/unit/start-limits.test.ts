/**
 * What starts a run is checked by the client before anything reaches Temporal: here the client's connection
 * leads nowhere, so a refusal that is not the client's own would be a connection error instead.
 */
import { Client, Connection } from '@temporalio/client'
import { afterAll, describe, expect, it } from 'vitest'
import { InvalidRunIdError, startAgentRun } from '../../src/embed/index.js'
import { Policy, PolicyError } from '../../src/policy/index.js'
import { ContractError, parseContract, START_LIMITS, startProblem } from '../../src/run/index.js'

const connection = Connection.lazy({ address: '127.0.0.1:1', connectTimeout: '1 second' })
const client = new Client({ connection })
afterAll(() => connection.close())

const contract = { goal: 'fix the tests', workspace: '/tmp/project', verification: null }
const start = (overrides: { contract?: object; policy?: Policy; runId?: string }) =>
  startAgentRun(client, {
    contract: { ...contract, ...overrides.contract },
    policy: overrides.policy ?? Policy.tiered(),
    taskQueue: 'nowhere',
    ...(overrides.runId !== undefined ? { runId: overrides.runId } : {}),
  })

/** The one-line error `started` is refused with, of class `type`. */
async function refused(started: Promise<unknown>, type: new (...args: never[]) => Error): Promise<string> {
  const error = await started.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(type)
  const { message } = error as Error
  expect(message).not.toContain('\n')
  return message
}

describe('startAgentRun refuses before anything reaches Temporal', () => {
  it('a goal of 5 MB, naming the goal limit', async () => {
    const message = await refused(start({ contract: { goal: 'x'.repeat(5_000_000) } }), ContractError)
    expect(message).toBe(
      'the goal has 5,000,000 characters; the goal limit is 65,536; put the detail in a file in the workspace and name it in the goal',
    )
  })

  it('a policy of 12 MB, naming the policy limit', async () => {
    // Built rule by rule (a file this size is refused when it loads): the client still measures it.
    let policy = Policy.tiered().layer('generated')
    for (let i = 0; i < 3_000; i++) policy = policy.allowExec(`tool-${i} ${'x'.repeat(4_000)}`)
    const message = await refused(start({ policy }), PolicyError)
    expect(message).toMatch(/^the policy is 12,\d{3},\d{3} bytes as JSON; the policy limit is 524,288 bytes$/)
  })

  it.each([
    [
      'half a UTF-16 pair in a pattern',
      Policy.tiered().layer('team').denyExec('rm \ud800*'),
      'layers[1].rules[0].pattern: holds U+D800 at character 4, half of a UTF-16 pair, which the audit cannot store',
    ],
    [
      'a zero-width space in a layer name',
      Policy.tiered().layer('team\u200b').allowExec('npm test'),
      'layers[1].name: a layer name holds U+200B at character 5; ',
    ],
  ])(
    'a policy built with %s, which the loader refuses (the builder does not check it)',
    async (_, policy, expected) => {
      expect(await refused(start({ policy }), PolicyError)).toContain(expected)
    },
  )

  it('a contract over its size, and a noRetry list too long', async () => {
    const env = Array.from({ length: 30_000 }, (_, i) => `VARIABLE_${i}`)
    expect(await refused(start({ contract: { env } }), ContractError)).toMatch(
      /^the contract is [\d,]+ bytes as JSON; the contract limit is 262,144 bytes$/,
    )
    const noRetry = Array.from({ length: START_LIMITS.noRetry + 1 }, (_, i) => `deploy-${i}*`)
    expect(await refused(start({ contract: { noRetry } }), ContractError)).toBe(
      'noRetry has 101 patterns; the noRetry limit is 100',
    )
  })

  it.each([
    ['holds a line feed', 'run-1\nrun-2', 'the run id holds U+000A at character 6; '],
    ['holds a right-to-left override', 'run-\u202e1', 'the run id holds U+202E at character 5; '],
    ['is 2,000 characters', 'r'.repeat(2_000), 'the run id has 2,000 characters; the run id limit is 200'],
    ['is empty', '', 'the run id is empty'],
  ])('a run id that %s', async (_, runId, expected) => {
    expect(await refused(start({ runId }), InvalidRunIdError)).toContain(expected)
  })

  it('a duration with a space inside it', async () => {
    const message = await refused(start({ contract: { budgets: { maxWallTime: '30 m' } } }), ContractError)
    expect(message).toBe(
      'invalid task contract: budgets.maxWallTime: expected a duration such as "1500ms", "30s", "15m", "2h" or "1d", got "30 m"',
    )
    // Runs recorded before read it as 30 minutes, and still do.
    expect(
      parseContract({ ...contract, budgets: { maxWallTime: '30 m' } }, { spacedDurations: true }).budgets
        .maxWallTime,
    ).toBe(1_800_000)
  })
})

describe('a start that names its policy by reference (another client may send anything)', () => {
  const digest = Policy.tiered().digest
  it.each([
    ['is not a digest', { policyRef: 'latest' }, 'policyRef is not a policy digest (64 hex characters); '],
    ['is not a string', { policyRef: 7 }, 'policyRef is not a policy digest (64 hex characters); '],
    [
      'also gives the spec inline',
      { policyRef: digest, policy: Policy.tiered().toSpec() },
      'the start gives the policy both inline and by policyRef; give one of them',
    ],
  ])('is refused when it %s', (_, start, expected) => {
    expect(startProblem({ contract, ...start })).toEqual({
      field: 'policy',
      message: expect.stringContaining(expected),
    })
  })

  it('passes with a digest alone', () => {
    expect(startProblem({ contract, policyRef: digest })).toBeUndefined()
  })
})
