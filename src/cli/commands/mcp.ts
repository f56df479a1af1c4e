/** `tether mcp`: tether as an MCP server on stdin and stdout (docs/mcp.md). */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { Command } from 'commander'
import { createTetherMcpServer, loadMcpPolicies } from '../../embed/index.js'
import { PolicyError } from '../../policy/index.js'
import { cliConfig, withAudit, withTemporal } from '../context.js'
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
      const config = cliConfig()
      let policies: Awaited<ReturnType<typeof loadMcpPolicies>>
      try {
        policies = await loadMcpPolicies(options.policies ?? config.mcpServe.policies)
      } catch (error) {
        if (error instanceof PolicyError || (error as NodeJS.ErrnoException).code === 'ENOENT')
          throw new CliError((error as Error).message)
        throw error
      }
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
