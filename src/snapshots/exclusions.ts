/**
 * What is not state. Declared caches — what a project's own install or build command makes again from
 * files that *are* state (`node_modules` from `package-lock.json`, `target/` from the sources) — are left
 * out of the tree and rebuilt on a new worker by the toolchain's install command. Secrets — every path the
 * run's effective policy denies reading — are left out too: the snapshot is taken by the worker, which asks
 * the policy about every path before it reads a byte, so a hidden file never reaches the store.
 */
import { detectEcosystem, detectToolchain, type Toolchain } from '../workspace/index.js'
import type { Exclusion } from './scan.js'
import { policyName } from './tree.js'

/**
 * The caches each ecosystem's tools make in the workspace. A bare name is a folder of that name at any
 * depth; a path with `/` is that path from the root.
 */
const ECOSYSTEM_CACHES: Record<string, readonly string[]> = {
  node: ['node_modules'],
  rust: ['target'],
  python: ['.venv', '__pycache__', '.pytest_cache', '.mypy_cache', '.ruff_cache'],
  jvm: ['.gradle', 'target', 'build'],
  elixir: ['deps', '_build'],
  ruby: ['vendor/bundle', '.bundle'],
  php: ['vendor'],
  swift: ['.build'],
  dotnet: ['bin', 'obj'],
  cmake: ['build'],
}

export interface CacheSettings {
  /** Paths the contract adds to the toolchain's caches. */
  add?: readonly string[] | undefined
  /** Paths the contract says are state after all. */
  remove?: readonly string[] | undefined
}

export interface DeclaredCaches {
  /** The cache paths left out of every tree. */
  paths: string[]
  /** The command that makes them again (the toolchain's install), when it has one. */
  rebuild?: string[] | undefined
}

/**
 * The workspace's declared cache paths: its ecosystem's, plus and minus the contract's. Asked at every
 * snapshot, so only which marker files exist is looked at (no file is read).
 */
export async function cachePaths(workspace: string, settings: CacheSettings = {}): Promise<string[]> {
  return pathsOf(await detectEcosystem(workspace).catch(() => undefined), settings)
}

/** The workspace's declared caches and the toolchain's command that makes them again. */
export async function declaredCaches(
  workspace: string,
  settings: CacheSettings = {},
): Promise<DeclaredCaches> {
  const toolchain: Toolchain | undefined = await detectToolchain(workspace).catch(() => undefined)
  const paths = pathsOf(toolchain?.ecosystem, settings)
  return { paths, ...(toolchain?.commands.install ? { rebuild: toolchain.commands.install } : {}) }
}

function pathsOf(ecosystem: string | undefined, settings: CacheSettings): string[] {
  const removed = new Set(settings.remove ?? [])
  return [...new Set([...(ECOSYSTEM_CACHES[ecosystem ?? ''] ?? []), ...(settings.add ?? [])])]
    .filter((path) => !removed.has(path))
    .sort()
}

/**
 * The exclusion for a scan: declared caches, and what `hidden` (the policy's read check) says no command or
 * tool may read. Paths reach `hidden` as text (names decoded as UTF-8), as the policy sees them.
 */
export function exclusion(caches: readonly string[], hidden: (path: string) => boolean): Exclusion {
  const names = new Set(caches.filter((c) => !c.includes('/')))
  const paths = new Set(caches.filter((c) => c.includes('/')).map((c) => c.replace(/^\/+|\/+$/g, '')))
  return (rel, isDir) => {
    if (isDir) {
      const slash = rel.lastIndexOf('/')
      if (names.has(rel.slice(slash + 1)) || paths.has(rel)) return true
    }
    return hidden(policyName(rel))
  }
}
