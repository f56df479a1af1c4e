/**
 * MCP servers as tether consumes them: sessions with an operator's servers — stdio ones started inside the
 * command sandbox, HTTP ones reached through the egress judge — their tool listings and calls. The policy,
 * the pins and the audit are the callers' (judge/, activities/).
 */
export { judgedFetch, McpRefusedError } from './http.js'
export { resultText } from './result.js'
export { type CallOutcome, type Listing, type McpConnection, McpSession, McpSessions } from './session.js'
export { ServiceTransport } from './transport.js'
