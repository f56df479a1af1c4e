/**
 * The tools tether offers the model, as zod schemas. Pure (zod only), so the workflow validates a call's
 * arguments with the same schema the provider advertises: a malformed call becomes an observation for the
 * model, never a crash.
 */
import { z } from 'zod'

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
}

export type ValidatedCall = { [N in ToolName]: { id: string; name: N; args: ToolArgs<N> } }[ToolName]

/** Validates a call; the error text is written for the model, naming the field and what was expected. */
export function validateToolCall(
  call: ToolCall,
): { ok: true; call: ValidatedCall } | { ok: false; error: string } {
  if (!isToolName(call.name)) {
    return { ok: false, error: `unknown tool \`${call.name}\`; available tools: ${TOOL_NAMES.join(', ')}` }
  }
  const parsed = toolSchemas[call.name].safeParse(call.args ?? {})
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(arguments)'}: ${issue.message}`,
    )
    return { ok: false, error: `invalid arguments for ${call.name}: ${issues.join('; ')}` }
  }
  return { ok: true, call: { id: call.id, name: call.name, args: parsed.data } as ValidatedCall }
}
