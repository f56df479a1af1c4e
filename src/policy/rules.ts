/**
 * Precompiled rule sets. All rules of one act and one effect (across every layer) go into one `RuleIndex`,
 * which answers "which is the first rule, in stack order, that matches this target?" without trying every
 * rule: exact and prefix patterns share a character trie, suffix patterns a reversed one, and only patterns
 * with `?` or inner `*` fall back to a RegExp each.
 */
import { globShape } from './glob.js'

interface TrieNode {
  next: Map<string, TrieNode>
  /** First rule whose exact pattern ends here. */
  exact: number
  /** First rule whose `literal*` pattern ends here. */
  prefix: number
}

const NONE = Number.POSITIVE_INFINITY

function trieNode(): TrieNode {
  return { next: new Map(), exact: NONE, prefix: NONE }
}

function trieInsert(root: TrieNode, literal: string, index: number, field: 'exact' | 'prefix'): void {
  let node = root
  for (let i = 0; i < literal.length; i++) {
    const char = literal[i]!
    let child = node.next.get(char)
    if (!child) {
      child = trieNode()
      node.next.set(char, child)
    }
    node = child
  }
  if (index < node[field]) node[field] = index
}

export class RuleIndex {
  private readonly forward = trieNode()
  private readonly backward = trieNode()
  private readonly regexps: Array<{ regexp: RegExp; index: number }> = []
  private count = 0

  /** `index` orders rules across layers (stack order); lower wins attribution. */
  add(pattern: string, index: number): void {
    this.count++
    const shape = globShape(pattern)
    switch (shape.kind) {
      case 'exact':
        trieInsert(this.forward, shape.literal, index, 'exact')
        break
      case 'prefix':
        trieInsert(this.forward, shape.literal, index, 'prefix')
        break
      case 'suffix':
        trieInsert(this.backward, shape.literal.split('').reverse().join(''), index, 'prefix')
        break
      case 'regexp':
        this.regexps.push({ regexp: shape.regexp, index })
        break
    }
  }

  get size(): number {
    return this.count
  }

  /** The lowest index of a rule matching `target`, or `Infinity`. */
  first(target: string): number {
    let best = NONE
    let node: TrieNode | undefined = this.forward
    if (node.prefix < best) best = node.prefix
    for (let i = 0; i < target.length && node; i++) {
      node = node.next.get(target[i]!)
      if (node && node.prefix < best) best = node.prefix
    }
    if (node && node.exact < best) best = node.exact
    if (this.backward.next.size > 0 || this.backward.prefix < NONE) {
      let back: TrieNode | undefined = this.backward
      if (back.prefix < best) best = back.prefix
      for (let i = target.length - 1; i >= 0 && back; i--) {
        back = back.next.get(target[i]!)
        if (back && back.prefix < best) best = back.prefix
      }
    }
    for (const { regexp, index } of this.regexps) {
      if (index < best && regexp.test(target)) best = index
    }
    return best
  }
}
