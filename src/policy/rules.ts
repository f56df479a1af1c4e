/**
 * Precompiled rules. All rules of one act (every effect, every layer) go into one `RuleIndex`, which answers
 * "which is the first rule, in stack order, of each effect that matches this target?" in one pass over the
 * target instead of trying every rule: exact and prefix patterns share a radix trie, suffix patterns a
 * reversed one, `*text*` is a substring test, and only patterns with `?` or inner `*` fall back to a RegExp.
 */

import { globShape } from '../commands/index.js'
import type { Effect } from './types.js'

/** Slots of the `found` array `scan` fills in, and the bits of its `effects` mask. */
export const SLOT: Readonly<Record<Effect, number>> = { deny: 0, ask: 1, allow: 2 }
export const DENY_OR_ASK = 0b011
export const ALLOW = 0b100
export const ALL_EFFECTS = 0b111

const NONE = Number.POSITIVE_INFINITY

/**
 * A radix trie: a chain of characters with nothing branching off it is one node whose `label` holds them all,
 * so a node exists only where a pattern ends or two patterns part, and a long pattern costs its characters
 * (a slice of the pattern itself) plus a node or two — memory per character is a small constant.
 */
interface TrieNode {
  /** The characters from the parent to this node, in walking order (empty at the root). */
  label: string
  /** Children by the first character of their label. */
  children: Map<number, TrieNode> | undefined
  /** First rule (per effect slot) whose exact pattern ends here. */
  exact: number[]
  /** First rule (per effect slot) whose `literal*` pattern ends here. */
  prefix: number[]
}

function trieNode(label: string): TrieNode {
  return { label, children: undefined, exact: [NONE, NONE, NONE], prefix: [NONE, NONE, NONE] }
}

function addChild(node: TrieNode, child: TrieNode): void {
  node.children ??= new Map()
  node.children.set(child.label.charCodeAt(0), child)
}

function trieInsert(
  root: TrieNode,
  literal: string,
  slot: number,
  index: number,
  field: 'exact' | 'prefix',
): void {
  let node = root
  let i = 0
  while (i < literal.length) {
    let next = node.children?.get(literal.charCodeAt(i))
    if (!next) {
      next = trieNode(literal.slice(i))
      addChild(node, next)
      node = next
      break
    }
    const label = next.label
    let common = 1
    while (common < label.length && i + common < literal.length) {
      if (label.charCodeAt(common) !== literal.charCodeAt(i + common)) break
      common++
    }
    if (common < label.length) {
      // The literal parts from (or ends inside) the label: split it there.
      const head = trieNode(label.slice(0, common))
      next.label = label.slice(common)
      addChild(head, next)
      addChild(node, head)
      next = head
    }
    node = next
    i += common
  }
  if (index < node[field][slot]!) node[field][slot] = index
}

/** Whether `target` up to `end`, read backwards, starts with `label`. */
function endsWithReversed(target: string, end: number, label: string): boolean {
  if (label.length > end) return false
  for (let k = 1; k < label.length; k++) {
    if (target.charCodeAt(end - 1 - k) !== label.charCodeAt(k)) return false
  }
  return true
}

/** Lowers `found[slot]` to `candidates[slot]` for every slot in `effects`. */
function take(candidates: number[], effects: number, found: number[]): void {
  if (effects & 1 && candidates[0]! < found[0]!) found[0] = candidates[0]!
  if (effects & 2 && candidates[1]! < found[1]!) found[1] = candidates[1]!
  if (effects & 4 && candidates[2]! < found[2]!) found[2] = candidates[2]!
}

interface Listed<T> {
  value: T
  slot: number
  index: number
}

export class RuleIndex {
  private readonly forward = trieNode('')
  private readonly backward = trieNode('')
  private hasBackward = false
  private readonly contained: Array<Listed<string>> = []
  private readonly regexps: Array<Listed<RegExp>> = []
  private readonly counts = [0, 0, 0]
  /** Results for single words (program names recur constantly): a pure function of the word. */
  private readonly words = new Map<string, number[]>()

  /** `index` orders rules across layers (stack order); lower wins attribution. */
  add(pattern: string, effect: Effect, index: number): void {
    const slot = SLOT[effect]
    this.counts[slot]!++
    const shape = globShape(pattern)
    switch (shape.kind) {
      case 'exact':
        trieInsert(this.forward, shape.literal, slot, index, 'exact')
        break
      case 'prefix':
        trieInsert(this.forward, shape.literal, slot, index, 'prefix')
        break
      case 'suffix':
        this.hasBackward = true
        trieInsert(this.backward, shape.literal.split('').reverse().join(''), slot, index, 'prefix')
        break
      case 'contains':
        this.contained.push({ value: shape.literal, slot, index })
        break
      case 'regexp':
        this.regexps.push({ value: shape.regexp, slot, index })
        break
    }
  }

  /** How many rules of an effect the index holds. */
  size(effect: Effect): number {
    return this.counts[SLOT[effect]]!
  }

  /** `scan` for a target without spaces, remembered per word. */
  scanWord(word: string, effects: number, found: number[]): void {
    let known = this.words.get(word)
    if (!known) {
      known = [NONE, NONE, NONE]
      this.scan(word, ALL_EFFECTS, known)
      if (this.words.size >= 4096) this.words.clear()
      this.words.set(word, known)
    }
    take(known, effects, found)
  }

  /** For each effect in the `effects` mask, lowers `found[slot]` to the first rule matching `target`. */
  scan(target: string, effects: number, found: number[]): void {
    let node: TrieNode = this.forward
    let at = 0
    for (;;) {
      take(node.prefix, effects, found)
      if (at === target.length) {
        take(node.exact, effects, found)
        break
      }
      const next = node.children?.get(target.charCodeAt(at))
      if (!next || !target.startsWith(next.label, at)) break
      node = next
      at += next.label.length
    }
    if (this.hasBackward) {
      // The reversed trie, walked from the target's last character back (its labels are reversed too).
      let back: TrieNode = this.backward
      let end = target.length
      for (;;) {
        take(back.prefix, effects, found)
        if (end === 0) break
        const next = back.children?.get(target.charCodeAt(end - 1))
        if (!next || !endsWithReversed(target, end, next.label)) break
        back = next
        end -= next.label.length
      }
    }
    for (const { value, slot, index } of this.contained) {
      if (effects & (1 << slot) && index < found[slot]! && target.includes(value)) found[slot] = index
    }
    for (const { value, slot, index } of this.regexps) {
      if (effects & (1 << slot) && index < found[slot]! && value.test(target)) found[slot] = index
    }
  }
}
