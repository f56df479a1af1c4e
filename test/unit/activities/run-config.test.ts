/**
 * RunConfigs compiles a policy once per distinct spec: runs that share a spec share one compiled policy,
 * which is what keeps a worker's memory flat as waiting runs pile up; what they take together is bounded in bytes.
 */
import { describe, expect, it } from 'vitest'
import { policyCache, RunConfigs } from '../../../src/activities/run-config.js'
import type { AuditStore } from '../../../src/audit/index.js'
import { builtinFloor, Policy } from '../../../src/policy/index.js'

/** An audit that knows each run's recorded spec, and counts how often it was asked. */
function recorded(specs: Record<string, unknown>) {
  const asked: string[] = []
  const audit = {
    async runConfig(runId: string) {
      asked.push(runId)
      const policy = specs[runId]
      return policy === undefined ? undefined : { contract: { goal: runId }, policy }
    },
  } as unknown as AuditStore
  return { audit, asked }
}

describe('RunConfigs', () => {
  const tiered = Policy.tiered().toSpec()
  const strict = Policy.strict().toSpec()

  it('gives runs with the same spec one compiled policy, and a different spec its own', async () => {
    const { audit } = recorded({ a: tiered, b: structuredClone(tiered), c: strict })
    const runs = new RunConfigs(audit, builtinFloor())
    const policy = (runId: string) => runs.policy(runId, undefined, [])
    const [a, b, c] = await Promise.all([policy('a'), policy('b'), policy('c')])
    expect(a).toBe(b)
    expect(a).not.toBe(c)
    expect((await runs.get('a')).contract).toEqual({ goal: 'a' })
    expect(c.checkExec(['ls']).effect).toBe('deny')
    expect(a.checkExec(['ls']).effect).toBe('ask')
    // Each on the worker's floor.
    expect(a.floor?.source).toBe('built-in')
  })

  it('reads a run from the audit once, and names a run that was never recorded', async () => {
    const { audit, asked } = recorded({ a: tiered })
    const runs = new RunConfigs(audit, builtinFloor())
    await runs.get('a')
    await runs.get('a')
    expect(asked).toEqual(['a'])
    await expect(runs.get('missing')).rejects.toThrow(/run missing has no record in the audit/)
    // A failed read is not remembered: the next look-up asks again.
    await expect(runs.get('missing')).rejects.toThrow()
    expect(asked).toEqual(['a', 'missing', 'missing'])
  })
})

const policyOf = (rules: number, chars: number) =>
  Policy.fromSpec({
    preset: 'permissive',
    layers: [
      {
        name: 'team',
        rules: Array.from({ length: rules }, (_, i) => ({
          act: 'exec',
          effect: 'allow',
          pattern: `tool-${i} ${'x'.repeat(chars)}`,
        })),
      },
    ],
  })

describe('the policy cache', () => {
  it('drops the least recently used policies once what they take passes its budget', () => {
    const big = policyOf(200, 2_000)
    const small = policyOf(1, 10)
    // Each entry counts its key too (two bytes a character).
    const cache = policyCache(3 * (big.compiledSize + 2))
    for (const key of ['a', 'b', 'c']) cache.set(key, big)
    expect(cache.get('a')).toBe(big)
    // A fourth big one does not fit beside three: the least recently used (b) goes.
    cache.set('d', big)
    expect(cache.get('b')).toBeUndefined()
    expect([cache.get('a'), cache.get('c'), cache.get('d')]).toEqual([big, big, big])
    expect(cache.bytes).toBeLessThanOrEqual(3 * (big.compiledSize + 2))
    // Many small ones fit where one big one was.
    for (let i = 0; i < 100; i++) cache.set(`small-${i}`, small)
    expect(cache.bytes).toBeLessThanOrEqual(3 * (big.compiledSize + 2))
    expect(cache.get('small-99')).toBe(small)
  })

  it('keeps no policy bigger than the whole budget', () => {
    const cache = policyCache(1_000_000)
    const huge = policyOf(1_000, 100)
    expect(huge.compiledSize).toBeGreaterThan(1_000_000)
    cache.set('huge', huge)
    expect(cache.get('huge')).toBeUndefined()
    expect(cache.bytes).toBe(0)
  })
})
