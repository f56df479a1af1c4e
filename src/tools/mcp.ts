/**
 * Tools of MCP servers as tether names, pins and validates them. A tool is offered to the model as
 * `server.tool` — the server's name is the operator's, the tool's is the server's — and its definition (name,
 * description, input schema, annotations) is pinned by a digest the first time a run sees it, so that a
 * server cannot change what an allowed tool is after it was reviewed. Pure: the workflow uses it too.
 */
import { canonicalJson, digestOf } from '../identity/index.js'
import { formatCount } from '../present/index.js'
import { malformedText, utf8Length } from './limits.js'

/** An MCP server's name, as the operator gives it in the worker's configuration. */
export const MCP_SERVER_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/
/** `server.tool`: a server's name, a dot, and a tool name as MCP allows it (letters, digits, `_`, `-`, `.`). */
export const MCP_TOOL_NAME = /^([a-z0-9][a-z0-9_-]{0,63})\.([A-Za-z0-9_.-]{1,128})$/

/** A tool of an MCP server as the model and the policy name it. */
export type McpToolName = `${string}.${string}`

/** UTF-8 bytes of one MCP call's arguments as JSON: they are judged, shown to approvers and kept in history. */
export const MCP_ARGUMENT_BYTES = 65_536

/** A call of an MCP tool, validated: the arguments are a JSON object within the size limit. */
export interface McpCall {
  id: string
  name: McpToolName
  args: Record<string, unknown>
}

/** What a server says a tool is: what the digest covers. */
export interface McpToolDefinition {
  /** `server.tool`. */
  name: string
  description: string
  inputSchema: unknown
  annotations?: McpToolAnnotations | undefined
}

export interface McpToolAnnotations {
  title?: string
  readOnlyHint?: boolean
  destructiveHint?: boolean
  idempotentHint?: boolean
  openWorldHint?: boolean
}

export function isMcpToolName(name: string): name is McpToolName {
  return MCP_TOOL_NAME.test(name)
}

/** The server and the tool's own name, or undefined when `name` is not `server.tool`. */
export function splitMcpToolName(name: string): { server: string; tool: string } | undefined {
  const match = MCP_TOOL_NAME.exec(name)
  return match ? { server: match[1]!, tool: match[2]! } : undefined
}

/** Hex SHA-256 of a definition's canonical JSON: what a run pins, and what a policy may pin up front. */
export function mcpToolDigest(definition: McpToolDefinition): string {
  return digestOf({
    name: definition.name,
    description: definition.description,
    inputSchema: definition.inputSchema ?? null,
    annotations: definition.annotations ?? null,
  })
}

/**
 * Whether the definition says the tool only reads: `readOnlyHint` and not `destructiveHint`. A server's word,
 * which the policy counts only where it says so (`include: [mcp-read-only]`).
 */
export function readsOnly(definition: Pick<McpToolDefinition, 'annotations'>): boolean {
  const annotations = definition.annotations
  return annotations?.readOnlyHint === true && annotations.destructiveHint !== true
}

/** The arguments as canonical JSON: the text the policy judges and an approver signs over. */
export function mcpArguments(args: Record<string, unknown>): string {
  return canonicalJson(args)
}

/** Validates an MCP call's arguments: a JSON object (none means `{}`), well-formed and within the limit. */
export function validateMcpCall(call: {
  id: string
  name: McpToolName
  args: unknown
}): { ok: true; call: McpCall } | { ok: false; error: string } {
  const args = call.args ?? {}
  if (typeof args !== 'object' || Array.isArray(args) || args === null) {
    return { ok: false, error: `invalid arguments for ${call.name}: the arguments must be a JSON object` }
  }
  let text: string
  try {
    text = canonicalJson(args)
  } catch (error) {
    return { ok: false, error: `invalid arguments for ${call.name}: ${(error as Error).message}` }
  }
  const malformed = malformedText('arguments', text)
  if (malformed) return { ok: false, error: `invalid arguments for ${call.name}: ${malformed}` }
  const bytes = utf8Length(text)
  if (bytes > MCP_ARGUMENT_BYTES) {
    return {
      ok: false,
      error:
        `invalid arguments for ${call.name}: they are ${formatCount(bytes)} bytes as JSON; the limit is ` +
        `${formatCount(MCP_ARGUMENT_BYTES)} bytes: pass less in one call`,
    }
  }
  return { ok: true, call: { id: call.id, name: call.name, args: args as Record<string, unknown> } }
}
