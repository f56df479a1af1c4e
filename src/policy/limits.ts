/**
 * How big a policy may be. A policy is compiled when it is loaded and kept compiled per worker, and a run's
 * own policy comes from whoever starts the run: without bounds one pattern or a long rule list could take a
 * worker's memory and seconds of its time. Each limit sits far above what a person writes and is named in
 * the one-line PolicyError that refuses a policy over it.
 */
import { formatBytes, overLimit } from '../present/index.js'

export const POLICY_LIMITS = {
  /** Characters of one pattern (and of one `match` / `not_match` example): a path's length on Linux. */
  patternChars: 4_096,
  /** Rules in one policy, all layers together. */
  rules: 10_000,
  /** Layers of one policy. */
  layers: 100,
  /** `match` and `not_match` examples in one policy: each is judged when the policy loads. */
  examples: 1_000,
  /** Approvers one policy lists, and keys per approver. */
  approvers: 100,
  keys: 10,
  /** What the rules may take compiled, by the estimate below. */
  compiledBytes: 64 * 1024 * 1024,
  /** Bytes of a policy file (a floor or a run's policy), checked before it is read. */
  fileBytes: 1024 * 1024,
} as const

/**
 * What a rule costs compiled, measured (node 20, `Policy#checkExec` after loading 10,000 rules): about 1 KB
 * a rule, and per character of its pattern 2 bytes in the tries and up to 23 in a RegExp (`?`, inner `*`).
 */
const RULE_BYTES = 1_024
const PATTERN_CHAR_BYTES = 24

/** The memory `rules` take compiled, at most: what the compiled-size limit and the worker's cache count. */
export function compiledSize(rules: Iterable<{ pattern?: unknown }>): number {
  let bytes = 0
  for (const rule of rules) {
    const chars = typeof rule?.pattern === 'string' ? rule.pattern.length : 0
    bytes += RULE_BYTES + chars * PATTERN_CHAR_BYTES
  }
  return bytes
}

/**
 * Why a policy with these layers is too big — too many layers, rules or examples, or rules that would
 * compile too large — or undefined. Reads what it is given defensively: a spec not parsed yet is measured
 * (and refused) before anything else is done with it.
 */
export function sizeProblem(layers: unknown): string | undefined {
  if (!Array.isArray(layers)) return undefined
  if (layers.length > POLICY_LIMITS.layers) {
    return overLimit(layers.length, 'layers', POLICY_LIMITS.layers, 'layer')
  }
  const rules = layers.flatMap((layer) => {
    const list = (layer as { rules?: unknown } | null)?.rules
    return Array.isArray(list) ? (list as Array<Record<string, unknown> | null>) : []
  })
  if (rules.length > POLICY_LIMITS.rules) return overLimit(rules.length, 'rules', POLICY_LIMITS.rules, 'rule')
  let examples = 0
  for (const rule of rules) {
    for (const list of [rule?.match, rule?.not_match]) if (Array.isArray(list)) examples += list.length
  }
  if (examples > POLICY_LIMITS.examples) {
    return overLimit(examples, 'match and not_match examples', POLICY_LIMITS.examples, 'example')
  }
  const bytes = compiledSize(rules as Array<{ pattern?: unknown }>)
  if (bytes <= POLICY_LIMITS.compiledBytes) return undefined
  return `the rules would take about ${formatBytes(bytes)} compiled, more than the compiled-size limit of ${formatBytes(POLICY_LIMITS.compiledBytes)}; use fewer or shorter patterns`
}
