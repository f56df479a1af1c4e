/**
 * The tools offered to the model — their schemas and names — and the sizes a call may have, checked before
 * anything runs. Pure: the workflow, the model adapter and the activities validate with the same code.
 */
export { boundString, boundValue, type ValueBounds } from './bounded.js'
export {
  argvProblem,
  CALL_LIMITS,
  contentProblem,
  malformedText,
  pathProblem,
  patternProblem,
  utf8Length,
  wellFormed,
} from './limits.js'
export {
  isMcpToolName,
  MCP_ARGUMENT_BYTES,
  MCP_SERVER_NAME,
  MCP_TOOL_NAME,
  type McpCall,
  type McpToolAnnotations,
  type McpToolDefinition,
  type McpToolName,
  mcpArguments,
  mcpToolDigest,
  readsOnly,
  splitMcpToolName,
} from './mcp.js'
export {
  isToolName,
  type OwnToolCall,
  TOOL_NAMES,
  type ToolArgs,
  type ToolCall,
  type ToolName,
  toolSchemas,
  type ValidatedCall,
  validateToolCall,
} from './schemas.js'
