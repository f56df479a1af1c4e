/**
 * The `mcp` act: calls of MCP servers' tools judged by the same layered policy as commands — the tool
 * (`server.tool`) and the tool with its arguments — with remember, the presets' defaults, read-only
 * annotations only where the policy trusts them, the floor's ceilings, and definitions pinned up front.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { describe, expect, it, onTestFinished } from 'vitest'
import { judge, mcpNoRetry } from '../../../src/judge/index.js'
import { floorOf, Policy, PolicyError, rememberRule } from '../../../src/policy/index.js'
import { validateToolCall } from '../../../src/tools/index.js'
import { workspaceView } from '../../../src/workspace/index.js'

const DIGEST = 'a'.repeat(64)
const base = { read: 'allow', write: 'allow', exec: 'allow', net: 'deny' } as const

describe('the mcp act', () => {
  it('denies MCP calls in a policy that never names them, and keeps such a policy digest as it was', () => {
    const unstated = Policy.fromSpec({ defaults: base })
    expect(unstated.defaultFor('mcp')).toBe('deny')
    expect(unstated.toSpec().defaults).toEqual(base)
    expect(Policy.fromSpec({ defaults: { ...base, mcp: 'deny' } }).digest).toBe(unstated.digest)
    expect(Policy.fromSpec({ defaults: { ...base, mcp: 'ask' } }).digest).not.toBe(unstated.digest)
    expect(unstated.checkMcp('fs.read_file', '{}').effect).toBe('deny')
  })

  it('gives each preset its MCP default: permissive allows, tiered and strict deny', () => {
    expect(Policy.permissive().defaultFor('mcp')).toBe('allow')
    expect(Policy.tiered().defaultFor('mcp')).toBe('deny')
    // So a floor written as `preset: tiered` before MCP existed still loads as it did (it asks nothing new).
    expect(Policy.tiered().toSpec().defaults).not.toHaveProperty('mcp')
    expect(Policy.strict().defaultFor('mcp')).toBe('deny')
    // The floor `tether dev` wrote before MCP, with no approvers, still loads: it asks nothing new.
    const old = Policy.fromSpec({
      preset: 'tiered',
      defaults: { read: 'allow', write: 'allow', exec: 'allow', net: 'allow' },
    })
    expect(() => floorOf(old, 'floor.yaml')).not.toThrow()
  })

  it('matches a rule on the tool, whatever the arguments; deny and ask generously, allow strictly', () => {
    const policy = Policy.strict()
      .layer('operator')
      .ask('mcp', 'github.create_*')
      .deny('mcp', 'FS.Delete_*')
      .allow('mcp', 'FS.read_file')
      .allow('mcp', 'fs.list_*')
    const verdict = policy.checkMcp('github.create_issue', '{"title":"x"}')
    expect(verdict).toMatchObject({ effect: 'ask', rule: 'github.create_*', layer: 'operator', act: 'mcp' })
    expect(verdict.target).toBe('github.create_issue {"title":"x"}')
    expect(verdict.reason).toBe(
      'Calling "github.create_issue {"title":"x"}" needs approval: rule "github.create_*" in layer "operator".',
    )
    expect(policy.checkMcp('fs.delete_file', '{}')).toMatchObject({ effect: 'deny', rule: 'FS.Delete_*' })
    // An allow names the tool as it is spelled.
    const unmatched = policy.checkMcp('fs.read_file', '{}')
    expect(unmatched.effect).toBe('deny')
    expect(unmatched.rule).toBeUndefined()
    expect(policy.checkMcp('fs.list_directory', '{"path":"/"}')).toMatchObject({ effect: 'allow' })
    expect(policy.check('mcp', 'fs.list_directory {"path":"/"}').effect).toBe('allow')
  })

  it('remembers a call with its exact arguments, and nothing wider', () => {
    const target = 'fs.write_file {"content":"x","path":"a.txt"}'
    expect(rememberRule('mcp', target)).toEqual({ ok: true, act: 'mcp', exact: target })
    const remembered = Policy.tiered().withDefault('mcp', 'ask').layer('remembered').allow('mcp', target)
    expect(remembered.checkMcp('fs.write_file', '{"content":"x","path":"a.txt"}').effect).toBe('allow')
    expect(remembered.checkMcp('fs.write_file', '{"content":"y","path":"a.txt"}').effect).toBe('ask')
    expect(rememberRule('mcp', 'fs.write_file {"path":"*"}')).toMatchObject({ ok: false })
    expect(rememberRule('mcp', `fs.write_file {"content":"${'x'.repeat(3_000)}"}`)).toMatchObject({
      ok: false,
      reason: expect.stringContaining('more than a remembered rule holds'),
    })
  })

  it('counts a read-only annotation only where the policy includes mcp-read-only, and only where no rule decided', () => {
    const plain = Policy.tiered().withDefault('mcp', 'ask')
    expect(plain.checkMcp('ev.echo', '{}', { readOnly: true }).effect).toBe('ask')
    const trusting = Policy.fromSpec({
      preset: 'tiered',
      defaults: { mcp: 'ask' },
      include: ['mcp-read-only'],
    })
    expect(trusting.checkMcp('ev.echo', '{}', { readOnly: true })).toMatchObject({
      effect: 'allow',
      rule: 'read-only annotation',
      layer: 'mcp-read-only',
    })
    expect(trusting.checkMcp('ev.echo', '{}').effect).toBe('ask')
    const denying = Policy.fromSpec({
      preset: 'tiered',
      include: ['mcp-read-only'],
      layers: [{ name: 'ops', rules: [{ act: 'mcp', effect: 'deny', pattern: 'ev.*' }] }],
    })
    expect(denying.checkMcp('ev.echo', '{}', { readOnly: true }).effect).toBe('deny')
  })

  it("keeps a run's MCP allows and annotations under a floor that asks", () => {
    const floor = Policy.fromSpec({ defaults: { ...base, mcp: 'ask' }, identity: 'unsigned' })
    const run = Policy.fromSpec({
      defaults: { ...base, mcp: 'allow' },
      include: ['mcp-read-only'],
      layers: [{ name: 'project', rules: [{ act: 'mcp', effect: 'allow', pattern: 'fs.*' }] }],
    })
    const effective = Policy.onFloor(floor, run, 'floor.yaml')
    expect(effective.defaultFor('mcp')).toBe('ask')
    expect(effective.checkMcp('fs.read_file', '{}').effect).toBe('ask')
    expect(effective.checkMcp('ev.echo', '{}', { readOnly: true }).effect).toBe('ask')
    expect(effective.toSpec().floor?.defaults.mcp).toBe('ask')
  })

  it('pins definitions up front per layer, and refuses a pin that is not a tool name and a digest', () => {
    const policy = Policy.fromSpec({
      preset: 'tiered',
      layers: [
        { name: 'operator', pins: { 'github.create_issue': DIGEST }, rules: [] },
        { name: 'project', pins: { 'github.create_issue': 'b'.repeat(64) }, rules: [] },
      ],
    })
    expect(policy.pinsFor('github.create_issue')).toEqual([DIGEST, 'b'.repeat(64)])
    expect(policy.pinsFor('github.list_issues')).toEqual([])
    expect(Policy.fromSpec(policy.toSpec()).digest).toBe(policy.digest)
    const bad = (pins: unknown) => () =>
      Policy.fromSpec({ preset: 'tiered', layers: [{ name: 'x', pins, rules: [] }] })
    expect(bad({ 'not a tool': DIGEST })).toThrow(PolicyError)
    expect(bad({ 'gh.create': 'abc' })).toThrow(
      /layers\[0\]\.pins\.gh\.create: expected a hex SHA-256 digest/,
    )
  })
})

describe('judging a call of an MCP tool', () => {
  const call = (name: string, args: unknown) => {
    const validated = validateToolCall({ id: 'c', name, args })
    if (!validated.ok) throw new Error(validated.error)
    return validated.call
  }

  it('refuses a tool the run does not offer, naming why', async () => {
    const folder = await mkdtemp(`${tmpdir()}/tether-mcp-judge-`)
    onTestFinished(() => rm(folder, { recursive: true, force: true }))
    const view = workspaceView(folder)
    const policy = Policy.permissive()
    expect(judge(policy, view, call('fs.read_file', { path: 'a' }), [])).toMatchObject({
      act: 'mcp',
      effect: 'deny',
      rule: 'mcp tool not offered',
      layer: 'builtin',
    })
    const withheld = {
      offered: false as const,
      why: 'fs.read_file is withheld: its definition is not the one reviewed',
    }
    expect(judge(policy, view, call('fs.read_file', {}), [], withheld).reason).toBe(withheld.why)
    const asked = judge(
      Policy.tiered().withDefault('mcp', 'ask'),
      view,
      call('fs.write_file', { path: 'a', content: 'x' }),
      [],
      {
        offered: true,
      },
    )
    expect(asked).toMatchObject({
      effect: 'ask',
      target: 'fs.write_file {"content":"x","path":"a"}',
      remember: { ok: true, act: 'mcp', exact: 'fs.write_file {"content":"x","path":"a"}' },
    })
  })
})

describe("an MCP call on the contract's noRetry list", () => {
  it('matches a pattern as an mcp deny rule would: the tool, generously, or the tool with its arguments', () => {
    const patterns = ['git push*', 'github.create_release', 'deploy.*', 'fs.write_file {"path":"/etc/*']
    expect(mcpNoRetry(patterns, 'github.create_release', '{"tag":"v1"}')).toBe(true)
    expect(mcpNoRetry(patterns, 'GitHub.Create_Release', '{}')).toBe(true)
    expect(mcpNoRetry(patterns, 'deploy.prod', '{}')).toBe(true)
    expect(mcpNoRetry(patterns, 'fs.write_file', '{"path":"/etc/hosts"}')).toBe(true)
    expect(mcpNoRetry(patterns, 'fs.write_file', '{"path":"/tmp/x"}')).toBe(false)
    expect(mcpNoRetry(patterns, 'github.create_issue', '{}')).toBe(false)
    expect(mcpNoRetry([], 'deploy.prod', '{}')).toBe(false)
  })
})
