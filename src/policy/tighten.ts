/**
 * A policy that is the same as another or stricter, never looser: the earlier policy whole, then the new
 * one's deny and ask rules in layers after it, and each act's default the stricter of the two. A deny in any
 * layer beats every allow and an ask beats every allow, so these can only take away. The new policy's allow
 * rules, includes (which bring allows), sandbox settings and approvers are not taken: any of them could let
 * through what the earlier policy asked about. A rewound run works under such a policy.
 */
import { Policy } from './policy.js'
import type { PolicySpec } from './spec.js'

const RANK = { allow: 0, ask: 1, deny: 2 } as const

export function stricterPolicy(base: Policy, extra?: Policy): Policy {
  if (!extra) return base
  const a = base.toSpec()
  const b = extra.toSpec()
  const names = new Set(a.layers.map((layer) => layer.name))
  const layers = [
    ...a.layers,
    // A preset layer both carry (the secret denies) is one layer; another name taken gets a number.
    ...b.layers
      .filter((layer) => !(layer.name.startsWith('builtin-') && names.has(layer.name)))
      .map(({ sandbox: _sandbox, ...layer }) => {
        let name = layer.name
        for (let n = 2; names.has(name); n++) name = `${layer.name}-${n}`
        names.add(name)
        return { ...layer, name, rules: layer.rules.filter((rule) => rule.effect !== 'allow') }
      }),
  ]
  const defaults = { ...a.defaults }
  for (const act of Object.keys({ ...a.defaults, ...b.defaults }) as Array<keyof typeof defaults>) {
    const [ours, theirs] = [defaults[act], b.defaults[act]]
    if (theirs !== undefined && (ours === undefined || RANK[theirs] > RANK[ours])) defaults[act] = theirs
  }
  const spec: PolicySpec = { ...a, defaults, layers }
  return Policy.fromSpec(spec)
}
