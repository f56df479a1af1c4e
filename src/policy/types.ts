/** The vocabulary of the policy: what is judged (acts), the possible outcomes (effects) and verdicts. */

import type { ExecNodeKind } from '../commands/index.js'

export const ACTS = ['read', 'write', 'exec', 'net', 'mcp'] as const
export const EFFECTS = ['allow', 'ask', 'deny'] as const

/**
 * `read`/`write` take workspace-relative paths, `exec` an argv, `net` `host` or `host:port`, `mcp` a call of an
 * MCP server's tool: `server.tool`, and `server.tool {arguments}` for a rule that names the arguments too.
 */
export type Act = (typeof ACTS)[number]
export type Effect = (typeof EFFECTS)[number]

/** How strict an effect is; the strictest one found anywhere in a judged tree wins. */
export const EFFECT_RANK: Readonly<Record<Effect, number>> = { allow: 0, ask: 1, deny: 2 }

/**
 * One judgement. `rule` and `layer` name the deciding rule; both are absent when the act's default decided
 * (or when the analyser decided, e.g. an unreadable script). Plain data: it travels through Temporal history.
 */
export interface Verdict {
  effect: Effect
  rule?: string
  layer?: string
  /** The act the target was judged as (a redirection inside a script is judged as a `write`). */
  act: Act
  target: string
  /** One sentence for a human (and the model): what was decided and why. */
  reason: string
}

export type { ExecNodeKind } from '../commands/index.js'

/** One judged node of an exec call, in tree order; `depth` is its nesting under the call. */
export interface ExecCheck extends Verdict {
  kind: ExecNodeKind
  depth: number
  /** Program text tether does not reduce (inline code, a script read on standard input), for a person to read. */
  code?: string
  /**
   * Something the call might run, found where tether cannot be sure (inside inline code, after an option
   * it does not know): it decides only when a deny rule meets it.
   */
  probe?: true
}

/** The verdict on a whole exec call: the strictest of its checks, with every node that was judged. */
export interface ExecVerdict extends Verdict {
  checks: ExecCheck[]
}
