/**
 * The policy value: an ordered stack of named layers of allow / ask / deny rules over read, write, exec and
 * net, plus a default effect per act — its presets, builders, spec, floor, sandbox settings and approvers.
 * Immutable (every builder returns a new Policy), pure and deterministic, so it runs anywhere, including
 * inside a Temporal workflow or a local activity. How a verdict is reached is the engine's (judging.ts).
 */

import { type ExecContext, SECRET_PATTERNS, staticWords } from '../commands/index.js'
import { digestOf } from '../identity/index.js'
import { escapeText } from '../present/index.js'
import { PolicyError } from './errors.js'
import {
  type Approver,
  type ApproverIdentity,
  type ApproverSpec,
  budgetApproversOnFloor,
  checkBudgetApprovers,
  checkIdentity,
  type IdentityMode,
  identityOnFloor,
  normaliseApprovers,
} from './identity.js'
import { Judging } from './judging.js'
import { compiledSize, sizeProblem } from './limits.js'
import { netPatternProblem } from './net.js'
import { combineSandbox, type SandboxPolicy, type SandboxSettings, sandboxSettingsSchema } from './sandbox.js'
import {
  type FloorRecord,
  fieldPath,
  type LayerOrigin,
  type PolicySpec,
  parseSpec,
  type RuleSpec,
} from './spec.js'
import type { Layer, State } from './state.js'
import {
  ACTS,
  type Act,
  EFFECT_RANK,
  type Effect,
  type ExecCheck,
  type ExecVerdict,
  type Verdict,
} from './types.js'

export { normalisePath } from '../commands/index.js'

export class Policy {
  private judgingCache: Judging | undefined
  private sandboxCache: SandboxPolicy | undefined
  private digestCache: string | undefined

  private constructor(private readonly state: State) {}

  // ---- presets

  /** Everything allowed. */
  static permissive(): Policy {
    return new Policy({ layers: [], defaults: allDefaults('allow'), include: [], approvers: [], current: -1 })
  }

  /**
   * Read allowed, write and exec asked, net and MCP calls denied (a server is trusted only where a rule
   * says so); secrets (`.env`, keys) never read or written.
   */
  static tiered(): Policy {
    return Policy.withSecrets({ read: 'allow', write: 'ask', exec: 'ask', net: 'deny', mcp: 'deny' })
  }

  /** Everything denied unless a rule allows it; secrets stay denied even under a broad allow. */
  static strict(): Policy {
    return Policy.withSecrets(allDefaults('deny'))
  }

  private static withSecrets(defaults: Record<Act, Effect>): Policy {
    return new Policy({
      layers: [secretsLayer()],
      defaults,
      include: [],
      approvers: [],
      current: -1,
    })
  }

  /** Validates a spec (a policy file's content or `toSpec()` output); throws PolicyError naming the field. */
  static fromSpec(spec: unknown, file?: string): Policy {
    const parsed = parseSpec(spec, file)
    const base = parsed.preset ? Policy[parsed.preset]() : undefined
    const defaults = { ...base?.state.defaults } as Partial<Record<Act, Effect>>
    for (const act of ACTS) {
      const given = parsed.defaults?.[act]
      if (given) defaults[act] = given
      // A policy that never names MCP trusts no server: its calls are denied (and it keeps its digest).
      else if (act === 'mcp') defaults[act] ??= 'deny'
      else if (!defaults[act]) {
        const field = `defaults.${act}`
        throw new PolicyError(
          `${file ? `${file}: ` : ''}${field}: expected allow, ask or deny (without a preset every act needs a default)`,
          field,
          file,
        )
      }
    }
    const layers: Layer[] = [...(base?.state.layers ?? [])]
    const seen = new Set<string>()
    for (const [i, layer] of (parsed.layers ?? []).entries()) {
      const fail = (message: string): never => {
        const field = `layers[${i}].name`
        throw new PolicyError(`${file ? `${file}: ` : ''}${field}: ${message}`, field, file)
      }
      if (seen.has(layer.name)) fail(`the layer name "${layer.name}" is used twice`)
      seen.add(layer.name)
      // `builtin-` names tether's own layers, whose settings it treats specially: a policy may only carry
      // them as tether wrote them (as `toSpec()` does), never a layer of its own under such a name.
      if (layer.name.startsWith(BUILTIN_PREFIX) && !isBuiltinLayer(layer)) {
        fail(
          `layer names starting with "${BUILTIN_PREFIX}" are reserved for tether's own layers; rename the layer`,
        )
      }
      const existing = layers.findIndex((l) => l.name === layer.name)
      const sandbox = layer.sandbox !== undefined ? { sandbox: layer.sandbox } : {}
      const origin = layer.origin !== undefined ? { origin: layer.origin } : {}
      const pins = layer.pins !== undefined ? { pins: layer.pins } : {}
      if (existing === -1)
        layers.push({ name: layer.name, ...origin, ...sandbox, ...pins, rules: layer.rules })
      else
        layers[existing] = {
          ...layers[existing]!,
          ...sandbox,
          ...(layer.pins !== undefined ? { pins: { ...layers[existing]!.pins, ...layer.pins } } : {}),
          rules: [...layers[existing]!.rules, ...layer.rules],
        }
    }
    const approvers = normaliseApprovers(parsed.approvers ?? [])
    checkIdentity(approvers, parsed.identity, file)
    checkApprovalCounts(parsed.layers ?? [], approvers, file)
    const budgetApprovers = checkBudgetApprovers(parsed.budgetApprovers ?? [], approvers, file)
    const policy = new Policy({
      layers,
      defaults: defaults as Record<Act, Effect>,
      include: [...new Set(parsed.include ?? [])],
      approvers,
      identity: parsed.identity,
      budgetApprovers,
      floor: parsed.floor,
      current: -1,
    })
    policy.checkExamples(parsed.layers ?? [], file)
    const written = new Map((parsed.layers ?? []).map((layer, index) => [layer.name, `layers[${index}]`]))
    policy.sandboxCache = combineSandbox(
      layers,
      (name, index) => written.get(name) ?? `layers[${index}]`,
      file,
    )
    return policy
  }

  /**
   * The policy a run works under on a worker: the worker's `floor` first, then the run's own layers, which
   * can only tighten it — a deny or ask of the floor stays whatever the run says, each act's default is the
   * stricter of the two, and a run's allow cannot go past a floor default that asks or denies. Throws
   * PolicyError, naming the run's field and the floor (`source`), when the run asks for what only the floor
   * may give: the sandbox off or loosened, approvers or keys the floor does not list, unsigned answers where
   * the floor wants them signed, or a layer with a name of the floor's.
   */
  static onFloor(floor: Policy, run: Policy, source: string): Policy {
    const fail = (field: string, message: string): never => {
      throw new PolicyError(`the run's policy ${field}: ${message} (the worker's floor: ${source})`, field)
    }
    if (run.state.floor || run.state.layers.some((layer) => layer.origin !== undefined)) {
      fail(
        'floor',
        'stands on a floor already; a run names only its own layers, and the worker adds its floor',
      )
    }
    const floorLayers = floor.state.layers.map((layer): Layer => ({ ...layer, origin: 'floor' }))
    const runLayers: Layer[] = []
    for (const layer of run.state.layers) {
      const clash = floorLayers.find((own) => own.name === layer.name)
      if (clash) {
        // A preset layer both carry (the secret denies) is one layer.
        if (isBuiltinLayer(layer) && isBuiltinLayer(clash)) continue
        fail(
          `layer "${layer.name}"`,
          "has the name of one of the floor's layers; name the run's layers differently",
        )
      }
      runLayers.push({ ...layer, origin: 'run' })
    }
    const defaults = {} as Record<Act, Effect>
    for (const act of ACTS) {
      const [a, b] = [floor.state.defaults[act], run.state.defaults[act]]
      defaults[act] = EFFECT_RANK[a] >= EFFECT_RANK[b] ? a : b
    }
    const { approvers, identity } = identityOnFloor(floor.state, run.state, source)
    const layers = [...floorLayers, ...runLayers]
    for (const layer of floorLayers) {
      for (const rule of layer.rules) {
        if (rule.approvals !== undefined && approvers.length > 0 && rule.approvals > approvers.length) {
          fail(
            'approvers',
            `leaves ${approvers.length} approver${approvers.length === 1 ? '' : 's'}, but the floor's rule "${escapeText(rule.pattern)}" needs ${rule.approvals}`,
          )
        }
      }
    }
    checkApprovalCounts(runLayers, approvers, undefined)
    // Each was within the limits on its own; what the run works under, both together, must be too.
    const size = sizeProblem([...floorLayers, ...runLayers])
    if (size) throw new PolicyError(`the run's policy on the worker's floor (${source}): ${size}`, 'layers')
    const budgetApprovers = budgetApproversOnFloor(
      { ...floor.state, budgetApprovers: floor.budgetApprovers },
      { budgetApprovers: run.budgetApprovers },
      approvers,
      source,
    )
    const policy = new Policy({
      layers,
      defaults,
      include: [...new Set([...floor.state.include, ...run.state.include])],
      approvers,
      identity,
      budgetApprovers,
      floor: { source, defaults: writtenDefaults(floor.state.defaults), include: [...floor.state.include] },
      current: -1,
    })
    try {
      policy.sandboxCache = combineSandbox(layers, (name) => `layer "${name}"`)
    } catch (error) {
      if (!(error instanceof PolicyError)) throw error
      throw new PolicyError(`the run's policy: ${error.message} (the worker's floor: ${source})`, error.field)
    }
    return policy
  }

  /** JSON-serialisable; `Policy.fromSpec(p.toSpec())` is the same policy. */
  toSpec(): PolicySpec {
    const spec: PolicySpec = {
      version: 1,
      defaults: writtenDefaults(this.state.defaults),
      layers: this.state.layers.map((layer) => ({
        name: layer.name,
        ...(layer.origin !== undefined ? { origin: layer.origin } : {}),
        ...(layer.sandbox !== undefined ? { sandbox: structuredClone(layer.sandbox) } : {}),
        ...(layer.pins !== undefined ? { pins: { ...layer.pins } } : {}),
        rules: layer.rules.map((rule) => ({ ...rule })),
      })),
    }
    if (this.state.include.length > 0) spec.include = [...this.state.include]
    if (this.state.approvers.length > 0) {
      spec.approvers = this.state.approvers.map((a) =>
        a.keys.length > 0 ? { name: a.name, keys: [...a.keys] } : a.name,
      )
    }
    if (this.state.identity) spec.identity = this.state.identity
    if (this.budgetApprovers.length > 0) spec.budgetApprovers = [...this.budgetApprovers]
    if (this.state.floor) spec.floor = structuredClone(this.state.floor)
    return spec
  }

  /** Hex SHA-256 of the canonical spec: names this exact policy in history and in the audit. */
  get digest(): string {
    this.digestCache ??= specDigest(this.toSpec())
    return this.digestCache
  }

  /** What its rules take compiled, at most (see limits.ts): what a worker's cache of policies counts. */
  get compiledSize(): number {
    return compiledSize(this.state.layers.flatMap((layer) => layer.rules))
  }

  /** The floor this effective policy stands on (`onFloor`), if any. */
  get floor(): FloorRecord | undefined {
    return this.state.floor
  }

  /** The layers by name with where each came from (floor, run, or undefined for rules added later). */
  get layers(): ReadonlyArray<{ name: string; origin?: LayerOrigin | undefined; rules: number }> {
    return this.state.layers.map((layer) => ({
      name: layer.name,
      ...(layer.origin ? { origin: layer.origin } : {}),
      rules: layer.rules.length,
    }))
  }

  /** The names of who may answer an ask; empty means anyone. */
  get approvers(): readonly string[] {
    return this.state.approvers.map((approver) => approver.name)
  }

  /** Who may raise a run's cost cap at the cap (or end the run); empty: nobody, the run ends there. */
  get budgetApprovers(): readonly string[] {
    return this.state.budgetApprovers ?? []
  }

  /** Who may answer an ask and whether answers must be signed (see identity.ts). */
  get identity(): ApproverIdentity {
    return checkIdentity(this.state.approvers, this.state.identity)
  }

  /** The command sandbox this policy asks for (docs/sandbox.md): `enforce` unless the operator's layer says `off`. */
  get sandbox(): SandboxPolicy {
    this.sandboxCache ??= combineSandbox(this.state.layers)
    return this.sandboxCache
  }

  /**
   * Sets the sandbox settings of the current layer (`enforce`, `off`, or detailed settings). Throws
   * PolicyError when a layer after the first would loosen the sandbox.
   */
  withSandbox(settings: SandboxSettings): Policy {
    const parsed = sandboxSettingsSchema.safeParse(settings)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!
      const field = fieldPath(['sandbox', ...issue.path])
      throw new PolicyError(`${field}: ${issue.message}`, field)
    }
    const state = this.state.current === -1 ? this.layer('policy').state : this.state
    const layers = replaceAt(state.layers, state.current, {
      ...state.layers[state.current]!,
      sandbox: parsed.data,
    })
    const policy = new Policy({ ...state, layers })
    policy.sandboxCache = combineSandbox(layers)
    return policy
  }

  /**
   * The digests the layers pin for an MCP tool (`server.tool`): its definition must have every one of them
   * (two different pins leave no definition that passes). Empty: nothing pinned up front.
   */
  pinsFor(tool: string): string[] {
    const pins = new Set<string>()
    for (const layer of this.state.layers) {
      const pin = layer.pins && Object.hasOwn(layer.pins, tool) ? layer.pins[tool] : undefined
      if (pin !== undefined) pins.add(pin)
    }
    return [...pins]
  }

  /** The effect an act gets when no rule matches. */
  defaultFor(act: Act): Effect {
    return this.state.defaults[act]
  }

  // ---- builders (each returns a new Policy)

  /** Later rules go into the layer `name` (created on top of the stack if it does not exist). */
  layer(name: string): Policy {
    if (typeof name !== 'string' || name === '')
      throw new PolicyError('a layer needs a non-empty name', 'layer')
    const index = this.state.layers.findIndex((l) => l.name === name)
    if (index !== -1) return new Policy({ ...this.state, current: index })
    return new Policy({
      ...this.state,
      layers: [...this.state.layers, { name, rules: [] }],
      current: this.state.layers.length,
    })
  }

  allow(act: Act, pattern: string): Policy {
    return this.addToCurrent(act, 'allow', pattern)
  }

  /** `approvals`: how many distinct approvers must approve (a two-person rule is `{ approvals: 2 }`). */
  ask(act: Act, pattern: string, options: { approvals?: number } = {}): Policy {
    return this.addToCurrent(act, 'ask', pattern, options.approvals)
  }

  deny(act: Act, pattern: string): Policy {
    return this.addToCurrent(act, 'deny', pattern)
  }

  allowExec(pattern: string): Policy {
    return this.allow('exec', pattern)
  }
  askExec(pattern: string, options: { approvals?: number } = {}): Policy {
    return this.ask('exec', pattern, options)
  }
  denyExec(pattern: string): Policy {
    return this.deny('exec', pattern)
  }
  allowRead(pattern: string): Policy {
    return this.allow('read', pattern)
  }
  askRead(pattern: string): Policy {
    return this.ask('read', pattern)
  }
  denyRead(pattern: string): Policy {
    return this.deny('read', pattern)
  }
  allowWrite(pattern: string): Policy {
    return this.allow('write', pattern)
  }
  askWrite(pattern: string): Policy {
    return this.ask('write', pattern)
  }
  denyWrite(pattern: string): Policy {
    return this.deny('write', pattern)
  }
  allowNet(pattern: string): Policy {
    return this.allow('net', pattern)
  }
  askNet(pattern: string): Policy {
    return this.ask('net', pattern)
  }
  denyNet(pattern: string): Policy {
    return this.deny('net', pattern)
  }

  /**
   * Adds one rule to the layer `layer` (created on top if missing) without moving the builders' current
   * layer: how a run adds an approver's remembered rule to its `remembered` layer.
   */
  withRule(layer: string, act: Act, effect: Effect, pattern: string): Policy {
    const rule = validRule(act, effect, pattern)
    const index = this.state.layers.findIndex((l) => l.name === layer)
    if (index === -1) {
      return new Policy({ ...this.state, layers: [...this.state.layers, { name: layer, rules: [rule] }] })
    }
    return new Policy({
      ...this.state,
      layers: replaceAt(this.state.layers, index, appendRule(this.state.layers[index]!, rule)),
    })
  }

  /** Auto-allows the curated read-only commands (docs/policy.md), unless an argument names a secret. */
  withReadOnlyCommands(): Policy {
    if (this.state.include.includes('read-only')) return this
    return new Policy({ ...this.state, include: [...this.state.include, 'read-only'] })
  }

  /**
   * Sets who may answer: `{ name, keys }` for signed decisions, or plain names with `identity: 'unsigned'`.
   * Throws PolicyError when the list and the identity mode do not fit together.
   */
  withApprovers(approvers: readonly ApproverSpec[], identity?: IdentityMode): Policy {
    const list = normaliseApprovers(approvers)
    checkIdentity(list, identity)
    checkBudgetApprovers(this.budgetApprovers, list)
    return new Policy({ ...this.state, approvers: list, identity })
  }

  /** Sets who may raise a run's cost cap (approver names). Throws PolicyError for a name not approving. */
  withBudgetApprovers(names: readonly string[]): Policy {
    return new Policy({ ...this.state, budgetApprovers: checkBudgetApprovers(names, this.state.approvers) })
  }

  withDefault(act: Act, effect: Effect): Policy {
    validRule(act, effect, '*')
    return new Policy({ ...this.state, defaults: { ...this.state.defaults, [act]: effect } })
  }

  private addToCurrent(act: Act, effect: Effect, pattern: string, approvals?: number): Policy {
    const rule = validRule(act, effect, pattern)
    if (approvals !== undefined) {
      if (!Number.isInteger(approvals) || approvals < 1 || approvals > 10) {
        throw new PolicyError('approvals must be a whole number from 1 to 10', 'approvals')
      }
      rule.approvals = approvals
    }
    const state = this.state.current === -1 ? this.layer('policy').state : this.state
    const index = state.current
    const layers = replaceAt(state.layers, index, appendRule(state.layers[index]!, rule))
    checkApprovalCounts(layers, state.approvers, undefined)
    return new Policy({ ...state, layers })
  }

  /**
   * How many distinct approvers an ask needs: the largest `approvals` among the ask rules that decided
   * any of the verdict's checks (1 when none says).
   */
  approvalsRequired(
    verdict: Pick<ExecVerdict, 'effect' | 'rule' | 'layer'> & { checks?: readonly ExecCheck[] },
  ): number {
    if (verdict.effect !== 'ask') return 1
    const decided = [verdict, ...(verdict.checks ?? [])].filter(
      (check) => check.effect === 'ask' && check.rule !== undefined,
    )
    let required = 1
    for (const check of decided) {
      const layer = this.state.layers.find((l) => l.name === check.layer)
      const rule = layer?.rules.find((r) => r.effect === 'ask' && r.pattern === check.rule)
      required = Math.max(required, rule?.approvals ?? 1)
    }
    return required
  }

  // ---- judging (the engine: judging.ts)

  /**
   * Judges one target: a workspace path (read/write), `host` or `host:port` (net), or a command line
   * (exec: parsed as bash and judged like `checkExec`).
   */
  check(act: Act, target: string): Verdict {
    return this.judging.check(act, target)
  }

  /**
   * Judges an argv (program first) on its effective command tree; `checks` lists every judged node.
   * `context` tells what the policy cannot know itself (see ExecContext).
   */
  checkExec(argv: readonly string[], context?: ExecContext): ExecVerdict {
    return this.judging.checkExec(argv, context)
  }

  /**
   * Judges a call of an MCP tool: `tool` is `server.tool`, `args` its arguments as canonical JSON. A rule
   * naming the tool covers every call of it; one naming `server.tool {…}` only calls with those arguments.
   * `readOnly`: the tool's reviewed definition says it only reads, which allows it under `mcp-read-only`.
   */
  checkMcp(tool: string, args?: string, context?: { readOnly?: boolean }): Verdict {
    return this.judging.checkMcp(tool, args, context)
  }

  /**
   * Whether an allow rule names the IP address of `target` (`address` or `address:port`) — the address
   * itself or a CIDR range holding it, never a glob — and the policy allows the target. The sandbox reaches
   * private and other special-purpose addresses only where a rule names them so.
   */
  namesAddress(target: string): boolean {
    return this.judging.namesAddress(target)
  }

  private get judging(): Judging {
    this.judgingCache ??= new Judging(this.state)
    return this.judgingCache
  }

  /** Every rule's `match` / `not_match` examples must come out as the rule says. */
  private checkExamples(layers: readonly Layer[], file: string | undefined): void {
    for (const [i, layer] of layers.entries()) {
      for (const [j, rule] of layer.rules.entries()) {
        if (!rule.match && !rule.not_match) continue
        // A probe holding only this rule, whose defaults are the opposite of the rule's effect.
        const probe = new Policy({
          layers: [
            { name: layer.name, rules: [{ act: rule.act, effect: rule.effect, pattern: rule.pattern }] },
          ],
          defaults: allDefaults(rule.effect === 'allow' ? 'deny' : 'allow'),
          include: [],
          approvers: [],
          current: -1,
        })
        const judge = (example: string): Verdict =>
          rule.act === 'exec'
            ? probe.checkExec(staticWords(example) ?? ['sh', '-c', example])
            : probe.check(rule.act, example)
        for (const [kind, examples] of [
          ['match', rule.match],
          ['not_match', rule.not_match],
        ] as const) {
          for (const [k, example] of (examples ?? []).entries()) {
            const verdict = judge(example)
            const decided = verdict.rule === rule.pattern && verdict.effect === rule.effect
            if (decided === (kind === 'match')) continue
            const field = `layers[${i}].rules[${j}].${kind}[${k}]`
            const expectation = kind === 'match' ? 'should decide' : 'should not decide'
            throw new PolicyError(
              `${file ? `${file}: ` : ''}${field}: the rule ${rule.effect} ${rule.act} "${rule.pattern}" ${expectation} ` +
                `"${escapeText(example)}", but: ${verdict.reason}`,
              field,
              file,
            )
          }
        }
      }
    }
  }
}

// ---- helpers

/** Layers tether itself writes carry this prefix; a policy cannot name a layer of its own with it. */
const BUILTIN_PREFIX = 'builtin-'

/** The preset layer that keeps secrets (`.env`, keys) from being read or written. */
function secretsLayer(): Layer {
  const rules: RuleSpec[] = []
  for (const act of ['read', 'write'] as const) {
    for (const pattern of SECRET_PATTERNS) rules.push({ act, effect: 'deny', pattern })
  }
  return { name: `${BUILTIN_PREFIX}secrets`, rules }
}

/** Whether a written layer is exactly one of tether's own, as `toSpec()` writes it. */
function isBuiltinLayer(layer: { name: string; sandbox?: unknown; rules: readonly RuleSpec[] }): boolean {
  const builtin = secretsLayer()
  return (
    layer.name === builtin.name &&
    layer.sandbox === undefined &&
    (layer as { pins?: unknown }).pins === undefined &&
    layer.rules.length === builtin.rules.length &&
    layer.rules.every((rule, i) => {
      const own = builtin.rules[i]!
      return (
        Object.keys(rule).length === 3 &&
        rule.act === own.act &&
        rule.effect === own.effect &&
        rule.pattern === own.pattern
      )
    })
  )
}

function specDigest(spec: PolicySpec): string {
  return digestOf(spec)
}

function allDefaults(effect: Effect): Record<Act, Effect> {
  return { read: effect, write: effect, exec: effect, net: effect, mcp: effect }
}

/** The defaults as a spec writes them: `mcp` only when it is not `deny`, which leaving it out means. */
function writtenDefaults(defaults: Readonly<Record<Act, Effect>>): PolicySpec['defaults'] {
  const { mcp, ...rest } = defaults
  return mcp === 'deny' ? { ...rest } : { ...rest, mcp }
}

function validRule(act: Act, effect: Effect, pattern: string): RuleSpec {
  if (!(ACTS as readonly string[]).includes(act))
    throw new PolicyError(`"${String(act)}" is not an act: expected read, write, exec, net or mcp`, 'act')
  if (!(['allow', 'ask', 'deny'] as const).includes(effect))
    throw new PolicyError(`"${String(effect)}" is not an effect: expected allow, ask or deny`, 'effect')
  if (typeof pattern !== 'string' || pattern === '' || pattern.includes('\0')) {
    throw new PolicyError('a pattern must be a non-empty string without NUL characters', 'pattern')
  }
  const problem = act === 'net' ? netPatternProblem(pattern) : undefined
  if (problem) throw new PolicyError(`pattern: ${problem}`, 'pattern')
  return { act, effect, pattern }
}

/** `approvals` belongs to ask rules, and cannot ask for more people than the policy lists. */
function checkApprovalCounts(
  layers: ReadonlyArray<{ rules: readonly RuleSpec[] }>,
  approvers: readonly Approver[],
  file: string | undefined,
): void {
  for (const [i, layer] of layers.entries()) {
    for (const [j, rule] of layer.rules.entries()) {
      if (rule.approvals === undefined) continue
      const field = `layers[${i}].rules[${j}].approvals`
      const fail = (message: string) => {
        throw new PolicyError(`${file ? `${file}: ` : ''}${field}: ${message}`, field, file)
      }
      if (rule.effect !== 'ask') fail('only an ask rule can require approvals')
      if (approvers.length > 0 && rule.approvals > approvers.length) {
        fail(`needs ${rule.approvals} distinct approvers but the policy lists ${approvers.length}`)
      }
    }
  }
}

function appendRule(layer: Layer, rule: RuleSpec): Layer {
  return { ...layer, rules: [...layer.rules, rule] }
}

function replaceAt<T>(list: readonly T[], index: number, value: T): T[] {
  const copy = [...list]
  copy[index] = value
  return copy
}
