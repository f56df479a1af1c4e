/**
 * The MCP servers a worker offers its runs: the operator's configuration (`TETHER_MCP_SERVERS`, a YAML or
 * JSON file), read once when the worker starts. Stdio servers are commands, run inside the sandbox with a
 * profile of their own; HTTP servers are URLs, reached through the egress judge under the run's `net` rules.
 * Credentials are the operator's: named worker variables, passed to a stdio server's environment or put in
 * an HTTP server's headers by the worker — never the model's, never in a command's sandbox.
 */
import { readFileSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { parseDuration } from '../run/index.js'
import { MCP_SERVER_NAME } from '../tools/index.js'
import { ConfigError } from './config.js'

const DEFAULT_TIMEOUT = '60s'
/** `${NAME}` in a header value or a command argument: a worker variable (or `${workspace}`: the run's). */
const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g

const duration = z
  .string()
  .default(DEFAULT_TIMEOUT)
  .transform((text, ctx) => {
    const ms = parseDuration(text)
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `expected a duration such as "30s" or "2m", not "${text}"` })
      return z.NEVER
    }
    return ms
  })
const variableName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a variable name')
const hostPath = z.string().refine(isAbsolute, 'expected an absolute path')

const stdioServer = z
  .object({
    /** Program and arguments; `${workspace}` stands for the run's workspace. */
    command: z.array(z.string().min(1)).min(1),
    /** What of the run's workspace the server sees: `read-write`, `read-only` or `none` (default). */
    workspace: z.enum(['read-write', 'read-only', 'none']).default('none'),
    /** Worker variables the server receives besides the sandbox's allowlist (its credentials). */
    env: z.array(variableName).default([]),
    /** Host paths kept visible read-only although home or /tmp would hide them (where the server lives). */
    readOnly: z.array(hostPath).default([]),
    /** How long one call may take. */
    timeout: duration,
  })
  .strict()

const httpServer = z
  .object({
    /** A Streamable HTTP endpoint. */
    url: z.url().refine((url) => /^https?:/.test(url), 'expected an http:// or https:// URL'),
    /** Headers the worker adds to every request; `${NAME}` is a worker variable (a token). */
    headers: z.record(z.string(), z.string()).default({}),
    timeout: duration,
  })
  .strict()

const fileSchema = z
  .object({
    servers: z.record(z.string(), z.union([stdioServer, httpServer])),
  })
  .strict()

export type McpServerConfig =
  | ({ name: string; kind: 'stdio' } & z.output<typeof stdioServer>)
  | ({ name: string; kind: 'http' } & z.output<typeof httpServer>)

/** Reads the operator's MCP server file; throws ConfigError naming the file and the field. */
export function loadMcpServers(path: string): McpServerConfig[] {
  let data: unknown
  try {
    const text = readFileSync(path, 'utf8')
    data = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why =
      code === 'ENOENT' ? 'no such file' : ((error as Error).message.split('\n')[0] ?? String(error))
    throw new ConfigError(`${path}: cannot read the MCP servers file (${why}); check TETHER_MCP_SERVERS`)
  }
  const parsed = fileSchema.safeParse(data)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    const field = issue.path.map(String).join('.') || '(the file itself)'
    throw new ConfigError(`${path}: ${field}: ${issue.message}`)
  }
  const misnamed = Object.keys(parsed.data.servers).find((name) => !MCP_SERVER_NAME.test(name))
  if (misnamed !== undefined) {
    throw new ConfigError(
      `${path}: servers.${misnamed}: a server name is a-z, 0-9, _ and -, at most 64 characters (it names the tools: server.tool)`,
    )
  }
  return Object.entries(parsed.data.servers).map(([name, server]) =>
    'url' in server ? { name, kind: 'http', ...server } : { name, kind: 'stdio', ...server },
  )
}

/**
 * `text` with every `${NAME}` replaced: `${workspace}` by the run's workspace, other names by the worker's
 * variables. Throws ConfigError naming a variable that is not set.
 */
export function expandVariables(
  text: string,
  values: { workspace?: string; env: NodeJS.ProcessEnv },
  where: string,
): string {
  return text.replace(VARIABLE, (_match, name: string) => {
    if (name === 'workspace' && values.workspace !== undefined) return values.workspace
    const value = values.env[name]
    if (value === undefined || value === '')
      throw new ConfigError(
        `${where}: the variable ${name} is not set on this worker; set it, or change ${where}`,
      )
    return value
  })
}
