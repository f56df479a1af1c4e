/**
 * Money budgets: a contract's cap in US dollars, prices per model, who may raise a cap (the floor's budget
 * approvers), and the answers a budget approval takes — a signed raise above what was spent, or an end.
 */
import { generateKeyPairSync } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  actionDigest,
  type DecisionStatement,
  formatPublicKey,
  fromBase64,
  statementBytes,
} from '../../../src/identity/index.js'
import { type ApproverKey, createKey, loadKey } from '../../../src/identity/keyring.js'
import { loadPriceFile, priceOf, turnCost } from '../../../src/model/index.js'
import { floorOf, onFloor, Policy } from '../../../src/policy/index.js'
import { formatMoney } from '../../../src/present/index.js'
import { type PendingApproval, parseContract, parseMoney } from '../../../src/run/index.js'
import { ApprovalBook } from '../../../src/workflows/approvals.js'
import {
  costBudgetReason,
  costCapReached,
  costCapWords,
  initialState,
  recordUsage,
} from '../../../src/workflows/run-state.js'

const base = { goal: 'g', workspace: '/tmp/ws' }

describe('a cost cap in the contract', () => {
  it('is an amount in US dollars, kept in micro-dollars', () => {
    expect(parseContract({ ...base, budgets: { maxCost: '25 USD' } }).budgets.maxCost).toBe(25_000_000)
    expect(parseContract({ ...base, budgets: { maxCost: '0.01 usd' } }).budgets.maxCost).toBe(10_000)
    expect(parseContract(base).budgets.maxCost).toBeUndefined()
    // A continuation reads the micro-dollars its first run parsed.
    expect(
      parseContract({ ...base, budgets: { maxCost: 10_000 } }, { legacyDurations: true }).budgets.maxCost,
    ).toBe(10_000)
  })

  it('refuses an amount without a currency, in another currency, below a micro-dollar or zero', () => {
    const refused = (maxCost: unknown) => () => parseContract({ ...base, budgets: { maxCost } })
    expect(refused(25)).toThrow('budgets.maxCost: 25 has no currency; write an amount with it, e.g. "25 USD"')
    expect(refused('25')).toThrow('budgets.maxCost: "25" has no currency; write "25 USD"')
    expect(refused('25 EUR')).toThrow("is in EUR; tether's prices are in USD")
    expect(refused('0.0000001 USD')).toThrow('more than six decimals')
    expect(refused('0 USD')).toThrow('budgets.maxCost: the cap must be more than zero')
    expect(parseMoney('1000000001 USD')).toMatchObject({ ok: false })
  })

  it('reads as people read money', () => {
    expect(formatMoney(25_000_000)).toBe('25.00 USD')
    expect(formatMoney(10_000)).toBe('0.01 USD')
    expect(formatMoney(10_500)).toBe('0.0105 USD')
    expect(formatMoney(42)).toBe('0.000042 USD')
    expect(formatMoney(1_234_567_000_000)).toBe('1,234,567.00 USD')
  })
})

describe('prices', () => {
  it('are shipped for the supported providers, dated and OpenRouter names included', () => {
    expect(priceOf('anthropic:claude-sonnet-4-5-20250929')).toEqual({
      price: { input: 3, output: 15, cached: 0.3 },
      source: 'shipped',
    })
    expect(priceOf('openrouter:anthropic/claude-sonnet-4.5')?.price.input).toBe(3)
    expect(priceOf('openai:gpt-4o-mini-2024-07-18')?.price).toEqual({
      input: 0.15,
      output: 0.6,
      cached: 0.075,
    })
    expect(priceOf('openai:gpt-4o')?.price.input).toBe(2.5)
    expect(priceOf('openai:o3-mini')?.price.input).toBe(1.1)
    expect(priceOf('openai-compatible:qwen2.5-coder:7b')).toBeUndefined()
    expect(priceOf('openrouter:meta-llama/llama-3.3-70b')).toBeUndefined()
    expect(priceOf('scripted:/tmp/s.json')).toBeUndefined()
  })

  it('price a turn by its uncached input, cached input and output tokens, in micro-dollars', () => {
    const price = { input: 3, output: 15, cached: 0.3 }
    expect(turnCost(price, { inputTokens: 1000, outputTokens: 500 })).toBe(10_500)
    expect(turnCost(price, { inputTokens: 1000, outputTokens: 0, cachedInputTokens: 800 })).toBe(840)
    expect(
      turnCost({ input: 1, output: 1 }, { inputTokens: 10, outputTokens: 0, cachedInputTokens: 10 }),
    ).toBe(10)
  })

  it('are overridden by the operator’s price file, first matching pattern first', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-prices-'))
    try {
      const file = join(dir, 'prices.yaml')
      await writeFile(
        file,
        'currency: USD\nmodels:\n  "scripted:*": { input: 3, output: 15 }\n  "anthropic:claude-sonnet-4-5*": { input: 2, output: 10, cached: 0.2 }\n',
      )
      const overrides = loadPriceFile(file)
      expect(priceOf('scripted:/x/y.json', overrides)).toEqual({
        price: { input: 3, output: 15 },
        source: file,
      })
      expect(priceOf('anthropic:claude-sonnet-4-5', overrides)?.price.input).toBe(2)
      expect(priceOf('openai:gpt-4o', overrides)?.source).toBe('shipped')
      await writeFile(file, 'models:\n  "x:*": { input: -1, output: 1 }\n')
      expect(() => loadPriceFile(file)).toThrow(`${file}: models.x:*.input:`)
      expect(() => loadPriceFile(join(dir, 'missing.yaml'))).toThrow(
        `TETHER_PRICES: cannot read the price file ${join(dir, 'missing.yaml')} (no such file); check the path`,
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

function publicKey(): string {
  const { publicKey: key } = generateKeyPairSync('ed25519')
  return formatPublicKey(fromBase64((key.export({ format: 'jwk' }) as { x: string }).x) as Uint8Array)
}

describe('budget approvers', () => {
  const alice = publicKey()
  const bob = publicKey()
  const floor = floorOf(
    Policy.fromSpec({
      preset: 'permissive',
      approvers: [
        { name: 'alice', keys: [alice] },
        { name: 'bob', keys: [bob] },
      ],
      budgetApprovers: ['bob'],
    }),
    '/etc/tether/floor.yaml',
  )

  it('are approvers of the policy, named once', () => {
    expect(() =>
      Policy.fromSpec({
        preset: 'permissive',
        approvers: [{ name: 'alice', keys: [alice] }],
        budgetApprovers: ['carol'],
      }),
    ).toThrow('budgetApprovers[0]: "carol" is not among the approvers')
    expect(() =>
      Policy.fromSpec({
        preset: 'permissive',
        approvers: [{ name: 'alice', keys: [alice] }],
        budgetApprovers: ['alice', 'alice'],
      }),
    ).toThrow('budgetApprovers[1]: "alice" is listed twice')
  })

  it('are the floor’s: a run may only name some of them', () => {
    expect(onFloor(floor, Policy.tiered().toSpec()).budgetApprovers).toEqual(['bob'])
    expect(onFloor(floor, { preset: 'tiered', budgetApprovers: ['bob'] }).budgetApprovers).toEqual(['bob'])
    expect(() => onFloor(floor, { preset: 'tiered', budgetApprovers: ['alice'] })).toThrow(
      /^the run's policy budgetApprovers\[0\]: "alice" is not a budget approver on the floor; .* \(the worker's floor: \/etc\/tether\/floor\.yaml\)$/,
    )
    // A floor that lists approvers but no budget approvers: nobody may raise a cap, whatever the run says.
    const closed = floorOf(Policy.permissive().withApprovers([{ name: 'alice', keys: [alice] }]), 'f.yaml')
    expect(onFloor(closed, Policy.tiered().toSpec()).budgetApprovers).toEqual([])
    expect(() => onFloor(closed, { preset: 'tiered', budgetApprovers: ['alice'] })).toThrow(
      'is not a budget approver on the floor',
    )
  })

  it('keep every policy that names none as it was (its digest unchanged)', () => {
    const spec = Policy.tiered().toSpec()
    expect(spec).not.toHaveProperty('budgetApprovers')
    const named = Policy.permissive().withApprovers(['alice'], 'unsigned').withBudgetApprovers(['alice'])
    expect(Policy.fromSpec(named.toSpec()).budgetApprovers).toEqual(['alice'])
    expect(named.digest).not.toBe(Policy.permissive().withApprovers(['alice'], 'unsigned').digest)
  })
})

describe('the run at its cap', () => {
  const contract = parseContract({ ...base, budgets: { maxCost: '0.01 USD' } })

  it('counts priced turns and reaches the contract’s cap, then the raised one', () => {
    const state = initialState(undefined, 0)
    const turn = { text: '', toolCalls: [], modelId: 'm', usage: { inputTokens: 1, outputTokens: 1 } }
    recordUsage(state, { ...turn, cost: 6_000 })
    expect(costCapReached(state, contract)).toBeUndefined()
    recordUsage(state, turn)
    recordUsage(state, { ...turn, cost: 4_500 })
    expect(costCapReached(state, contract)).toEqual({ spent: 10_500, cap: 10_000 })
    state.costCap = 50_000
    expect(costCapReached(state, contract)).toBeUndefined()
    expect(costCapReached(state, parseContract(base))).toBeUndefined()
  })

  it('says why it ended', () => {
    const at = { spent: 10_500, cap: 10_000 }
    expect(costCapWords(at)).toBe('spent 0.0105 USD of a cost cap of 0.01 USD')
    expect(costBudgetReason(at)).toBe(
      'spent 0.0105 USD of a cost cap of 0.01 USD; the policy names no budget approver who could raise it',
    )
    expect(costBudgetReason(at, { decision: 'denied', decidedBy: 'bob', reason: 'too dear' })).toBe(
      'spent 0.0105 USD of a cost cap of 0.01 USD; bob ended the run: too dear',
    )
    expect(costBudgetReason(at, { decision: 'timeout', decidedBy: 'tether' })).toContain(
      'nobody raised it before the deadline',
    )
  })
})

describe('a budget approval', () => {
  let dir: string
  let alice: ApproverKey
  let bob: ApproverKey
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tether-keys-'))
    for (const name of ['alice', 'bob']) createKey(name, dir)
    alice = loadKey('alice', dir)
    bob = loadKey('bob', dir)
  })
  afterAll(() => rm(dir, { recursive: true, force: true }))

  const target = costCapWords({ spent: 10_500, cap: 10_000 })
  const request: PendingApproval = {
    approvalId: 'b-1',
    step: 2,
    call: -1,
    act: 'budget',
    target,
    actionDigest: actionDigest({ act: 'budget', target }),
    requestedAt: 1_000_000,
    deadline: 2_000_000,
    approvers: ['bob'],
    identity: 'signed',
    budget: { spent: 10_500, cap: 10_000 },
  }
  const book = () => {
    const approvals = new ApprovalBook('run-1')
    approvals.setIdentity({
      mode: 'signed',
      approvers: [
        { name: 'alice', keys: [alice.publicKey] },
        { name: 'bob', keys: [bob.publicKey] },
      ],
    })
    approvals.request(request)
    return approvals
  }
  const answer = (
    key: ApproverKey,
    name: string,
    decision: 'approve' | 'deny',
    raiseTo?: string,
    signedRaise = raiseTo,
  ) => {
    const statement: DecisionStatement = {
      run: 'run-1',
      approval: 'b-1',
      action: request.actionDigest as string,
      decision,
      remember: null,
      reason: null,
      replacement: null,
      ...(signedRaise ? { raiseTo: signedRaise } : {}),
      issuedAt: 1_001_000,
    }
    return {
      approvalId: 'b-1',
      decision,
      approver: name,
      ...(raiseTo ? { raiseTo } : {}),
      signature: { key: key.publicKey, value: key.sign(statement), issuedAt: 1_001_000 },
    }
  }

  it('takes a budget approver’s signed raise above what was spent', () => {
    const applied = book().answer(answer(bob, 'bob', 'approve', '0.05 USD'), 'update', 1_002_000)
    expect(applied).toMatchObject({
      ok: true,
      resolution: { decision: 'approved', decidedBy: 'bob', raiseTo: '0.05 USD' },
    })
    const proof = applied.ok ? applied.resolution?.answers?.[0]?.signed?.statement : undefined
    expect(proof).toMatchObject({ raiseTo: '0.05 USD' })
  })

  it('refuses another approver, an unsigned or altered raise, a raise not above the spend, and none at all', () => {
    expect(book().validate(answer(alice, 'alice', 'approve', '0.05 USD'), 1_002_000)).toMatchObject({
      ok: false,
      type: 'NotAnApprover',
      error: 'alice may not answer approval b-1; approvers: bob',
    })
    // Signed for 0.05, sent as 5: the signature covers the amount.
    expect(book().validate(answer(bob, 'bob', 'approve', '5 USD', '0.05 USD'), 1_002_000)).toMatchObject({
      ok: false,
      type: 'BadSignature',
    })
    expect(book().validate(answer(bob, 'bob', 'approve', '0.01 USD'), 1_002_000)).toMatchObject({
      ok: false,
      type: 'InvalidDecision',
      error: 'raiseTo: 0.01 USD is not more than the 0.0105 USD the run has spent; raise the cap above it',
    })
    expect(book().validate(answer(bob, 'bob', 'approve'), 1_002_000)).toMatchObject({
      ok: false,
      error: expect.stringContaining("approval b-1 is the run's cost cap: approve it with the new cap"),
    })
    expect(book().validate(answer(bob, 'bob', 'approve', '5 EUR'), 1_002_000)).toMatchObject({
      ok: false,
      error: expect.stringContaining('raiseTo: "5 EUR" is in EUR'),
    })
    expect(book().validate(answer(bob, 'bob', 'deny', '5 USD'), 1_002_000)).toMatchObject({
      ok: false,
      error: 'a denial ends the run; it carries no new cap',
    })
  })

  it('ends with a denial', () => {
    expect(book().answer(answer(bob, 'bob', 'deny'), 'update', 1_002_000)).toMatchObject({
      ok: true,
      resolution: { decision: 'denied', decidedBy: 'bob' },
    })
  })

  it('is the only approval a raise may answer, and statements without one keep their bytes', () => {
    const other = new ApprovalBook('run-1')
    other.setIdentity({ mode: 'unsigned', approvers: [] })
    other.request({
      ...request,
      act: 'exec',
      target: 'ls',
      approvers: [],
      identity: 'unsigned',
      budget: undefined,
    })
    expect(
      other.validate({ approvalId: 'b-1', decision: 'approve', approver: 'x', raiseTo: '1 USD' }, 1_002_000),
    ).toMatchObject({ ok: false, error: 'only a budget approval raises a cost cap; approval b-1 is a exec' })
    const statement: DecisionStatement = {
      run: 'r',
      approval: 'a',
      action: 'd',
      decision: 'approve',
      remember: null,
      reason: null,
      replacement: null,
      issuedAt: 1,
    }
    expect(new TextDecoder().decode(statementBytes(statement))).toBe(
      'tether decision v1\n{"action":"d","approval":"a","decision":"approve","issuedAt":1,"reason":null,"remember":null,"replacement":null,"run":"r"}',
    )
  })
})
