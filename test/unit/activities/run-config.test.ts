/**
 * RunConfigs compiles a policy once per distinct spec: runs that share a spec share one compiled policy,
 * which is what keeps a worker's memory flat as waiting runs pile up.
 */
import { describe, expect, it } from 'vitest'
import { RunConfigs } from '../../../src/activities/run-config.js'
import type { AuditStore } from '../../../src/audit/index.js'
import { Policy } from '../../../src/policy/index.js'

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
    const runs = new RunConfigs(audit)
    const [a, b, c] = await Promise.all([runs.get('a'), runs.get('b'), runs.get('c')])
    expect(a.policy).toBe(b.policy)
    expect(a.policy).not.toBe(c.policy)
    expect(a.contract).toEqual({ goal: 'a' })
    expect(c.policy.checkExec(['ls']).effect).toBe('deny')
    expect(a.policy.checkExec(['ls']).effect).toBe('ask')
  })

  it('reads a run from the audit once, and names a run that was never recorded', async () => {
    const { audit, asked } = recorded({ a: tiered })
    const runs = new RunConfigs(audit)
    await runs.get('a')
    await runs.get('a')
    expect(asked).toEqual(['a'])
    await expect(runs.get('missing')).rejects.toThrow(/run missing has no record in the audit/)
    // A failed read is not remembered: the next look-up asks again.
    await expect(runs.get('missing')).rejects.toThrow()
    expect(asked).toEqual(['a', 'missing', 'missing'])
  })
})
