import { describe, expect, it } from 'vitest'
import { Policy, PolicyError, parseSize } from '../../../src/policy/index.js'

const layered = (...layers: Array<{ name: string; sandbox?: unknown }>) =>
  Policy.fromSpec({ preset: 'tiered', layers: layers.map((layer) => ({ rules: [], ...layer })) })

describe('sandbox settings in a policy', () => {
  it('is enforced unless said otherwise, by every preset', () => {
    for (const policy of [Policy.permissive(), Policy.tiered(), Policy.strict()]) {
      expect(policy.sandbox).toMatchObject({ mode: 'enforce', caches: 'read-write', limits: {} })
      expect(policy.sandbox.modeSetBy).toBeUndefined()
    }
  })

  it('may be turned off by the first layer only (a preset’s builtin layers do not count)', () => {
    const off = layered({ name: 'operator', sandbox: 'off' }, { name: 'project' })
    expect(off.sandbox).toMatchObject({ mode: 'off', modeSetBy: 'operator' })
    expect(() => layered({ name: 'operator' }, { name: 'project', sandbox: 'off' })).toThrow(PolicyError)
    expect(() => layered({ name: 'operator' }, { name: 'project', sandbox: { mode: 'off' } })).toThrow(
      /layers\[1\]\.sandbox\.mode: layer "project" turns the sandbox off; only the first layer \(the operator's\) may loosen/,
    )
  })

  it('is turned back on by a later layer', () => {
    const policy = layered({ name: 'operator', sandbox: 'off' }, { name: 'project', sandbox: 'enforce' })
    expect(policy.sandbox).toMatchObject({ mode: 'enforce', modeSetBy: 'project' })
  })

  it('lets later layers tighten but never loosen', () => {
    const policy = layered(
      {
        name: 'operator',
        sandbox: {
          caches: 'read-only',
          limits: { memory: '4GiB', processes: 512 },
          writable: ['/srv/cache'],
        },
      },
      {
        name: 'project',
        sandbox: { caches: 'none', limits: { memory: '1GiB', processes: 2048 }, hide: ['/srv/keys'] },
      },
    )
    expect(policy.sandbox).toMatchObject({
      caches: 'none',
      limits: { memoryBytes: 1024 ** 3, processes: 512 },
      writable: ['/srv/cache'],
      hide: ['/srv/keys'],
    })
    expect(() =>
      layered(
        { name: 'operator', sandbox: { caches: 'read-only' } },
        { name: 'p', sandbox: { caches: 'read-write' } },
      ),
    ).toThrow(/layers\[1\]\.sandbox\.caches/)
    expect(() => layered({ name: 'operator' }, { name: 'p', sandbox: { writable: ['/srv'] } })).toThrow(
      /makes host paths writable/,
    )
    expect(() => layered({ name: 'operator' }, { name: 'p', sandbox: { readOnly: ['/srv'] } })).toThrow(
      /exposes host paths/,
    )
  })

  it('names the bad field of a malformed setting', () => {
    expect(() => layered({ name: 'operator', sandbox: { limits: { memory: 4096 } } })).toThrow(
      /layers\[0\]\.sandbox\.limits\.memory: expected string/,
    )
    expect(() => layered({ name: 'operator', sandbox: { limits: { memory: '4G' } } })).toThrow(
      /layers\[0\]\.sandbox\.limits\.memory: expected a size with a unit, e\.g\. "512MiB"/,
    )
    expect(() => layered({ name: 'operator', sandbox: { hide: ['relative/path'] } })).toThrow(
      /layers\[0\]\.sandbox\.hide\[0\]: expected an absolute host path/,
    )
    expect(() => layered({ name: 'operator', sandbox: 'sometimes' })).toThrow(
      /layers\[0\]\.sandbox\.mode: expected one of "enforce", "off"/,
    )
  })

  it('round-trips through toSpec, and the builder follows the same rule', () => {
    const policy = Policy.tiered()
      .layer('operator')
      .withSandbox({ mode: 'off', limits: { cpuTime: '10m' } })
    expect(policy.sandbox).toMatchObject({ mode: 'off', limits: { cpuSeconds: 600 } })
    expect(Policy.fromSpec(policy.toSpec()).sandbox).toEqual(policy.sandbox)
    expect(() => policy.layer('project').withSandbox('off')).toThrow(PolicyError)
    // A rule added afterwards keeps the layer's settings.
    expect(policy.allowExec('npm test').sandbox.mode).toBe('off')
  })

  it('reads sizes with units', () => {
    expect(parseSize('512MiB')).toBe(512 * 1024 ** 2)
    expect(parseSize('10GB')).toBe(10e9)
    expect(parseSize('1.5 KiB')).toBe(1536)
    expect(parseSize('4096')).toBeUndefined()
    expect(parseSize('4G')).toBeUndefined()
  })
})
