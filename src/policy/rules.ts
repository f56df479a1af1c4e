/**
 * Precompiled rules. All rules of one act (every effect, every layer) go into one `RuleIndex`, which answers
 * "which is the first rule, in stack order, of each effect that matches this target?" in one pass over the
 * target instead of trying every rule: exact and prefix patterns share a character trie, suffix patterns a
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

interface TrieNode {
  /** Children by ASCII code (an array index is the cheapest step of a walk), others in a map. */
  ascii: Array<TrieNode | undefined> | undefined
  other: Map<number, TrieNode> | undefined
  /** First rule (per effect slot) whose exact pattern ends here. */
  exact: number[]
  /** First rule (per effect slot) whose `literal*` pattern ends here. */
  prefix: number[]
}

function trieNode(): TrieNode {
  return { ascii: undefined, other: undefined, exact: [NONE, NONE, NONE], prefix: [NONE, NONE, NONE] }
}

function child(node: TrieNode, code: number): TrieNode | undefined {
  return code < 128 ? node.ascii?.[code] : node.other?.get(code)
}

function trieInsert(
  root: TrieNode,
  literal: string,
  slot: number,
  index: number,
  field: 'exact' | 'prefix',
): void {
  let node = root
  for (let i = 0; i < literal.length; i++) {
    const code = literal.charCodeAt(i)
    let next = child(node, code)
    if (!next) {
      next = trieNode()
      if (code < 128) {
        node.ascii ??= new Array<TrieNode | undefined>(128).fill(undefined)
        node.ascii[code] = next
      } else {
        node.other ??= new Map()
        node.other.set(code, next)
      }
    }
    node = next
  }
  if (index < node[field][slot]!) node[field][slot] = index
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
  private readonly forward = trieNode()
  private readonly backward = trieNode()
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
    let node: TrieNode | undefined = this.forward
    take(node.prefix, effects, found)
    for (let i = 0; i < target.length; i++) {
      node = child(node, target.charCodeAt(i))
      if (!node) break
      take(node.prefix, effects, found)
    }
    if (node) take(node.exact, effects, found)
    if (this.hasBackward) {
      let back: TrieNode | undefined = this.backward
      take(back.prefix, effects, found)
      for (let i = target.length - 1; i >= 0; i--) {
        back = child(back, target.charCodeAt(i))
        if (!back) break
        take(back.prefix, effects, found)
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
