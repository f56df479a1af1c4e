/**
 * A policy that is the same as another or stricter, never looser: the earlier policy's layers first, then
 * the new one's, each act's default the stricter of the two. Since a deny in any layer beats every allow
 * and an ask beats every allow, nothing the new layers say can allow what the earlier policy did not.
 * A rewound run works under such a policy. Only the new policy's layers and defaults count: its includes
 * (which bring allows) and approvers are not taken.
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
      .map((layer) => {
        let name = layer.name
        for (let n = 2; names.has(name); n++) name = `${layer.name}-${n}`
        names.add(name)
        return { ...layer, name }
      }),
  ]
  const defaults = { ...a.defaults }
  for (const act of Object.keys(defaults) as Array<keyof typeof defaults>) {
    if (RANK[b.defaults[act]] > RANK[defaults[act]]) defaults[act] = b.defaults[act]
  }
  // The earlier policy's includes, approvers and identity stay; the new one's are not taken (an include
  // brings allows, approvers are the floor's).
  const spec: PolicySpec = { ...a, defaults, layers }
  return Policy.fromSpec(spec)
}
