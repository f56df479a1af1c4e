/**
 * Real MCP servers for the tests, where a sandboxed server can run them: the npm packages
 * `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/server-filesystem`, and the probe
 * fixture (built on the official SDK), each bundled with esbuild into one file of a world-readable folder.
 * A root worker's commands run as an unprivileged identity that cannot enter a checkout only root may enter
 * (CI's), so the servers cannot run from node_modules there; bundled, they are the same code in one file.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import type { McpServerConfig } from '../../src/stack/index.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const SOURCES = {
  everything: join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js'),
  filesystem: join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js'),
  probe: join(ROOT, 'test/fixtures/mcp/probe-server.mjs'),
}

export interface McpBundles {
  folder: string
  everything: string
  filesystem: string
  probe: string
  remove(): Promise<void>
}

export async function bundleMcpServers(): Promise<McpBundles> {
  const folder = await mkdtemp(join(tmpdir(), 'tether-mcp-servers-'))
  await chmod(folder, 0o755)
  const out = {} as Record<keyof typeof SOURCES, string>
  for (const [name, entry] of Object.entries(SOURCES) as Array<[keyof typeof SOURCES, string]>) {
    out[name] = join(folder, `${name}.mjs`)
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: out[name],
      logLevel: 'error',
      // Bundled CommonJS dependencies still call require for Node's own modules.
      banner: {
        js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
    })
    await chmod(out[name], 0o644)
  }
  return { folder, ...out, remove: () => rm(folder, { recursive: true, force: true }) }
}

/** A stdio server of the bundles, as the operator's configuration names it. */
export function stdioServer(
  name: string,
  bundles: McpBundles,
  command: string[],
  options: Partial<Pick<Extract<McpServerConfig, { kind: 'stdio' }>, 'workspace' | 'env' | 'timeout'>> = {},
): McpServerConfig {
  return {
    name,
    kind: 'stdio',
    command: [process.execPath, ...command],
    workspace: options.workspace ?? 'none',
    env: options.env ?? [],
    readOnly: [bundles.folder],
    timeout: options.timeout ?? 30_000,
  }
}
