/** `tether mcp`: tether as an MCP server on stdin and stdout (docs/mcp.md). */
import type { Client } from '@temporalio/client'
import type { Command } from 'commander'
import type { AuditStore } from '../../audit/index.js'
import { CliError } from '../errors.js'

export function registerMcp(program: Command): void {
  program
    .command('mcp')
    .description(
      'Serve tether as an MCP server on stdin and stdout: tools to start governed runs, follow them, answer ' +
        'their approvals and cancel them; with MCP Tasks, the run is the task.',
    )
    .option(
      '--policies <dir>',
      'the policy files clients may name, NAME.yaml each (default: TETHER_MCP_POLICIES; else the tiered and strict presets)',
    )
    .option(
      '--workspace-root <dir...>',
      "folders a run's workspace must lie in (default: TETHER_MCP_WORKSPACES, colon-separated; none: no run starts)",
    )
    .action(async (options: { policies?: string; workspaceRoot?: string[] }) => {
      const { cliConfig, withAudit, withTemporal } = await import('../connect.js')
      const { createTetherMcpServer } = await import('../../embed/index.js')
      const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js')
      const config = cliConfig()
      const policies = await allowedPolicies(options.policies ?? config.mcpServe.policies)
      const workspaceRoots = options.workspaceRoot ?? config.mcpServe.workspaceRoots
      await withTemporal((client, target) =>
        withAudit(async (audit) => {
          const server = createTetherMcpServer({
            client,
            audit,
            taskQueue: target.taskQueue,
            policies,
            workspaceRoots,
          })
          const transport = new StdioServerTransport()
          // stdout is the protocol's: nothing else may be written there while it serves.
          const ended = new Promise<void>((resolve) => {
            process.stdin.once('end', resolve)
            process.stdin.once('close', resolve)
            transport.onclose = resolve
          })
          await server.connect(transport)
          await ended
          await server.close()
        }),
      )
    })
}

/** The operator's allowlist of policies, or one line saying which file does not load. */
async function allowedPolicies(folder: string | undefined) {
  const { loadMcpPolicies } = await import('../../embed/index.js')
  const { PolicyError } = await import('../../policy/index.js')
  try {
    return await loadMcpPolicies(folder)
  } catch (error) {
    if (error instanceof PolicyError || (error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new CliError((error as Error).message)
    throw error
  }
}

/** tether's MCP server for the inbox's `/mcp` (TETHER_MCP_POLICIES, TETHER_MCP_WORKSPACES). */
export async function mcpEndpoint(client: Client, audit: AuditStore, taskQueue: string) {
  const { cliConfig } = await import('../connect.js')
  const { mcpHttpHandler } = await import('../../embed/index.js')
  const { mcpServe } = cliConfig()
  return mcpHttpHandler({
    client,
    audit,
    taskQueue,
    policies: await allowedPolicies(mcpServe.policies),
    workspaceRoots: mcpServe.workspaceRoots,
  })
}
