/**
 * What a run knows of its MCP tools: the definition of each it reviewed (pinned by digest the first time a
 * listing showed it, or when an approver accepted a change), the changes refused, and what the last listing
 * offered. Pure and deterministic (the workflow's state); `agentRun` lists, asks and calls with it.
 */
import { clip } from '../present/index.js'
import type {
  ActionVerdict,
  InlineMessage,
  McpCarried,
  McpListing,
  McpServerRef,
  McpToolState,
  ToolChange,
} from '../run/index.js'
import {
  type McpCall,
  type McpToolName,
  splitMcpToolName,
  type ToolCall,
  type ValidatedCall,
  validateToolCall,
} from '../tools/index.js'

/**
 * The call index a definition change found at a step is asked about under: past the calls a model reply can
 * make (64), so its approval and decision rows never meet a call's.
 */
export const DEFINITION_REVIEW_CALL = 1_000

/** The layer and rule an approval of a changed definition names. */
export const DEFINITION_REVIEW = { layer: 'builtin', rule: 'mcp tool definition' } as const

export function isMcpCall(call: ValidatedCall): call is McpCall {
  return splitMcpToolName(call.name) !== undefined
}

/** A call validated for this run: a `server.tool` call where the run has no MCP server is no tool at all. */
export function validateCall(raw: ToolCall, book: McpBook): ReturnType<typeof validateToolCall> {
  const validated = validateToolCall(raw)
  if (validated.ok && isMcpCall(validated.call) && !book.active) {
    return { ok: false, error: `unknown tool \`${clip(raw.name, 100)}\`: this run has no MCP servers` }
  }
  return validated
}

export class McpBook {
  private readonly pins: McpCarried['pins']
  private readonly refused: McpCarried['refused']
  private listing: McpListing = { tools: [], changes: [], unavailable: [] }
  /** What the model was last told of unavailable servers, so it is told again only when that changes. */
  private told = ''

  constructor(
    readonly servers: readonly McpServerRef[],
    carried: McpCarried | undefined,
  ) {
    this.pins = { ...carried?.pins }
    this.refused = { ...carried?.refused }
  }

  /** Whether the run uses any MCP server. */
  get active(): boolean {
    return this.servers.length > 0
  }

  /** The digests reviewed, by tool: what a listing is compared with. */
  pinned(): Record<string, string> {
    return Object.fromEntries(Object.entries(this.pins).map(([name, pin]) => [name, pin.digest]))
  }

  /**
   * Takes a step's listing: a tool seen for the first time (and not held by a policy's pin) is pinned as it
   * is; the changes returned are the ones a person must review (a change refused before is withheld silently).
   */
  take(listing: McpListing): ToolChange[] {
    this.listing = listing
    const changed = new Set(listing.changes.map((change) => change.name))
    for (const tool of listing.tools) {
      if (this.pins[tool.name] || changed.has(tool.name)) continue
      this.pins[tool.name] = { digest: tool.digest, ...(tool.readOnly ? { readOnly: true as const } : {}) }
    }
    return listing.changes.filter((change) => this.refused[change.name] !== change.digest)
  }

  /** An approver accepted a changed definition: it is the reviewed one from now on. */
  accept(change: ToolChange): void {
    const listed = this.listing.tools.find(
      (tool) => tool.name === change.name && tool.digest === change.digest,
    )
    this.pins[change.name] = {
      digest: change.digest,
      ...(listed?.readOnly ? { readOnly: true as const } : {}),
    }
    delete this.refused[change.name]
  }

  /** A changed definition was refused (or nobody answered): withheld until it changes again. */
  refuse(change: ToolChange): void {
    this.refused[change.name] = change.digest
  }

  /** The tools offered this turn: listed now with the definition reviewed. */
  offer(): Array<{ name: string; digest: string }> {
    return this.listing.tools
      .filter((tool) => this.pins[tool.name]?.digest === tool.digest)
      .map((tool) => ({ name: tool.name, digest: tool.digest }))
  }

  /** Whether the run offers `name` now, and what its reviewed definition says; why not, when it does not. */
  state(name: McpToolName): McpToolState {
    const server = splitMcpToolName(name)?.server
    if (!server || !this.servers.some((ref) => ref.name === server)) {
      return { offered: false, why: `this run has no MCP server ${server ?? name}` }
    }
    const down = this.listing.unavailable.find((entry) => entry.server === server)
    const listed = this.listing.tools.find((tool) => tool.name === name)
    if (!listed) {
      return {
        offered: false,
        why: down
          ? `the server ${server} is unavailable: ${down.reason}`
          : `the server ${server} lists no tool ${name}`,
      }
    }
    const pin = this.pins[name]
    if (!pin || pin.digest !== listed.digest) {
      return {
        offered: false,
        why: `${name} is withheld: its definition is not the one reviewed${this.refused[name] === listed.digest ? ', and the change was refused' : ''}`,
      }
    }
    return { offered: true, ...(pin.readOnly ? { readOnly: true as const } : {}) }
  }

  /** The digest a call runs against (the reviewed definition). */
  digest(name: string): string {
    return this.pins[name]?.digest ?? ''
  }

  /** How long one call of the tool's server may take. */
  timeoutMs(name: string): number {
    const server = splitMcpToolName(name)?.server
    return this.servers.find((ref) => ref.name === server)?.timeoutMs ?? 60_000
  }

  /** What the model is told of servers it cannot use this turn, when that changed since it was last told. */
  note(seq: () => number): InlineMessage | undefined {
    const lines = this.listing.unavailable.map((entry) => `- ${entry.server}: ${clip(entry.reason, 500)}`)
    const text = lines.join('\n')
    if (text === this.told) return undefined
    this.told = text
    const content =
      lines.length > 0
        ? `[mcp] Some MCP servers' tools are not offered now:\n${text}`
        : '[mcp] Every MCP server is available again.'
    return { seq: seq(), message: { role: 'user', content } }
  }

  carry(): McpCarried {
    return { pins: { ...this.pins }, refused: { ...this.refused } }
  }
}

/** The verdict an approval of a changed definition is asked with: the diff is what the approver reviews. */
export function definitionReview(change: ToolChange): ActionVerdict {
  return {
    act: 'mcp',
    target: `${change.name} (definition ${change.digest.slice(0, 12)}…)`,
    effect: 'ask',
    rule: DEFINITION_REVIEW.rule,
    layer: DEFINITION_REVIEW.layer,
    reason: `${change.name} is withheld: ${change.reason}. Approve to offer the new definition.`,
    tree: change.diff,
    remember: { ok: false, reason: 'a definition is reviewed as it is; nothing is remembered' },
  }
}
