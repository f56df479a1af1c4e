/**
 * The tools tether offers the model, as zod schemas. Pure (zod only), so the workflow validates a call's
 * arguments with the same schema the provider advertises: a malformed call becomes an observation for the
 * model, never a crash. Sizes are checked too (limits.ts), so nothing the model sends reaches the OS, the
 * file system or Temporal history larger than they accept.
 */
import { z } from 'zod'
import { clip, formatCount } from '../present/index.js'
import { argvProblem, CALL_LIMITS, contentProblem, pathProblem, patternProblem } from './limits.js'
import { isMcpToolName, type McpCall, validateMcpCall } from './mcp.js'

const workspacePath = z
  .string()
  .min(1, 'a workspace-relative path is required')
  .describe('Path relative to the workspace root; absolute paths and `..` escapes are refused.')

export const toolSchemas = {
  exec: z
    .object({
      argv: z
        .array(z.string())
        .min(1, 'argv needs at least the program')
        // Checked before the elements, so a reply of millions of them is refused at once.
        .max(CALL_LIMITS.argvCount, {
          error: (issue) =>
            `${formatCount((issue.input as unknown[]).length)} arguments; the limit is ` +
            `${formatCount(CALL_LIMITS.argvCount)}: pass long lists through a file (many tools read one, e.g. \`xargs -a FILE\`)`,
        })
        .describe('Program and arguments as an array; no shell is involved, so quote nothing.'),
    })
    .strict()
    .describe(
      "Run one of the project's own commands (build, test, lint, git, …) in the workspace root. " +
        'Returns the exit status and the head and tail of stdout and stderr.',
    ),
  read_file: z
    .object({
      path: workspacePath,
      offset: z.number().int().min(0).optional().describe('First line to return, 0-based (default 0).'),
      limit: z.number().int().min(1).optional().describe('Maximum number of lines to return.'),
    })
    .strict()
    .describe('Read a text file from the workspace, with line numbers.'),
  write_file: z
    .object({ path: workspacePath, content: z.string() })
    .strict()
    .describe('Create or replace a file in the workspace with the given content.'),
  edit_file: z
    .object({
      path: workspacePath,
      search: z.string().min(1, 'search must not be empty'),
      replace: z.string(),
    })
    .strict()
    .describe(
      'Replace the one occurrence of `search` in a file with `replace`; fails if it occurs 0 or 2+ times.',
    ),
  list_dir: z
    .object({ path: workspacePath.default('.') })
    .strict()
    .describe('List the entries of a workspace directory.'),
  search: z
    .object({
      pattern: z.string().min(1).describe('A JavaScript regular expression.'),
      glob: z.string().optional().describe('Only search files whose workspace path matches this glob.'),
    })
    .strict()
    .describe('Search workspace files for a regular expression; returns matching lines with paths.'),
} as const

export type ToolName = keyof typeof toolSchemas
export type ToolArgs<N extends ToolName> = z.infer<(typeof toolSchemas)[N]>

export const TOOL_NAMES = Object.keys(toolSchemas) as ToolName[]

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(toolSchemas, name)
}

/** A tool call as the model made it: the name and the raw (unvalidated) arguments. */
export interface ToolCall {
  /** The provider's id for the call, echoed back with its result. */
  id: string
  name: string
  args: unknown
  /**
   * Why the call is invalid, when the model activity found so on its full arguments (which history then
   * no longer carries in full). Absent in replies recorded before it was set.
   */
  invalid?: string
}

/** A call of one of tether's own tools, or of an MCP server's tool (`server.tool`). */
export type ValidatedCall =
  | { [N in ToolName]: { id: string; name: N; args: ToolArgs<N> } }[ToolName]
  | McpCall

/** tether's own tools' calls (the MCP tools' are `McpCall`). */
export type OwnToolCall = Exclude<ValidatedCall, McpCall>

/** Characters of a validation error: it travels through history and into the transcript. */
const ERROR_LIMIT = 1_000

/**
 * Validates a call — its shape, then its sizes — before anything runs; the error text is written for the
 * model, naming the field, what was wrong and what to do instead.
 */
export function validateToolCall(
  call: ToolCall,
): { ok: true; call: ValidatedCall } | { ok: false; error: string } {
  if (call.invalid !== undefined) return { ok: false, error: clip(call.invalid, ERROR_LIMIT) }
  // A tool of an MCP server: whether this run offers it is the judge's to say.
  if (isMcpToolName(call.name)) {
    const checked = validateMcpCall({ id: call.id, name: call.name, args: call.args })
    return checked.ok ? checked : { ok: false, error: clip(checked.error, ERROR_LIMIT) }
  }
  if (!isToolName(call.name)) {
    return {
      ok: false,
      error: clip(
        `unknown tool \`${clip(call.name, 100)}\`; available tools: ${TOOL_NAMES.join(', ')}`,
        ERROR_LIMIT,
      ),
    }
  }
  const parsed = toolSchemas[call.name].safeParse(call.args ?? {})
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${clip(issue.path.join('.'), 100) || '(arguments)'}: ${issue.message}`,
    )
    return { ok: false, error: clip(`invalid arguments for ${call.name}: ${issues.join('; ')}`, ERROR_LIMIT) }
  }
  const validated = { id: call.id, name: call.name, args: parsed.data } as OwnToolCall
  const problem = sizeProblem(validated)
  if (problem)
    return { ok: false, error: clip(`invalid arguments for ${call.name}: ${problem}`, ERROR_LIMIT) }
  return { ok: true, call: validated }
}

function sizeProblem(call: OwnToolCall): string | undefined {
  switch (call.name) {
    case 'exec':
      return argvProblem(call.args.argv)
    case 'read_file':
    case 'list_dir':
      return pathProblem('path', call.args.path)
    case 'write_file':
      return pathProblem('path', call.args.path) ?? contentProblem('content', call.args.content)
    case 'edit_file':
      return (
        pathProblem('path', call.args.path) ??
        contentProblem('search', call.args.search) ??
        contentProblem('replace', call.args.replace)
      )
    case 'search':
      return (
        patternProblem('pattern', call.args.pattern) ??
        (call.args.glob === undefined ? undefined : patternProblem('glob', call.args.glob))
      )
  }
}
