import { generateKeyPairSync } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { formatPublicKey, fromBase64 } from '../../../src/identity/index.js'
import {
  builtinFloor,
  type Floor,
  floorOf,
  loadFloor,
  onFloor,
  Policy,
  PolicyError,
} from '../../../src/policy/index.js'

function publicKey(): string {
  const { publicKey: key } = generateKeyPairSync('ed25519')
  return formatPublicKey(fromBase64((key.export({ format: 'jwk' }) as { x: string }).x) as Uint8Array)
}

const alice = publicKey()
const alice2 = publicKey()
const bob = publicKey()
const mallory = publicKey()

const signedFloor: Floor = floorOf(
  Policy.fromSpec({
    defaults: { read: 'allow', write: 'allow', exec: 'allow', net: 'deny' },
    layers: [{ name: 'operator', rules: [{ act: 'exec', effect: 'ask', pattern: 'kubectl*' }] }],
    approvers: [
      { name: 'alice', keys: [alice, alice2] },
      { name: 'bob', keys: [bob] },
    ],
  }),
  '/etc/tether/floor.yaml',
)

describe('a run on the built-in floor', () => {
  it('keeps the sandbox on and the secrets denied, whatever the run says', () => {
    const permissive = Policy.permissive().toSpec()
    const effective = onFloor(builtinFloor(), permissive)
    expect(effective.sandbox.mode).toBe('enforce')
    expect(effective.check('read', 'config/.env')).toMatchObject({ effect: 'deny', layer: 'builtin-secrets' })
    expect(effective.checkExec(['rm', '-rf', '/']).effect).toBe('allow')

    const off = Policy.permissive().layer('operator').withSandbox('off').toSpec()
    expect(() => onFloor(builtinFloor(), off)).toThrow(
      /^the run's policy: layer "operator" turns the sandbox off \(sandbox\.mode\); only the worker's floor may loosen the sandbox.*\(the worker's floor: built-in\)$/,
    )
    const wider = Policy.permissive()
      .layer('project')
      .withSandbox({ writable: ['/srv'] })
      .toSpec()
    expect(() => onFloor(builtinFloor(), wider)).toThrow(/makes host paths writable \(sandbox\.writable\)/)
  })

  it('lets the run tighten: its denies and asks add to the floor’s', () => {
    const run = Policy.permissive().layer('project').denyExec('curl*').askExec('npm install*').toSpec()
    const effective = onFloor(builtinFloor(), run)
    expect(effective.checkExec(['curl', 'x']).effect).toBe('deny')
    expect(effective.checkExec(['npm', 'install', 'left-pad']).effect).toBe('ask')
    expect(effective.layers.map((layer) => [layer.name, layer.origin])).toEqual([
      ['builtin-secrets', 'floor'],
      ['project', 'run'],
    ])
  })

  it('leaves approvers to the run when the floor names none', () => {
    const run = Policy.tiered()
      .withApprovers([{ name: 'carol', keys: [mallory] }])
      .toSpec()
    expect(onFloor(builtinFloor(), run).identity).toEqual({
      mode: 'signed',
      approvers: [{ name: 'carol', keys: [mallory] }],
    })
  })

  it('refuses a run that claims a floor of its own, or a layer under a name of tether’s', () => {
    const effective = onFloor(builtinFloor(), Policy.permissive().toSpec())
    expect(() => onFloor(builtinFloor(), effective.toSpec())).toThrow(
      /the run's policy floor: stands on a floor/,
    )
    expect(() =>
      onFloor(builtinFloor(), {
        preset: 'permissive',
        layers: [{ name: 'builtin-x', sandbox: 'off', rules: [] }],
      }),
    ).toThrow(/layers\[0\]\.name: layer names starting with "builtin-" are reserved/)
  })
})

describe('a run on an operator’s floor', () => {
  it('cannot remove the floor’s denies and asks, nor pre-allow what the floor’s default asks', () => {
    const floor = floorOf(
      Policy.fromSpec({
        defaults: { read: 'allow', write: 'allow', exec: 'ask', net: 'deny' },
        layers: [{ name: 'operator', rules: [{ act: 'exec', effect: 'deny', pattern: 'rm*' }] }],
        identity: 'unsigned',
      }),
      'floor.yaml',
    )
    const run = Policy.permissive().layer('project').allowExec('rm*').allowExec('npm test*').toSpec()
    const effective = onFloor(floor, run)
    expect(effective.checkExec(['rm', '-rf', 'dist'])).toMatchObject({
      effect: 'deny',
      rule: 'rm*',
      layer: 'operator',
    })
    expect(effective.checkExec(['rm', '-rf', 'dist']).reason).toContain(`(the worker's floor)`)
    const test = effective.checkExec(['npm', 'test'])
    expect(test.effect).toBe('ask')
    expect(test.reason).toMatch(
      /is allowed by rule "npm test\*" in layer "project", but the worker's floor makes exec ask/,
    )
    expect(effective.check('net', 'example.com:443').effect).toBe('deny')
    // The read-only list is the run's allow too: capped by the floor's exec default.
    const readOnly = onFloor(floor, Policy.permissive().withReadOnlyCommands().toSpec())
    expect(readOnly.checkExec(['ls']).effect).toBe('ask')
  })

  it('keeps its approvers: a run may only narrow the list, never add a name, a key or unsigned answers', () => {
    expect(onFloor(signedFloor, Policy.tiered().toSpec()).identity.approvers.map((a) => a.name)).toEqual([
      'alice',
      'bob',
    ])
    const narrowed = onFloor(
      signedFloor,
      Policy.tiered()
        .withApprovers([{ name: 'alice', keys: [alice] }])
        .toSpec(),
    )
    expect(narrowed.identity).toEqual({ mode: 'signed', approvers: [{ name: 'alice', keys: [alice] }] })

    expect(() =>
      onFloor(
        signedFloor,
        Policy.tiered()
          .withApprovers([{ name: 'mallory', keys: [mallory] }])
          .toSpec(),
      ),
    ).toThrow(
      /^the run's policy approvers\[0\]: "mallory" is not an approver on the floor; .* \(the worker's floor: \/etc\/tether\/floor\.yaml\)$/,
    )
    expect(() =>
      onFloor(
        signedFloor,
        Policy.tiered()
          .withApprovers([{ name: 'alice', keys: [mallory] }])
          .toSpec(),
      ),
    ).toThrow(/approvers\[0\]\.keys\[0\]: this key is not one of alice's keys on the floor/)
    expect(() => onFloor(signedFloor, Policy.tiered().withApprovers(['alice'], 'unsigned').toSpec())).toThrow(
      /the run's policy identity: asks for unsigned answers, but the floor requires signed ones/,
    )
  })

  it('keeps the floor’s two-person rules satisfiable', () => {
    const floor = floorOf(
      Policy.fromSpec({
        preset: 'tiered',
        layers: [
          { name: 'operator', rules: [{ act: 'exec', effect: 'ask', pattern: 'deploy*', approvals: 2 }] },
        ],
        approvers: [
          { name: 'alice', keys: [alice] },
          { name: 'bob', keys: [bob] },
        ],
      }),
    )
    expect(() =>
      onFloor(
        floor,
        Policy.tiered()
          .withApprovers([{ name: 'bob', keys: [bob] }])
          .toSpec(),
      ),
    ).toThrow(/leaves 1 approver, but the floor's rule "deploy\*" needs 2/)
  })

  it('alone may turn the sandbox off (macOS and Windows workers)', () => {
    const floor = floorOf(Policy.permissive().layer('operator').withSandbox('off'), 'mac-floor.yaml')
    const effective = onFloor(floor, Policy.tiered().layer('project').allowExec('npm test*').toSpec())
    expect(effective.sandbox).toMatchObject({ mode: 'off', modeSetBy: 'operator' })
    // A run may turn it back on.
    expect(onFloor(floor, Policy.tiered().layer('p').withSandbox('enforce').toSpec()).sandbox.mode).toBe(
      'enforce',
    )
  })

  it('names one exact policy by digest, and round-trips with what the floor decided', () => {
    const run = Policy.permissive().layer('project').allowExec('npm test*').toSpec()
    const floor = floorOf(
      Policy.fromSpec({
        defaults: { read: 'allow', write: 'allow', exec: 'ask', net: 'deny' },
        identity: 'unsigned',
      }),
    )
    const effective = onFloor(floor, run)
    const again = Policy.fromSpec(JSON.parse(JSON.stringify(effective.toSpec())))
    expect(again.digest).toBe(effective.digest)
    expect(again.digest).toMatch(/^[0-9a-f]{64}$/)
    expect(again.checkExec(['npm', 'test']).effect).toBe('ask')
    expect(onFloor(builtinFloor(), run).digest).not.toBe(effective.digest)
  })
})

describe('floor files', () => {
  it('load like policies, and refuse asks nobody may answer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-floor-'))
    try {
      const good = join(dir, 'floor.yaml')
      await writeFile(
        good,
        `defaults: { read: allow, write: allow, exec: allow, net: deny }\nlayers:\n  - name: operator\n    sandbox: enforce\n    rules: [{ act: exec, effect: deny, pattern: "rm*" }]\n`,
      )
      const floor = loadFloor(good)
      expect(floor.source).toBe(good)
      const asks = join(dir, 'asks.yaml')
      await writeFile(asks, `preset: tiered\n`)
      expect(() => loadFloor(asks)).toThrow(
        /asks\.yaml: approvers: the floor asks, but says nobody may answer/,
      )
      expect(() => loadFloor(join(dir, 'missing.yaml'))).toThrow(
        /missing\.yaml: cannot read the floor file \(no such file\)/,
      )
      expect(() => loadFloor('/dev/zero')).toThrow(/\/dev\/zero: the floor file is not a regular file/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('approver keys', () => {
  it('are accepted in one spelling only, so one key cannot pass for two', () => {
    const bytes = fromBase64(alice.slice('ed25519:'.length)) as Uint8Array
    const urlSafe = `ed25519:${Buffer.from(bytes).toString('base64url')}`
    expect(urlSafe).not.toBe(alice)
    expect(() => Policy.tiered().withApprovers([{ name: 'alice', keys: [urlSafe] }])).toThrow(PolicyError)
    expect(() =>
      Policy.fromSpec({ preset: 'tiered', approvers: [{ name: 'alice', keys: [urlSafe] }] }),
    ).toThrow(
      new RegExp(
        `approvers\\[0\\]\\.keys\\[0\\]: write this key in standard base64 with padding.*${alice.replace(/[+/]/g, '\\$&')}`,
      ),
    )
  })
})
