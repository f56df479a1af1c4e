/**
 * The policy: an ordered stack of named layers of allow / ask / deny rules over read, write, exec and net,
 * plus a default effect per act. Immutable (every builder returns a new Policy), pure and deterministic,
 * so it runs anywhere, including inside a Temporal workflow or a local activity.
 *
 * Evaluation, for every act: a matching deny in any layer wins, else a matching ask, else a matching allow,
 * else the act's default. Deny and ask rules match generously (every spelling, case-folded); allow rules
 * match strictly (the target as given). Exec is judged on the effective command tree (see exec/analyse.ts).
 */

import {
  type AnalysedNode,
  analyseArgv,
  analyseScript,
  basename,
  type ExecContext,
  globMatcher,
  globsIntersect,
  normalisePath,
  readOnlyCommand,
  SECRET_PATTERNS,
  staticWords,
} from '../commands/index.js'
import { digestOf } from '../identity/index.js'
import {
  escapeText,
  INVISIBLE_CLASS,
  invisibleCharacters,
  isPlainWord,
  renderCommand,
} from '../present/index.js'
import { PolicyError } from './errors.js'
import {
  type Approver,
  type ApproverIdentity,
  type ApproverSpec,
  checkIdentity,
  type IdentityMode,
  identityOnFloor,
  normaliseApprovers,
} from './identity.js'
import { AddressRules, netPatternProblem, netTarget, readAddressPattern } from './net.js'
import { OptionRules } from './option-rules.js'
import { ALL_EFFECTS, ALLOW, DENY_OR_ASK, RuleIndex, SLOT } from './rules.js'
import {
  combineSandbox,
  type ParsedSandboxSettings,
  type SandboxPolicy,
  type SandboxSettings,
  sandboxSettingsSchema,
} from './sandbox.js'
import {
  type FloorRecord,
  fieldPath,
  type INCLUDES,
  type LayerOrigin,
  type PolicySpec,
  parseSpec,
  type RuleSpec,
} from './spec.js'
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

type Include = (typeof INCLUDES)[number]

interface Layer {
  readonly name: string
  /** On an effective policy: the worker's floor, or the run's own policy (see `onFloor`). */
  readonly origin?: LayerOrigin | undefined
  readonly sandbox?: ParsedSandboxSettings | undefined
  readonly rules: readonly RuleSpec[]
}

interface State {
  readonly layers: readonly Layer[]
  readonly defaults: Readonly<Record<Act, Effect>>
  readonly include: readonly Include[]
  readonly approvers: readonly Approver[]
  /** As the policy wrote it; absent = implied by the approvers (see identity.ts). */
  readonly identity?: IdentityMode | undefined
  /** The floor an effective policy stands on: its defaults and includes cap what the run's own rules allow. */
  readonly floor?: FloorRecord | undefined
  /** Index of the layer builders add to; -1 until `layer()` is called (then a `policy` layer is made). */
  readonly current: number
}

interface ListedRule {
  pattern: string
  index: number
  /** How many characters the pattern spells before its first `*` or `?`. */
  literal: number
  matches: (target: string) => boolean
}

interface RuleRef {
  pattern: string
  layer: string
  /** How a reason names it: `rule "x" in layer "y"`, escaped for humans. */
  by: string
  /**
   * For a run's own rule on a floor whose default for the act is stricter than allow: what its allow
   * becomes. A run can only tighten its floor, so it cannot pre-allow what the floor leaves to a person.
   */
  ceiling?: Effect
}

interface Compiled {
  /** Each rule by index. */
  readonly refs: ReadonlyArray<RuleRef>
  readonly indexes: Readonly<Record<Act, RuleIndex>>
  /** Net rules that name an address or a CIDR range, matched by address (the rest are in `indexes.net`). */
  readonly netAddresses: AddressRules
  /** Exec rules as lists, for commands with run-time words (matched by glob intersection). */
  readonly execLists: Readonly<Record<Effect, ReadonlyArray<ListedRule>>>
  /** Deny and ask rules read as program, options and rest (see option-rules.ts). */
  readonly optionRules: OptionRules
  /** Whether the read-only list is included. */
  readonly readOnly: boolean
  /** What the read-only list's allow becomes when only the run, not the floor, included it (see RuleRef). */
  readonly readOnlyCeiling?: Effect | undefined
}

/** Program names people cannot read reliably: whitespace, control, invisible or non-ASCII characters. */
const UNREADABLE_PROGRAM = /[^\x21-\x7e]/
/** What makes two spellings of one argument look different without meaning anything different. */
const NOISE = invisibleCharacters()
const NEEDS_NORMALISING = new RegExp(`[${INVISIBLE_CLASS}]|\\s\\s|^\\s|\\s$`, 'u')

export class Policy {
  private compiledCache: Compiled | undefined
  private sandboxCache: SandboxPolicy | undefined
  private digestCache: string | undefined

  private constructor(private readonly state: State) {}

  // ---- presets

  /** Everything allowed. */
  static permissive(): Policy {
    return new Policy({ layers: [], defaults: allDefaults('allow'), include: [], approvers: [], current: -1 })
  }

  /** Read allowed, write and exec asked, net denied; secrets (`.env`, keys) never read or written. */
  static tiered(): Policy {
    return Policy.withSecrets({ read: 'allow', write: 'ask', exec: 'ask', net: 'deny' })
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
      if (existing === -1) layers.push({ name: layer.name, ...origin, ...sandbox, rules: layer.rules })
      else
        layers[existing] = {
          ...layers[existing]!,
          ...sandbox,
          rules: [...layers[existing]!.rules, ...layer.rules],
        }
    }
    const approvers = normaliseApprovers(parsed.approvers ?? [])
    checkIdentity(approvers, parsed.identity, file)
    checkApprovalCounts(parsed.layers ?? [], approvers, file)
    const policy = new Policy({
      layers,
      defaults: defaults as Record<Act, Effect>,
      include: [...new Set(parsed.include ?? [])],
      approvers,
      identity: parsed.identity,
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
    const policy = new Policy({
      layers,
      defaults,
      include: [...new Set([...floor.state.include, ...run.state.include])],
      approvers,
      identity,
      floor: { source, defaults: { ...floor.state.defaults }, include: [...floor.state.include] },
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
      defaults: { ...this.state.defaults },
      layers: this.state.layers.map((layer) => ({
        name: layer.name,
        ...(layer.origin !== undefined ? { origin: layer.origin } : {}),
        ...(layer.sandbox !== undefined ? { sandbox: structuredClone(layer.sandbox) } : {}),
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
    if (this.state.floor) spec.floor = structuredClone(this.state.floor)
    return spec
  }

  /** Hex SHA-256 of the canonical spec: names this exact policy in history and in the audit. */
  get digest(): string {
    this.digestCache ??= specDigest(this.toSpec())
    return this.digestCache
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
    return new Policy({ ...this.state, approvers: list, identity })
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

  // ---- judging

  /**
   * Judges one target: a workspace path (read/write), `host` or `host:port` (net), or a command line
   * (exec: parsed as bash and judged like `checkExec`).
   */
  check(act: Act, target: string): Verdict {
    if (typeof target !== 'string') return refusal(act, String(target), 'The target is not a string.')
    switch (act) {
      case 'read':
      case 'write':
        return this.checkPath(act, target)
      case 'net':
        return this.checkNet(target)
      case 'exec': {
        const { checks: _checks, ...verdict } = this.judgeTree(analyseScript(target), escapeText(target))
        return verdict
      }
      default:
        return refusal(act, target, `"${String(act)}" is not an act (read, write, exec or net).`)
    }
  }

  /**
   * Judges an argv (program first) on its effective command tree; `checks` lists every judged node.
   * `context` tells what the policy cannot know itself (see ExecContext).
   */
  checkExec(argv: readonly string[], context?: ExecContext): ExecVerdict {
    let nul = false
    if (Array.isArray(argv) && argv.length > 0) {
      for (const word of argv) {
        if (typeof word !== 'string') return this.malformed()
        if (word.includes('\0')) nul = true
      }
    } else return this.malformed()
    if (nul) {
      const reason = 'An argument contains a NUL character, which no program can receive.'
      return { ...refusal('exec', renderCommand(argv), reason), checks: [] }
    }
    return this.judgeTree(analyseArgv(argv), argv, context)
  }

  private malformed(): ExecVerdict {
    return {
      ...refusal('exec', '', 'argv must be a non-empty array of strings, the program first.'),
      checks: [],
    }
  }

  /** `shown` is the call as a human reads it, or its argv (rendered only when no node already did). */
  private judgeTree(
    nodes: readonly AnalysedNode[],
    shown: string | readonly string[],
    context?: ExecContext,
  ): ExecVerdict {
    const checks: ExecCheck[] = []
    let deciding: ExecCheck | undefined
    for (let i = 0; i < nodes.length; i++) {
      const check = this.judgeNode(nodes[i]!, context)
      // What a command only might run counts (and is shown) when a deny rule meets it, and not otherwise.
      if (check.probe && check.effect !== 'deny') continue
      checks.push(check)
      // The strictest effect decides; among equals, the first check a rule decided names the rule.
      if (!deciding || EFFECT_RANK[check.effect] > EFFECT_RANK[deciding.effect]) deciding = check
      else if (check.effect === deciding.effect && deciding.rule === undefined && check.rule !== undefined) {
        deciding = check
      }
    }
    let display: string
    if (typeof shown === 'string') display = shown
    else {
      // The root node judged this very argv (same words) when nothing was rewritten (`env -S` splits words).
      const root = nodes[0]
      const same =
        root !== undefined &&
        (root.kind === 'command' || root.kind === 'wrapper') &&
        sameWords(root.argv, shown)
      display = same ? checks[0]!.target : renderCommand(shown)
    }
    if (!deciding) {
      const effect = this.state.defaults.exec
      const reason = `"${display}" runs nothing; the exec default is ${effect}.`
      return { effect, act: 'exec', target: display, reason, checks }
    }
    const verdict: ExecVerdict = {
      effect: deciding.effect,
      act: 'exec',
      target: display,
      reason: deciding.reason,
      checks,
    }
    if (deciding.rule !== undefined) verdict.rule = deciding.rule
    if (deciding.layer !== undefined) verdict.layer = deciding.layer
    return verdict
  }

  private judgeNode(node: AnalysedNode, context: ExecContext | undefined): ExecCheck {
    let verdict: Verdict
    if (node.kind === 'opaque') verdict = this.judgeOpaque(node)
    else if (node.kind === 'file') {
      verdict = capped(this.check(node.act === 'exec' ? 'write' : node.act, node.target), node.cap)
    } else verdict = this.judgeCommand(node, context)
    // Every verdict above is a fresh object, so it becomes the check in place.
    const check = verdict as ExecCheck
    check.kind = node.kind
    check.depth = node.depth
    if (node.code !== undefined) check.code = node.code
    if (node.probe) {
      check.probe = true
      check.reason = `It might run this: ${check.reason}`
    }
    return check
  }

  /**
   * What tether cannot reduce to static commands. The part it can read (a command whose name is only known
   * at run time) meets deny and ask rules; otherwise it is asked about, shown as it is, and denied only
   * under a deny-by-default policy. It is never allowed.
   */
  private judgeOpaque(node: AnalysedNode): Verdict {
    const target = escapeText(node.target)
    // A command name only known at run time meets deny and ask rules through what can be read of it
    // (`rm${IFS}-rf`); one with nothing static (`$CMD`) could be anything, so it is only asked about.
    const readable = node.argv.length > 0 && (!node.dynamic?.[0] || /[^*]/.test(node.globs?.[0] ?? '*'))
    if (readable) {
      const found = this.ruleMatches(node, node.argv[0]!, basename(node.argv[0]!))
      if (found[0] !== Infinity) return this.ruleVerdict('exec', 'deny', target, found[0]!)
      if (found[1] !== Infinity) return this.ruleVerdict('exec', 'ask', target, found[1]!)
    }
    const deny = this.state.defaults.exec === 'deny'
    return {
      effect: deny ? 'deny' : 'ask',
      act: 'exec',
      target,
      reason: `Not analysable: ${escapeText(node.note ?? 'unknown construct')}; ${
        deny ? 'refused, since the exec default is deny' : 'it needs approval'
      } (tether never allows what it cannot analyse).`,
    }
  }

  /** The first deny and ask rules (and, for static commands, allow rules) meeting a command, as indexes. */
  private ruleMatches(
    node: AnalysedNode,
    program: string,
    base: string,
    plain?: boolean,
    joined?: string,
  ): number[] {
    const compiled = this.compiled
    const argv = node.argv
    let found: number[]
    if (node.dynamic) {
      const globArgv = argv.map((word, i) => (node.dynamic?.[i] ? (node.globs?.[i] ?? '*') : word))
      const globs = execForms({
        program: globArgv[0]!,
        base: node.dynamic[0] ? basename(globArgv[0]!) : base,
        argv: globArgv,
        joined: globArgv.join(' '),
        plain: false,
        extra: node.forms,
      })
      found = [
        firstIntersecting(compiled.execLists.deny, globs),
        firstIntersecting(compiled.execLists.ask, globs),
        Infinity,
      ]
    } else {
      found = scanCommand(compiled.indexes.exec, {
        program,
        base,
        argv,
        joined: joined ?? argv.join(' '),
        plain: plain ?? argv.every(isPlainWord),
        extra: node.forms,
      })
    }
    if (!node.dynamic?.[0]) {
      const name = lowerCase(base)
      if (compiled.optionRules.covers(name))
        compiled.optionRules.scan(name, argv, node.dynamic, node.globs, found, node.parsed)
    }
    return found
  }

  private judgeCommand(node: AnalysedNode, context: ExecContext | undefined): Verdict {
    const argv = node.argv
    const program = argv[0]!
    // Plain words (the usual case) are shown as they are and need no normalised spelling.
    const plain = !node.dynamic && argv.every(isPlainWord)
    const joined = plain ? argv.join(' ') : undefined
    const display = joined ?? renderCommand(argv, node.dynamic)
    if (!plain && (program === '' || UNREADABLE_PROGRAM.test(program))) {
      return refusal(
        'exec',
        display,
        `The program name ${quoteForReason(program)} contains whitespace, control, invisible or non-ASCII characters, which is always denied.`,
      )
    }
    const compiled = this.compiled
    const found = this.ruleMatches(node, program, basename(program), plain, joined)
    if (found[0] !== Infinity) return this.ruleVerdict('exec', 'deny', display, found[0]!)
    if (found[1] !== Infinity) return this.ruleVerdict('exec', 'ask', display, found[1]!)
    if (node.kind === 'wrapper') {
      if (node.cap)
        return {
          effect: 'ask',
          act: 'exec',
          target: display,
          reason: `"${display}" needs approval: ${node.cap}.`,
        }
      return {
        effect: 'allow',
        act: 'exec',
        target: display,
        reason: `${quoteForReason(program)} ${node.note ?? 'is a wrapper'}; what it runs is judged.`,
      }
    }
    let allowed: number
    if (node.dynamic) {
      // Allowed only when every value the run-time words can take is allowed: `allow echo*` covers `echo $x`.
      const firstDynamic = node.dynamic.indexOf(true)
      const prefix = `${argv.slice(0, firstDynamic).join(' ')} `
      allowed = Infinity
      for (const { pattern, index, matches } of compiled.execLists.allow) {
        if (index < allowed && pattern.endsWith('*') && matches(prefix)) allowed = index
      }
    } else {
      allowed = found[2]!
      if (node.allowAs && allowed === Infinity) {
        // `allow npx vitest*` names the tool it runs; `allow npx*` or `allow npm*` does not.
        const { spelling, named } = node.allowAs
        for (const { index, literal, matches } of compiled.execLists.allow) {
          if (index < allowed && literal >= named && matches(spelling)) allowed = index
        }
      }
    }
    if (allowed !== Infinity) {
      const verdict = this.ruleVerdict('exec', 'allow', display, allowed)
      return capped(verdict, node.cap ?? unnamedRisk(node, compiled.refs[allowed]!.pattern))
    }
    if (compiled.readOnly && !node.interpreter && !node.risks && node.kind === 'command') {
      const name = readOnlyCommand(argv, context, node.dynamic, node.environment)
      if (name) {
        const verdict = capped(
          {
            effect: 'allow',
            rule: name,
            layer: 'read-only',
            act: 'exec',
            target: display,
            reason: `"${display}" is allowed: it is on the read-only list (${name}).`,
          },
          node.cap,
        )
        const ceiling = compiled.readOnlyCeiling
        return verdict.effect === 'allow' && ceiling ? underFloor(verdict, ceiling) : verdict
      }
    }
    // Code tether does not read is allowed only by a rule that names it, never by the default.
    const cap = node.unreduced ? 'it runs code tether does not analyse (shown with the command)' : node.cap
    return capped(this.defaultVerdict('exec', display), node.cap ?? cap)
  }

  private checkPath(act: 'read' | 'write', target: string): Verdict {
    const display = escapeText(target)
    const normalised = normalisePath(target)
    const strict = withLastSegment([normalised])
    const generous = (normalised === target ? strict : withLastSegment([normalised, target])).map(fold)
    return this.evaluate(act, generous, strict, display)
  }

  /**
   * Whether an allow rule names the IP address of `target` (`address` or `address:port`) — the address
   * itself or a CIDR range holding it, never a glob — and the policy allows the target. The sandbox reaches
   * private and other special-purpose addresses only where a rule names them so.
   */
  namesAddress(target: string): boolean {
    const parsed = netTarget(target)
    if ('problem' in parsed || !parsed.address) return false
    const found = [Infinity, Infinity, Infinity]
    this.compiled.netAddresses.scan(parsed.address, parsed.port, ALLOW, found)
    return found[SLOT.allow] !== Infinity && this.checkNet(target).effect === 'allow'
  }

  private checkNet(target: string): Verdict {
    const display = escapeText(target)
    const parsed = netTarget(target, display)
    if ('problem' in parsed) return refusal('net', display, parsed.problem)
    const found = scanForms(this.compiled.indexes.net, parsed.forms, parsed.forms)
    if (parsed.address) this.compiled.netAddresses.scan(parsed.address, parsed.port, ALL_EFFECTS, found)
    return this.decide('net', found, display)
  }

  private evaluate(
    act: Act,
    generous: readonly string[],
    strict: readonly string[],
    display: string,
  ): Verdict {
    return this.decide(act, scanForms(this.compiled.indexes[act], generous, strict), display)
  }

  /** The verdict from the first matching deny, ask and allow rules (`scanForms`' answer), else the default. */
  private decide(act: Act, found: readonly number[], display: string): Verdict {
    const [denied, asked, allowed] = found
    if (denied !== Infinity) return this.ruleVerdict(act, 'deny', display, denied!)
    if (asked !== Infinity) return this.ruleVerdict(act, 'ask', display, asked!)
    if (allowed !== Infinity) return this.ruleVerdict(act, 'allow', display, allowed!)
    return this.defaultVerdict(act, display)
  }

  private ruleVerdict(act: Act, effect: Effect, display: string, index: number): Verdict {
    const ref = this.compiled.refs[index]!
    const reason =
      effect === 'deny'
        ? `is denied by ${ref.by}`
        : effect === 'ask'
          ? `needs approval: ${ref.by}`
          : `is allowed by ${ref.by}`
    const verdict: Verdict = {
      effect,
      rule: ref.pattern,
      layer: ref.layer,
      act,
      target: display,
      reason:
        act === 'exec'
          ? `${subject(act, display)} ${reason}.`
          : sentence(`${subject(act, display)} ${reason}.`),
    }
    return effect === 'allow' && ref.ceiling ? underFloor(verdict, ref.ceiling) : verdict
  }

  private defaultVerdict(act: Act, display: string): Verdict {
    const effect = this.state.defaults[act]
    return {
      effect,
      act,
      target: display,
      reason: `No rule matches ${subject(act, display)}; the ${act} default is ${effect}.`,
    }
  }

  private get compiled(): Compiled {
    this.compiledCache ??= compile(this.state)
    return this.compiledCache
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

/** A program name case-folded; names are nearly always lower case already, so that is checked first. */
function lowerCase(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i)
    if ((code >= 65 && code <= 90) || code > 127) return name.toLowerCase()
  }
  return name
}

function sameWords(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

function allDefaults(effect: Effect): Record<Act, Effect> {
  return { read: effect, write: effect, exec: effect, net: effect }
}

function validRule(act: Act, effect: Effect, pattern: string): RuleSpec {
  if (!(ACTS as readonly string[]).includes(act))
    throw new PolicyError(`"${String(act)}" is not an act: expected read, write, exec or net`, 'act')
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

function stricterThanAllow(effect: Effect): Effect | undefined {
  return effect === 'allow' ? undefined : effect
}

/**
 * What a run's own allow becomes on a floor whose default for the act is `ceiling`: the run may only
 * tighten the floor, so what the floor leaves to a person (or refuses) is not the run's to allow.
 */
function underFloor(verdict: Verdict, ceiling: Effect): Verdict {
  return {
    effect: ceiling,
    act: verdict.act,
    target: verdict.target,
    reason:
      `${verdict.reason.replace(/\.$/, '')}, but the worker's floor makes ${verdict.act} ${ceiling} ` +
      `unless one of its own rules allows it${ceiling === 'ask' ? ', so it needs approval' : ''}.`,
  }
}

function fold(text: string): string {
  return text.toLowerCase()
}

function compile(state: State): Compiled {
  const refs: Array<{ pattern: string; layer: string; by: string }> = []
  const indexes = {} as Record<Act, RuleIndex>
  for (const act of ACTS) indexes[act] = new RuleIndex()
  const netAddresses = new AddressRules()
  const optionRules = new OptionRules()
  const execLists: Record<Effect, ListedRule[]> = {
    allow: [],
    ask: [],
    deny: [],
  }
  for (const layer of state.layers) {
    const where = layer.origin === 'floor' ? ` (the worker's floor)` : ''
    for (const rule of layer.rules) {
      const index = refs.length
      const by = `rule "${escapeText(rule.pattern)}" in layer "${escapeText(layer.name)}"${where}`
      const ceiling =
        layer.origin === 'run' && state.floor ? stricterThanAllow(state.floor.defaults[rule.act]) : undefined
      refs.push({ pattern: rule.pattern, layer: layer.name, by, ...(ceiling ? { ceiling } : {}) })
      // Deny and ask match case-folded (generous); hosts are case-insensitive whatever the effect.
      const pattern = rule.effect !== 'allow' || rule.act === 'net' ? fold(rule.pattern) : rule.pattern
      // A net rule naming an address or range matches by address; one that does not parse matches nothing.
      const address = rule.act === 'net' ? readAddressPattern(rule.pattern) : undefined
      if (typeof address === 'object') netAddresses.add(address, SLOT[rule.effect], index)
      else if (address === undefined) indexes[rule.act].add(pattern, rule.effect, index)
      if (rule.act === 'exec') {
        const literal = pattern.search(/[*?]/)
        execLists[rule.effect].push({
          pattern,
          index,
          literal: literal === -1 ? pattern.length : literal,
          matches: globMatcher(pattern),
        })
      }
      if (rule.act === 'exec' && rule.effect !== 'allow')
        optionRules.add(rule.pattern, SLOT[rule.effect], index)
    }
  }
  const floor = state.floor
  const readOnlyCeiling =
    floor && !floor.include.includes('read-only') ? stricterThanAllow(floor.defaults.exec) : undefined
  return {
    refs,
    indexes,
    netAddresses,
    execLists,
    optionRules,
    readOnly: state.include.includes('read-only'),
    ...(readOnlyCeiling ? { readOnlyCeiling } : {}),
  }
}

/**
 * The first deny and ask rules matching any `generous` form and the first allow rule matching any `strict`
 * form, as `[deny, ask, allow]` rule indexes (Infinity for none). A form in both lists is scanned once.
 */
function scanForms(index: RuleIndex, generous: readonly string[], strict: readonly string[]): number[] {
  const found = [Infinity, Infinity, Infinity]
  for (const form of strict) if (!generous.includes(form)) index.scan(form, ALLOW, found)
  for (const form of generous) index.scan(form, strict.includes(form) ? ALL_EFFECTS : DENY_OR_ASK, found)
  return found
}

function firstIntersecting(list: ReadonlyArray<ListedRule>, globs: readonly string[]): number {
  let best = Infinity
  for (const { pattern, index } of list) {
    if (index < best && globs.some((glob) => globsIntersect(pattern, glob))) best = index
  }
  return best
}

/**
 * The spellings deny and ask rules see, case-folded: the program as given and by basename, the joined argv
 * with either, the same with control/invisible characters, empty words and repeated spaces removed, and
 * any canonical forms the analyser found (git without its global options).
 */
interface CommandText {
  program: string
  base: string
  argv: readonly string[]
  joined: string
  /** Every word plain (see render.ts): nothing to normalise. */
  plain: boolean
  /** More spellings from the analyser. */
  extra: readonly string[] | undefined
}

function execForms({ program, base, argv, joined, plain, extra }: CommandText): string[] {
  const forms = [fold(program), fold(joined)]
  if (base !== program) forms.push(fold(base), fold([base, ...argv.slice(1)].join(' ')))
  if (!plain && (argv.includes('') || NEEDS_NORMALISING.test(joined))) {
    const cleaned = argv.map((word) => word.replace(NOISE, '').trim()).filter((word) => word !== '')
    const normal = cleaned.join(' ').replace(/\s+/g, ' ')
    forms.push(fold(normal))
    if (base !== program) forms.push(fold([base, ...cleaned.slice(1)].join(' ').replace(/\s+/g, ' ')))
  }
  if (extra) for (const form of extra) forms.push(fold(form).replace(/\s+/g, ' '))
  return forms
}

/**
 * `scanForms` for a command, without building form lists: the program and the joined argv are scanned once
 * each for every effect when folding changes nothing (the usual case), the other spellings for deny and ask.
 */
function scanCommand(index: RuleIndex, command: CommandText): number[] {
  const { program, base, joined, plain, extra } = command
  const found = [Infinity, Infinity, Infinity]
  // The program alone meets deny and ask rules only: an allow rule names the whole command it allows
  // (`allow rustc` allows `rustc`, not `rustc --version`), and the line below is that whole command.
  index.scanWord(fold(program), DENY_OR_ASK, found)
  const foldedLine = fold(joined)
  index.scan(foldedLine, foldedLine === joined ? ALL_EFFECTS : DENY_OR_ASK, found)
  if (foldedLine !== joined) index.scan(joined, ALLOW, found)
  if (base !== program || !plain || extra) {
    const forms = execForms(command)
    for (let i = 2; i < forms.length; i++) index.scan(forms[i]!, DENY_OR_ASK, found)
  }
  return found
}

function withLastSegment(paths: readonly string[]): string[] {
  const forms = [...paths]
  for (const path of paths) {
    const slash = path.lastIndexOf('/')
    if (slash !== -1 && slash < path.length - 1) forms.push(path.slice(slash + 1))
  }
  return forms
}

/**
 * Why an allow by `pattern` does not cover the node: an option that changes what the program does which
 * the rule does not name (`allow find*` does not cover `find . -delete`; `allow find * -delete` does).
 */
function unnamedRisk(node: AnalysedNode, pattern: string): string | undefined {
  for (const risk of node.risks ?? []) {
    if (risk.names.some((name) => name !== '' && namesWord(pattern, name))) continue
    return `${risk.option} ${risk.what}, which the rule does not name`
  }
  return undefined
}

function namesWord(pattern: string, word: string): boolean {
  for (let at = pattern.indexOf(word); at !== -1; at = pattern.indexOf(word, at + 1)) {
    const before = at === 0 ? ' ' : pattern[at - 1]!
    const after = pattern[at + word.length] ?? ' '
    if (/[\s]/.test(before) && /[\s=*]/.test(after)) return true
  }
  return false
}

function capped(verdict: Verdict, cap: string | undefined): Verdict {
  if (!cap || verdict.effect !== 'allow') return verdict
  return {
    effect: 'ask',
    act: verdict.act,
    target: verdict.target,
    reason: `${verdict.reason.replace(/\.$/, '')}, but ${cap}, so it needs approval.`,
  }
}

function refusal(act: Act, target: string, reason: string): Verdict {
  return { effect: 'deny', act, target, reason }
}

function subject(act: Act, display: string): string {
  return act === 'exec'
    ? `"${display}"`
    : act === 'net'
      ? `connecting to "${display}"`
      : `${act === 'read' ? 'reading' : 'writing'} "${display}"`
}

function quoteForReason(program: string): string {
  return renderCommand([program])
}

function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}
