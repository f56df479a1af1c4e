/** DESIGN §3 semantics: layers, precedence, presets, globs, targets, builders and specs. */
import { describe, expect, it } from 'vitest'
import { Policy, PolicyError } from '../../../src/policy/index.js'

describe('evaluation order', () => {
  it('deny beats ask beats allow beats the default, across layers, whatever their order', () => {
    const base = Policy.permissive().layer('base').denyExec('git push*').layer('app').allowExec('git*')
    expect(base.checkExec(['git', 'push', 'origin']).effect).toBe('deny')
    const reversed = Policy.permissive().layer('app').allowExec('git*').layer('base').denyExec('git push*')
    expect(reversed.checkExec(['git', 'push', 'origin']).effect).toBe('deny')
    const asked = Policy.strict().layer('a').allowExec('npm*').layer('b').askExec('npm publish*')
    expect(asked.checkExec(['npm', 'publish']).effect).toBe('ask')
    expect(asked.checkExec(['npm', 'test']).effect).toBe('allow')
    expect(asked.checkExec(['make']).effect).toBe('deny')
  })

  it('a more specific allow does not beat a broad deny', () => {
    const policy = Policy.permissive().layer('ops').denyExec('rm*').layer('dev').allowExec('rm -rf build')
    expect(policy.checkExec(['rm', '-rf', 'build']).effect).toBe('deny')
  })

  it('names the deciding rule and layer, and neither when the default decided', () => {
    const policy = Policy.tiered().layer('ops').denyExec('rm*').layer('ops2').denyExec('rm -rf*')
    const denied = policy.checkExec(['rm', '-rf', '/'])
    expect(denied).toMatchObject({ effect: 'deny', rule: 'rm*', layer: 'ops' })
    expect(denied.reason).toBe('"rm -rf /" is denied by rule "rm*" in layer "ops".')
    const fallback = policy.checkExec(['make'])
    expect(fallback.effect).toBe('ask')
    expect(fallback.rule).toBeUndefined()
    expect(fallback.layer).toBeUndefined()
    expect(fallback.reason).toBe('No rule matches "make"; the exec default is ask.')
  })

  it('gives the same text in two layers with opposite effects to the deny', () => {
    const policy = Policy.permissive().layer('a').allowWrite('src/*').layer('b').denyWrite('src/*')
    expect(policy.check('write', 'src/a.ts')).toMatchObject({ effect: 'deny', layer: 'b' })
  })
})

describe('presets', () => {
  it('permissive allows everything', () => {
    const policy = Policy.permissive()
    expect(policy.check('read', '.env').effect).toBe('allow')
    expect(policy.check('net', 'example.com').effect).toBe('allow')
    expect(policy.checkExec(['rm', '-rf', '/']).effect).toBe('allow')
  })

  it('tiered: read allow, write ask, exec ask, net deny, secrets denied for read and write', () => {
    const policy = Policy.tiered()
    expect(policy.check('read', 'src/a.ts').effect).toBe('allow')
    expect(policy.check('write', 'src/a.ts').effect).toBe('ask')
    expect(policy.checkExec(['npm', 'test']).effect).toBe('ask')
    expect(policy.check('net', 'example.com:443').effect).toBe('deny')
    for (const secret of [
      '.env',
      '.env.local',
      'certs/server.pem',
      'tls.key',
      'id_rsa',
      'home/.ssh/id_ed25519',
    ]) {
      expect(policy.check('read', secret)).toMatchObject({ effect: 'deny', layer: 'builtin-secrets' })
      expect(policy.check('write', secret)).toMatchObject({ effect: 'deny', layer: 'builtin-secrets' })
    }
  })

  it('strict denies everything unless allowed, and keeps secrets denied under a broad allow', () => {
    const policy = Policy.strict().layer('me').allowRead('*')
    expect(policy.check('read', 'src/a.ts').effect).toBe('allow')
    expect(policy.check('read', 'config/.env').effect).toBe('deny')
    expect(policy.check('write', 'src/a.ts').effect).toBe('deny')
    expect(policy.checkExec(['ls']).effect).toBe('deny')
  })
})

describe('glob patterns', () => {
  const policy = Policy.strict()
    .layer('t')
    .allowRead('src/*')
    .allowRead('doc?.md')
    .allowRead('notes/a*b*c.txt')
    .denyRead('*.secret')

  it('`*` crosses `/`, spaces and newlines; `?` is one character; the match is whole-string', () => {
    expect(policy.check('read', 'src/deep/dir/file with space.ts').effect).toBe('allow')
    expect(policy.check('read', 'src/line\nbreak').effect).toBe('allow')
    expect(policy.check('read', 'docs.md').effect).toBe('allow')
    expect(policy.check('read', 'doc.md').effect).toBe('deny')
    expect(policy.check('read', 'docs.mdx').effect).toBe('deny')
    expect(policy.check('read', 'notes/a-x-b-y-c.txt').effect).toBe('allow')
    expect(policy.check('read', 'xsrc/a').effect).toBe('deny')
  })

  it('every other character is literal', () => {
    const literal = Policy.strict().layer('t').allowRead('a.b[c]{d}(e)+^$|\\')
    expect(literal.check('read', 'a.b[c]{d}(e)+^$|\\').effect).toBe('allow')
    expect(literal.check('read', 'aXb[c]{d}(e)+^$|\\').effect).toBe('deny')
  })

  it('a pattern also matches the last path segment of read and write targets', () => {
    expect(Policy.tiered().check('read', 'config/prod/.env')).toMatchObject({ effect: 'deny', rule: '.env' })
    expect(policy.check('read', 'a/b/c.secret').effect).toBe('deny')
  })

  it('paths are judged after lexical normalisation too, so `..` and `//` cannot dodge a rule', () => {
    const guarded = Policy.permissive().layer('t').denyRead('secrets/*')
    expect(guarded.check('read', 'src/../secrets/key.txt').effect).toBe('deny')
    expect(guarded.check('read', 'secrets//key.txt').effect).toBe('deny')
    expect(guarded.check('read', './secrets/key.txt').effect).toBe('deny')
  })

  it('deny rules on paths are case-folded; allow rules are not', () => {
    expect(Policy.tiered().check('read', 'CONFIG/.ENV').effect).toBe('deny')
    const strictAllow = Policy.strict().layer('t').allowRead('src/*')
    expect(strictAllow.check('read', 'SRC/a.ts').effect).toBe('deny')
  })
})

describe('net targets', () => {
  const policy = Policy.strict()
    .layer('t')
    .allowNet('api.example.com')
    .allowNet('db.local:5432')
    .denyNet('*.evil.test')

  it('a rule naming only a host covers every port of that host', () => {
    expect(policy.check('net', 'api.example.com:443').effect).toBe('allow')
    expect(policy.check('net', 'api.example.com:8080').effect).toBe('allow')
    expect(policy.check('net', 'api.example.com').effect).toBe('allow')
  })

  it('a rule with a port covers only that port', () => {
    expect(policy.check('net', 'db.local:5432').effect).toBe('allow')
    expect(policy.check('net', 'db.local:5433').effect).toBe('deny')
  })

  it('hosts are case-insensitive and a trailing dot changes nothing', () => {
    expect(policy.check('net', 'API.Example.COM.:443').effect).toBe('allow')
    expect(policy.check('net', 'x.EVIL.test').effect).toBe('deny')
  })

  it('refuses targets that are not a host', () => {
    expect(policy.check('net', 'api.example.com/path').effect).toBe('deny')
    expect(policy.check('net', 'a b').effect).toBe('deny')
    expect(Policy.permissive().check('net', '').effect).toBe('deny')
  })
})

describe('builders', () => {
  it('are immutable: each returns a new policy', () => {
    const base = Policy.tiered()
    const extended = base.layer('x').denyExec('rm*')
    expect(base.checkExec(['rm']).effect).toBe('ask')
    expect(extended.checkExec(['rm']).effect).toBe('deny')
    expect(base.toSpec().layers.map((l) => l.name)).toEqual(['builtin-secrets'])
  })

  it('offer per-act shorthands', () => {
    const policy = Policy.strict()
      .layer('t')
      .allowExec('a')
      .askExec('b')
      .allowRead('r1')
      .askRead('r2')
      .allowWrite('w1')
      .askWrite('w2')
      .allowNet('n1')
      .askNet('n2')
    expect([policy.checkExec(['a']).effect, policy.checkExec(['b']).effect]).toEqual(['allow', 'ask'])
    expect([policy.check('read', 'r1').effect, policy.check('read', 'r2').effect]).toEqual(['allow', 'ask'])
    expect([policy.check('write', 'w1').effect, policy.check('write', 'w2').effect]).toEqual(['allow', 'ask'])
    expect([policy.check('net', 'n1').effect, policy.check('net', 'n2').effect]).toEqual(['allow', 'ask'])
    const denied = Policy.permissive().layer('t').denyExec('a').denyRead('r').denyWrite('w').denyNet('n')
    expect(
      [
        denied.checkExec(['a']),
        denied.check('read', 'r'),
        denied.check('write', 'w'),
        denied.check('net', 'n'),
      ].map((v) => v.effect),
    ).toEqual(['deny', 'deny', 'deny', 'deny'])
  })

  it('put rules before any layer() into a layer named "policy", and layer() reopens an existing layer', () => {
    const policy = Policy.strict().allowExec('a').layer('x').allowExec('b').layer('policy').allowExec('c')
    expect(policy.toSpec().layers.map((l) => [l.name, l.rules.map((r) => r.pattern)])).toEqual([
      ['builtin-secrets', expect.any(Array)],
      ['policy', ['a', 'c']],
      ['x', ['b']],
    ])
  })

  it('withRule adds a remembered rule to its own layer without moving the current one', () => {
    const policy = Policy.tiered()
      .layer('team')
      .withRule('remembered', 'exec', 'allow', 'npm test*')
      .denyExec('npm test --bad*')
    expect(policy.checkExec(['npm', 'test'])).toMatchObject({ effect: 'allow', layer: 'remembered' })
    expect(policy.checkExec(['npm', 'test', '--bad'])).toMatchObject({ effect: 'deny', layer: 'team' })
  })

  it('reject bad acts, effects and patterns with a PolicyError', () => {
    expect(() => Policy.tiered().allow('exec', '')).toThrow(PolicyError)
    expect(() => Policy.tiered().allow('fly' as never, 'x')).toThrow(/not an act/)
    expect(() => Policy.tiered().withRule('r', 'exec', 'maybe' as never, 'x')).toThrow(/not an effect/)
    expect(() => Policy.tiered().layer('')).toThrow(PolicyError)
  })
})

describe('specs', () => {
  const policy = Policy.tiered()
    .layer('ops')
    .denyExec('git push*')
    .withReadOnlyCommands()
    .withApprovers(['alice', 'bob'], 'unsigned')
    .withDefault('net', 'ask')

  it('round-trip through JSON and fromSpec', () => {
    const spec = JSON.parse(JSON.stringify(policy.toSpec()))
    const again = Policy.fromSpec(spec)
    expect(again.toSpec()).toEqual(policy.toSpec())
    expect(again.approvers).toEqual(['alice', 'bob'])
    expect(again.checkExec(['git', 'push']).effect).toBe('deny')
    expect(again.checkExec(['ls']).effect).toBe('allow')
    expect(again.check('net', 'x.test').effect).toBe('ask')
  })

  it('an absent or empty approver list means anyone', () => {
    expect(Policy.tiered().approvers).toEqual([])
    expect(Policy.fromSpec({ preset: 'tiered', approvers: [] }).approvers).toEqual([])
    expect(Policy.tiered().toSpec()).not.toHaveProperty('approvers')
  })

  it('start from a preset and refine it', () => {
    const spec = {
      preset: 'tiered',
      defaults: { exec: 'deny' },
      layers: [{ name: 'dev', rules: [{ act: 'exec', effect: 'allow', pattern: 'npm test*' }] }],
    }
    const built = Policy.fromSpec(spec)
    expect(built.checkExec(['npm', 'test']).effect).toBe('allow')
    expect(built.checkExec(['make']).effect).toBe('deny')
    expect(built.check('read', '.env').effect).toBe('deny')
  })

  it.each([
    [
      { preset: 'tiered', layers: [{ name: 'x', rules: [{ act: 'exec', effect: 'allow' }] }] },
      'layers[0].rules[0].pattern',
    ],
    [
      { preset: 'tiered', layers: [{ name: 'x', rules: [{ act: 'run', effect: 'allow', pattern: 'a' }] }] },
      'layers[0].rules[0].act',
    ],
    [
      { preset: 'tiered', layers: [{ name: 'x', rules: [{ act: 'exec', effect: 'maybe', pattern: 'a' }] }] },
      'layers[0].rules[0].effect',
    ],
    [
      { preset: 'tiered', layers: [{ name: 'x', rules: [{ act: 'exec', effect: 'allow', pattern: '' }] }] },
      'layers[0].rules[0].pattern',
    ],
    [{ preset: 'tiered', layers: [{ name: 'x', rules: [], extra: 1 }] }, 'layers[0]'],
    [{ preset: 'tiered', approvers: [''] }, 'approvers[0]'],
    [{ preset: 'loose' }, 'preset'],
    [{ defaults: { read: 'allow', write: 'ask', exec: 'ask' } }, 'defaults.net'],
    [
      {
        preset: 'tiered',
        layers: [
          { name: 'a', rules: [] },
          { name: 'a', rules: [] },
        ],
      },
      'layers[1].name',
    ],
    [{ preset: 'tiered', include: ['everything'] }, 'include[0]'],
    ['not an object', '(the policy itself)'],
  ])('throws a PolicyError naming the bad field (%#)', (spec, field) => {
    let error: unknown
    try {
      Policy.fromSpec(spec)
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(PolicyError)
    expect((error as PolicyError).field).toBe(field)
    expect((error as PolicyError).message).toContain(field)
  })

  it('checks rule examples: match must be decided by the rule, not_match must not', () => {
    const layer = (rule: object) => ({
      preset: 'tiered',
      layers: [{ name: 'ops', rules: [{ act: 'exec', effect: 'deny', pattern: 'git push*', ...rule }] }],
    })
    expect(() =>
      Policy.fromSpec(
        layer({
          match: ['git push origin', 'env git push', 'sh -c "git status; git push"'],
          not_match: ['git status'],
        }),
      ),
    ).not.toThrow()
    expect(() => Policy.fromSpec(layer({ match: ['git status'] }))).toThrow(
      /layers\[0\]\.rules\[0\]\.match\[0\]: the rule deny exec "git push\*" should decide "git status"/,
    )
    expect(() => Policy.fromSpec(layer({ not_match: ['git push'] }))).toThrow(/not_match\[0\]/)
    const read = {
      preset: 'tiered',
      layers: [
        {
          name: 'r',
          rules: [
            { act: 'read', effect: 'deny', pattern: 'secrets/*', match: ['secrets/a'], not_match: ['src/a'] },
          ],
        },
      ],
    }
    expect(() => Policy.fromSpec(read)).not.toThrow()
  })
})
