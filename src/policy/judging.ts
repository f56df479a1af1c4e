/**
 * The judging engine of a policy: its rules compiled into indexes once, and every verdict — paths, hosts and
 * commands judged on their effective tree (commands/analyse.ts). Evaluation, for every act: a matching deny
 * in any layer wins, else a matching ask, else a matching allow, else the act's default. Deny and ask rules
 * match generously (every spelling, case-folded); allow rules match strictly (the target as given). A
 * policy value (policy.ts) holds one, made on first use.
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
} from '../commands/index.js'
import {
  escapeText,
  INVISIBLE_CLASS,
  invisibleCharacters,
  isPlainWord,
  renderCommand,
} from '../present/index.js'
import { AddressRules, netTarget, readAddressPattern } from './net.js'
import { OptionRules } from './option-rules.js'
import { ALL_EFFECTS, ALLOW, DENY_OR_ASK, RuleIndex, SLOT } from './rules.js'
import type { State } from './state.js'
import {
  ACTS,
  type Act,
  EFFECT_RANK,
  type Effect,
  type ExecCheck,
  type ExecVerdict,
  type Verdict,
} from './types.js'

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
  /** The same for MCP tools' read-only annotations (`mcp-read-only`). */
  readonly mcpReadOnlyCeiling?: Effect | undefined
}

/** Program names people cannot read reliably: whitespace, control, invisible or non-ASCII characters. */
const UNREADABLE_PROGRAM = /[^\x21-\x7e]/
/** What makes two spellings of one argument look different without meaning anything different. */
const NOISE = invisibleCharacters()
const NEEDS_NORMALISING = new RegExp(`[${INVISIBLE_CLASS}]|\\s\\s|^\\s|\\s$`, 'u')

/** What judging reads of a policy. */
export type JudgedRules = Pick<State, 'layers' | 'defaults' | 'include' | 'floor'>

export class Judging {
  private compiledCache: Compiled | undefined

  constructor(private readonly state: JudgedRules) {}

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
      case 'mcp': {
        const space = target.indexOf(' ')
        return space === -1
          ? this.checkMcp(target)
          : this.checkMcp(target.slice(0, space), target.slice(space + 1))
      }
      default:
        return refusal(act, target, `"${String(act)}" is not an act (read, write, exec, net or mcp).`)
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

  /**
   * A call of an MCP tool, judged as the tool (`server.tool`: what most rules name, like a host without its
   * port) and as the tool with its arguments (`server.tool {…}`: what an exact remembered rule names).
   */
  checkMcp(tool: string, args?: string, context?: { readOnly?: boolean | undefined }): Verdict {
    const target = args === undefined ? tool : `${tool} ${args}`
    const display = escapeText(target)
    const strict = args === undefined ? [tool] : [tool, target]
    const found = scanForms(this.compiled.indexes.mcp, strict.map(fold), strict)
    const verdict = this.decide('mcp', found, display)
    // A server's own word that a tool only reads counts where the policy says it trusts it, and only
    // where no rule decided: a deny or ask rule, and the floor's default, still hold.
    if (verdict.rule !== undefined || verdict.effect === 'allow' || !context?.readOnly) return verdict
    if (!this.state.include.includes('mcp-read-only')) return verdict
    const allowed: Verdict = {
      effect: 'allow',
      rule: 'read-only annotation',
      layer: 'mcp-read-only',
      act: 'mcp',
      target: display,
      reason: `Calling "${display}" is allowed: its reviewed definition says it only reads, and the policy includes mcp-read-only.`,
    }
    const ceiling = this.compiled.mcpReadOnlyCeiling
    return ceiling ? underFloor(allowed, ceiling) : allowed
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
}

// ---- helpers

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

function compile(state: JudgedRules): Compiled {
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
        layer.origin === 'run' && state.floor
          ? stricterThanAllow(state.floor.defaults[rule.act] ?? 'deny')
          : undefined
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
  const mcpReadOnlyCeiling =
    floor && !floor.include.includes('mcp-read-only')
      ? stricterThanAllow(floor.defaults.mcp ?? 'deny')
      : undefined
  return {
    refs,
    indexes,
    netAddresses,
    execLists,
    optionRules,
    readOnly: state.include.includes('read-only'),
    ...(readOnlyCeiling ? { readOnlyCeiling } : {}),
    ...(mcpReadOnlyCeiling ? { mcpReadOnlyCeiling } : {}),
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
  switch (act) {
    case 'exec':
      return `"${display}"`
    case 'net':
      return `connecting to "${display}"`
    case 'mcp':
      return `calling "${display}"`
    default:
      return `${act === 'read' ? 'reading' : 'writing'} "${display}"`
  }
}

function quoteForReason(program: string): string {
  return renderCommand([program])
}

function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}
