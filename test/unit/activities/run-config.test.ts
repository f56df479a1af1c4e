/**
 * RunConfigs compiles a policy once per distinct spec: runs that share a spec share one compiled policy,
 * which is what keeps a worker's memory flat as waiting runs pile up.
 */
import { describe, expect, it } from 'vitest'
import { RunConfigs } from '../../../src/activities/run-config.js'
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
