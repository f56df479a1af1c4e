/**
 * Activity guards that keep a run alive whatever the model sends or the worker suffers: long activities
 * heartbeat for as long as they work, and the policy's verdict on a command has a size history can hold.
 */
import { MockActivityEnvironment } from '@temporalio/testing'
import { DefaultLogger } from '@temporalio/worker'
import { describe, expect, it } from 'vitest'
import { heartbeating } from '../../../src/activities/heartbeat.js'
import { policyActivities } from '../../../src/activities/policy.js'
import { RunConfigs } from '../../../src/activities/run-config.js'
import { CommandSandbox } from '../../../src/activities/sandbox.js'
import { StepSnapshots } from '../../../src/activities/snapshots.js'
import { builtinFloor, Policy } from '../../../src/policy/index.js'
import type { ValidatedCall } from '../../../src/tools/schemas.js'

describe('heartbeating', () => {
  it('beats while the work runs and stops when it settles', async () => {
    const env = new MockActivityEnvironment(
      { heartbeatTimeoutMs: 400 },
      { logger: new DefaultLogger('ERROR') },
    )
    const beats: unknown[] = []
    env.on('heartbeat', (details: unknown) => beats.push(details))
    let finish = () => {}
    const work = new Promise<string>((resolve) => {
      finish = () => resolve('done')
    })
    const result = env.run(() => heartbeating(() => work, { phase: 'test' }))
    await expect.poll(() => beats.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(3)
    finish()
    expect(await result).toBe('done')
    const after = beats.length
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(beats.length).toBe(after)
    expect(beats[0]).toEqual({ phase: 'test' })
  })
})

describe('the policy check on a command', () => {
  const { tetherCheckAction } = policyActivities({
    provider: () => {
      throw new Error('no model here')
    },
    sandbox: new CommandSandbox({ env: {} }),
    // Judged from the spec each call carries, as inputs recorded before run-id lookups did: no audit needed.
    runs: new RunConfigs(undefined as never, builtinFloor()),
    // A call without a run id has no snapshots to consult.
    snapshots: new StepSnapshots({
      service: () => undefined,
      audit: undefined as never,
      runs: undefined as never,
      sandbox: new CommandSandbox({ env: {} }),
      workspaces: '/nonexistent',
    }),
  })
  const check = (argv: string[]) =>
    tetherCheckAction({
      policy: Policy.tiered().toSpec(),
      remembered: [],
      workspace: '/tmp',
      call: { id: 'c', name: 'exec', args: { argv } } satisfies ValidatedCall,
      noRetry: [],
    })

  it('keeps an ordinary verdict as the policy gave it', async () => {
    const verdict = await check(['sudo', 'ls'])
    expect(verdict.effect).toBe('ask')
    expect(verdict.tree).toContain('sudo')
  })

  it('refuses a command whose analysis is too large to record or review, naming the limit', async () => {
    // Wrappers nest: each one repeats the rest of the command in the analysis.
    const argv = [...Array.from({ length: 3_000 }, () => 'sudo'), 'ls']
    const verdict = await check(argv)
    expect(verdict).toEqual({
      act: 'exec',
      target: argv.join(' '),
      effect: 'deny',
      rule: 'analysis too large',
      layer: 'builtin',
      reason: expect.stringMatching(
        /^the policy's analysis of this command runs to [\d,]+ characters, more than the 262,144 anyone could review/,
      ),
    })
  })
})
