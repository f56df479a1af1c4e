/**
 * A policy is bounded when it loads: its patterns, its rules, its examples, what it compiles to, and the
 * file it comes from — each refused with one line that names the limit, before the work it would cost.
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  builtinFloor,
  floorOf,
  loadFloor,
  loadPolicyFile,
  onFloor,
  POLICY_LIMITS,
  Policy,
  PolicyError,
  rememberRule,
} from '../../../src/policy/index.js'
import { ALL_EFFECTS, RuleIndex } from '../../../src/policy/rules.js'

const rule = (pattern: string, extra: Record<string, unknown> = {}) => ({
  act: 'exec',
  effect: 'allow',
  pattern,
  ...extra,
})
const specOf = (rules: unknown[]) => ({ preset: 'tiered', layers: [{ name: 'team', rules }] })
const spec = (...rules: unknown[]) => specOf(rules)

/** The PolicyError `load` throws: one line, naming `field`. */
function refusal(load: () => unknown, field: string): string {
  let error: unknown
  try {
    load()
  } catch (caught) {
    error = caught
  }
  expect(error).toBeInstanceOf(PolicyError)
  const { message, field: named } = error as PolicyError
  expect(message).not.toContain('\n')
  expect(named).toBe(field)
  return message
}

describe('policy limits', () => {
  it('refuses a pattern of 1,000,000 characters by the pattern limit', () => {
    const message = refusal(
      () => Policy.fromSpec(spec(rule('a'.repeat(1_000_000)))),
      'layers[0].rules[0].pattern',
    )
    expect(message).toBe(
      'layers[0].rules[0].pattern: a pattern of 1,000,000 characters; the pattern limit is 4,096',
    )
  })

  it('refuses 200,000 rules by the rule limit, before parsing them', () => {
    const rules = Array.from({ length: 200_000 }, (_, i) => rule(`tool-${i} --flag`))
    const message = refusal(() => Policy.fromSpec(specOf(rules)), 'layers')
    expect(message).toBe('layers: 200,000 rules; the rule limit is 10,000')
  })

  it('refuses rules that would compile too large by the compiled-size limit', () => {
    const rules = Array.from({ length: 5_000 }, (_, i) => rule(`tool-${i} ${'x'.repeat(4_000)}`))
    const message = refusal(() => Policy.fromSpec(specOf(rules)), 'layers')
    expect(message).toMatch(
      /^layers: the rules would take about [\d.]+ MiB compiled, more than the compiled-size limit of 64 MiB/,
    )
  })

  it('refuses too many layers and too many examples', () => {
    const layers = Array.from({ length: 101 }, (_, i) => ({ name: `l${i}`, rules: [] }))
    expect(refusal(() => Policy.fromSpec({ preset: 'tiered', layers }), 'layers')).toBe(
      'layers: 101 layers; the layer limit is 100',
    )
    const examples = Array.from({ length: 1_001 }, (_, i) => `npm test ${i}`)
    expect(refusal(() => Policy.fromSpec(spec(rule('npm test*', { match: examples }))), 'layers')).toBe(
      'layers: 1,001 match and not_match examples; the example limit is 1,000',
    )
  })

  it('refuses the floor and a run together over a limit, each within it alone', () => {
    const half = Array.from({ length: 6_000 }, (_, i) => rule(`tool-${i}`))
    const floor = floorOf(
      Policy.fromSpec({
        defaults: { read: 'allow', write: 'allow', exec: 'allow', net: 'allow' },
        layers: [{ name: 'operator', rules: half }],
      }),
      '/etc/tether/floor.yaml',
    )
    const message = refusal(() => onFloor(floor, specOf(half)), 'layers')
    // The run's tiered preset brings its secret denies too.
    expect(message).toMatch(
      /^the run's policy on the worker's floor \(\/etc\/tether\/floor\.yaml\): 12,\d{3} rules; the rule limit is 10,000$/,
    )
  })

  it('takes a policy at the limits', () => {
    const rules = Array.from({ length: 500 }, (_, i) =>
      rule(`tool-${i} ${'x'.repeat(POLICY_LIMITS.patternChars - 20)}`),
    )
    const policy = Policy.fromSpec(specOf(rules))
    expect(policy.checkExec(['tool-7', 'x'.repeat(POLICY_LIMITS.patternChars - 20)]).effect).toBe('allow')
    expect(policy.compiledSize).toBeLessThanOrEqual(POLICY_LIMITS.compiledBytes)
  })

  it('does not remember a rule longer than a pattern may be', () => {
    const remembered = rememberRule('exec', ['npm', 'test', 'x'.repeat(5_000)])
    expect(remembered).toEqual({
      ok: false,
      reason: 'the rule would be 5,009 characters; the pattern limit is 4,096',
    })
  })
})

describe('what a rule index costs per character', () => {
  it('compiles a 1,000,000-character literal into a few nodes, not a node per character', () => {
    // Each node of the old trie carried a 128-slot array: 1.39 GB for this one pattern.
    const before = process.memoryUsage().heapUsed
    const index = new RuleIndex()
    const long = `deploy ${'a'.repeat(1_000_000)}`
    index.add(long, 'allow', 0)
    index.add(`${long}*`, 'ask', 1)
    index.add(`deploy ${'a'.repeat(500_000)}b`, 'deny', 2)
    const grown = process.memoryUsage().heapUsed - before
    expect(grown).toBeLessThan(64 * 1024 * 1024)
    const found = [Infinity, Infinity, Infinity]
    index.scan(long, ALL_EFFECTS, found)
    expect(found).toEqual([Infinity, 1, 0])
    const other = [Infinity, Infinity, Infinity]
    index.scan(`deploy ${'a'.repeat(500_000)}b`, ALL_EFFECTS, other)
    expect(other).toEqual([2, Infinity, Infinity])
  })
})

describe('names', () => {
  it.each([
    ['a right-to-left override', 'deploy\u202eyaml'],
    ['a zero-width space', 'team\u200brules'],
    ['a line feed', 'team\nrules'],
    ['a no-break space', 'team\u00a0rules'],
  ])('refuses a layer name holding %s', (_, name) => {
    const message = refusal(
      () => Policy.fromSpec({ preset: 'tiered', layers: [{ name, rules: [] }] }),
      'layers[0].name',
    )
    expect(message).toMatch(/^layers\[0\]\.name: a layer name holds U\+[0-9A-F]{4} at character \d+; /)
  })

  it('refuses a pattern holding a bidirectional control, and names where it is', () => {
    const message = refusal(
      () => Policy.fromSpec(spec(rule('git push \u2066origin'))),
      'layers[0].rules[0].pattern',
    )
    expect(message).toBe(
      'layers[0].rules[0].pattern: a pattern holds U+2066 at character 10; write it without control, invisible, bidirectional or unusual space characters',
    )
  })

  // Policies are stored as jsonb, which refuses both: they are refused when the policy loads, by field.
  it.each([
    ['a pattern', spec(rule('rm \ud800*')), 'layers[0].rules[0].pattern', 'U+D800 at character 4'],
    [
      'a layer name',
      { preset: 'tiered', layers: [{ name: 'team\udc00', rules: [] }] },
      'layers[0].name',
      'U+DC00 at character 5',
    ],
    ['an approver', { preset: 'tiered', approvers: ['al\ud83d'] }, 'approvers[0]', 'U+D83D at character 3'],
    [
      'a sandbox path',
      { preset: 'tiered', layers: [{ name: 'team', sandbox: { hide: ['/srv/\0key'] }, rules: [] }] },
      'layers[0].sandbox.hide[0]',
      'a NUL character at character 6',
    ],
    ['a field name', { preset: 'tiered', 'x\ud800': 1 }, '(the policy itself)', 'the field name "x\\ud800"'],
  ])('refuses %s holding half a UTF-16 pair or a NUL, naming where', (_, policy, field, found) => {
    const message = refusal(() => Policy.fromSpec(policy), field)
    expect(message.startsWith(`${field}: `)).toBe(true)
    expect(message).toContain(found)
  })

  it('keeps a character written as a whole UTF-16 pair', () => {
    const policy = Policy.fromSpec(spec(rule('echo \ud83d\ude00*')))
    expect(policy.checkExec(['echo', '\u{1f600}', 'x']).effect).toBe('allow')
  })

  it('reports a misspelt rule field as unknown, not the field it leaves missing', () => {
    const message = refusal(
      () => Policy.fromSpec(spec({ act: 'exec', efect: 'allow', pattern: 'ls' })),
      'layers[0].rules[0]',
    )
    expect(message).toBe('layers[0].rules[0]: unknown field "efect"')
  })
})

describe('policy files', () => {
  let dir: string
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tether-policy-limits-'))
  })
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('reads a JSON policy after a byte-order mark', async () => {
    const file = join(dir, 'bom.json')
    await writeFile(file, `\uFEFF${JSON.stringify(spec(rule('npm test')))}`)
    expect((await loadPolicyFile(file)).checkExec(['npm', 'test']).effect).toBe('allow')
  })

  it('refuses /dev/zero, a pipe and a directory without reading them', async () => {
    await expect(loadPolicyFile('/dev/zero')).rejects.toThrow(
      '/dev/zero: the policy file is not a regular file (a device, a pipe or a socket); point at a file',
    )
    const fifo = join(dir, 'policy.fifo')
    execFileSync('mkfifo', [fifo])
    // Opening a pipe with no writer would wait forever; it is refused at once.
    await expect(loadPolicyFile(fifo)).rejects.toThrow('the policy file is not a regular file')
    await expect(loadPolicyFile(dir)).rejects.toThrow('cannot read the policy file (it is a directory)')
    expect(() => loadFloor('/dev/zero')).toThrow('/dev/zero: the floor file is not a regular file')
  })

  it('refuses a file over the size limit by its size, before reading it', async () => {
    const file = join(dir, 'big.yaml')
    await writeFile(file, `preset: tiered\n# ${'x'.repeat(1_999_982)}\n`)
    await expect(loadPolicyFile(file)).rejects.toThrow(
      `${file}: the policy file has 2,000,000 bytes; the policy file limit is 1,048,576 bytes`,
    )
    expect(() => loadFloor(file)).toThrow('the floor file has 2,000,000 bytes')
  })

  it('still loads the built-in floor and a run on it', () => {
    expect(onFloor(builtinFloor(), spec(rule('npm test'))).checkExec(['npm', 'test']).effect).toBe('allow')
  })
})
