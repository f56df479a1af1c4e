import { generateKeyPairSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { formatPublicKey, fromBase64 } from '../../../src/identity/index.js'
import { Policy, PolicyError, parsePolicyText } from '../../../src/policy/index.js'

function publicKey(): string {
  const { publicKey: key } = generateKeyPairSync('ed25519')
  return formatPublicKey(fromBase64((key.export({ format: 'jwk' }) as { x: string }).x) as Uint8Array)
}

const alice = publicKey()
const bob = publicKey()

describe('approvers and identity in a policy', () => {
  it('lists approvers with keys: decisions must be signed', () => {
    const policy = Policy.fromSpec({
      preset: 'tiered',
      approvers: [
        { name: 'alice', keys: [alice] },
        { name: 'bob', keys: [bob] },
      ],
    })
    expect(policy.identity).toEqual({
      mode: 'signed',
      approvers: [
        { name: 'alice', keys: [alice] },
        { name: 'bob', keys: [bob] },
      ],
    })
    expect(policy.approvers).toEqual(['alice', 'bob'])
    expect(Policy.fromSpec(JSON.parse(JSON.stringify(policy.toSpec()))).identity).toEqual(policy.identity)
  })

  it('does not load approvers without keys unless identity: unsigned says names are trusted', () => {
    expect(() => Policy.fromSpec({ preset: 'tiered', approvers: ['alice'] })).toThrow(
      /approvers\[0\]: "alice" has no key; add one \(`tether keys new alice` prints the entry to paste\) or set identity: unsigned/,
    )
    const unsigned = Policy.fromSpec({ preset: 'tiered', identity: 'unsigned', approvers: ['alice', 'bob'] })
    expect(unsigned.identity).toEqual({
      mode: 'unsigned',
      approvers: [
        { name: 'alice', keys: [] },
        { name: 'bob', keys: [] },
      ],
    })
    expect(unsigned.toSpec()).toMatchObject({ identity: 'unsigned', approvers: ['alice', 'bob'] })
    // No approvers: anyone may answer, unsigned (and the audit says so).
    expect(Policy.tiered().identity).toEqual({ mode: 'unsigned', approvers: [] })
  })

  it.each([
    [{ approvers: [' alice'], identity: 'unsigned' }, /approvers\[0\]: an approver name is letters/],
    [{ approvers: [''], identity: 'unsigned' }, /approvers\[0\]/],
    [{ approvers: ['alice', 'alice'], identity: 'unsigned' }, /approvers\[1\]: "alice" is listed twice/],
    [
      { approvers: [{ name: 'alice', keys: ['ed25519:AAAA'] }] },
      /approvers\[0\]\.keys\[0\]: an Ed25519 public key is 32 bytes/,
    ],
    [
      { approvers: [{ name: 'alice', keys: [`rsa:${alice.slice(8)}`] }] },
      /approvers\[0\]\.keys\[0\]: a key is written "ed25519:"/,
    ],
    [
      {
        approvers: [
          { name: 'alice', keys: [alice] },
          { name: 'bob', keys: [alice] },
        ],
      },
      /approvers\[1\]\.keys\[0\]: this key is listed for alice already/,
    ],
    [{ identity: 'signed' }, /identity: signed identity needs approvers/],
    [{ identity: 'sometimes' }, /identity: expected one of "signed", "unsigned"/],
  ])('refuses %j, naming the field', (spec, message) => {
    expect(() => Policy.fromSpec({ preset: 'tiered', ...spec })).toThrow(PolicyError)
    expect(() => Policy.fromSpec({ preset: 'tiered', ...spec })).toThrow(message)
  })

  it('a two-person rule: an ask rule may need several distinct approvers', () => {
    const spec = {
      preset: 'tiered',
      approvers: [
        { name: 'alice', keys: [alice] },
        { name: 'bob', keys: [bob] },
      ],
      layers: [{ name: 'ops', rules: [{ act: 'exec', effect: 'ask', pattern: 'git push*', approvals: 2 }] }],
    }
    const policy = Policy.fromSpec(spec)
    const verdict = policy.checkExec(['sh', '-c', 'npm test && git push origin main'])
    expect(verdict.effect).toBe('ask')
    expect(policy.approvalsRequired(verdict)).toBe(2)
    expect(policy.approvalsRequired(policy.checkExec(['npm', 'install']))).toBe(1)
    expect(() =>
      Policy.fromSpec({
        ...spec,
        layers: [{ name: 'ops', rules: [{ act: 'exec', effect: 'allow', pattern: 'x', approvals: 2 }] }],
      }),
    ).toThrow(/layers\[0\]\.rules\[0\]\.approvals: only an ask rule can require approvals/)
    expect(() =>
      Policy.fromSpec({
        ...spec,
        layers: [{ name: 'ops', rules: [{ act: 'exec', effect: 'ask', pattern: 'x', approvals: 3 }] }],
      }),
    ).toThrow(/needs 3 distinct approvers but the policy lists 2/)
    const built = Policy.tiered()
      .withApprovers([
        { name: 'alice', keys: [alice] },
        { name: 'bob', keys: [bob] },
      ])
      .layer('ops')
      .askExec('kubectl apply*', { approvals: 2 })
    expect(built.approvalsRequired(built.checkExec(['kubectl', 'apply', '-f', 'x.yaml']))).toBe(2)
  })

  it('refuses a JSON policy that gives a key twice, as YAML does', () => {
    const text = '{"preset": "tiered", "defaults": {"exec": "deny"},\n "defaults": {"exec": "allow"}}'
    expect(() => parsePolicyText(text, 'policy.json')).toThrow(
      /policy\.json: not valid JSON: a key appears twice in one object: Map keys must be unique at line 2/,
    )
    expect(() =>
      parsePolicyText('preset: tiered\ndefaults: {exec: deny}\ndefaults: {exec: allow}\n', 'policy.yaml'),
    ).toThrow(/not valid YAML/)
  })
})
