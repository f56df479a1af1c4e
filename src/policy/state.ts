/** The inside of a policy value, shared by the value (policy.ts) and the judging engine (judging.ts). */
import type { Approver, IdentityMode } from './identity.js'
import type { ParsedSandboxSettings } from './sandbox.js'
import type { FloorRecord, INCLUDES, LayerOrigin, RuleSpec } from './spec.js'
import type { Act, Effect } from './types.js'

export type Include = (typeof INCLUDES)[number]

export interface Layer {
  readonly name: string
  /** On an effective policy: the worker's floor, or the run's own policy (see `onFloor`). */
  readonly origin?: LayerOrigin | undefined
  readonly sandbox?: ParsedSandboxSettings | undefined
  /** MCP tool definitions the layer reviewed: `server.tool` → digest. */
  readonly pins?: Readonly<Record<string, string>> | undefined
  readonly rules: readonly RuleSpec[]
}

export interface State {
  readonly layers: readonly Layer[]
  readonly defaults: Readonly<Record<Act, Effect>>
  readonly include: readonly Include[]
  readonly approvers: readonly Approver[]
  /** As the policy wrote it; absent = implied by the approvers (see identity.ts). */
  readonly identity?: IdentityMode | undefined
  /** Who may raise a run's cost cap (names of approvers); absent or empty: nobody. */
  readonly budgetApprovers?: readonly string[] | undefined
  /** The floor an effective policy stands on: its defaults and includes cap what the run's own rules allow. */
  readonly floor?: FloorRecord | undefined
  /** Index of the layer builders add to; -1 until `layer()` is called (then a `policy` layer is made). */
  readonly current: number
}
