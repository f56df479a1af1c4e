import { describe, expect, it } from 'vitest'
import { Policy, stricterPolicy } from '../../../src/policy/index.js'
import { parseContract } from '../../../src/run/index.js'

describe("a rewound run's policy", () => {
  const base = Policy.tiered().layer('project').allowExec('npm test*').allowWrite('src/*')

  it('is the earlier policy when nothing is stacked on it', () => {
    expect(stricterPolicy(base).digest).toBe(base.digest)
  })

  it('can only get stricter: its denies and asks count, its allows do not', () => {
    const extra = Policy.permissive().layer('review').denyExec('npm test --update*').allowExec('curl*')
    const both = stricterPolicy(base, extra)
    expect(both.checkExec(['npm', 'test']).effect).toBe('allow')
    expect(both.checkExec(['npm', 'test', '--update-snapshots']).effect).toBe('deny')
    // The earlier policy asked about curl (tiered: exec asks): an allow stacked on it changes nothing.
    expect(base.checkExec(['curl', 'example.com']).effect).toBe('ask')
    expect(both.checkExec(['curl', 'example.com']).effect).toBe('ask')
    expect(both.check('read', '.env').effect).toBe('deny')
    // Each act's default is the stricter of the two.
    expect(stricterPolicy(base, Policy.strict()).defaultFor('read')).toBe('deny')
    expect(stricterPolicy(Policy.strict(), Policy.permissive()).defaultFor('read')).toBe('deny')
  })
})

describe("a contract's workspace", () => {
  it('is a folder or a source, not both and not neither', () => {
    expect(parseContract({ goal: 'g', workspace: '/w' }).workspace).toBe('/w')
    expect(
      parseContract({ goal: 'g', source: { git: 'https://example.com/r.git', ref: 'main' } }).source,
    ).toEqual({
      git: 'https://example.com/r.git',
      ref: 'main',
    })
    expect(parseContract({ goal: 'g', source: { run: 'r', step: 2 } }).source).toEqual({
      run: 'r',
      step: 2,
      transcript: false,
    })
    expect(() => parseContract({ goal: 'g' })).toThrow(/either a workspace .* or a source/)
    expect(() => parseContract({ goal: 'g', workspace: '/w', source: { run: 'r', step: 1 } })).toThrow(
      /not both/,
    )
    expect(() => parseContract({ goal: 'g', workspace: '/w', caches: { add: ['../x'] } })).toThrow(
      /without \.\./,
    )
  })
})
