/** The first step of every path-taking tool: resolve the path now, at execution time, and re-authorise it. */
import type { ToolOptions, ToolOutcome } from './outcome.js'
import { refusal } from './outcome.js'
import { type ResolvedPath, resolveWorkspacePath } from './paths.js'

export type ToolTarget = { ok: true; path: ResolvedPath } | { ok: false; outcome: ToolOutcome }

export async function resolveForTool(
  root: string,
  relPath: string,
  options: ToolOptions | undefined,
  verb: string,
): Promise<ToolTarget> {
  const resolved = resolveWorkspacePath(root, relPath)
  if (!resolved.ok) {
    return {
      ok: false,
      outcome: refusal(
        `refused: ${resolved.reason}`,
        `${verb} ${JSON.stringify(relPath)}: refused, ${resolved.reason}`,
      ),
    }
  }
  const verdict =
    options?.authorize?.({ normalised: resolved.normalised, resolved: resolved.resolved }) ?? true
  if (verdict !== true) {
    return {
      ok: false,
      outcome: refusal(
        `refused: ${verdict}`,
        `${verb} ${resolved.normalised}: refused, ${verdict}`,
        resolved.normalised,
      ),
    }
  }
  return { ok: true, path: resolved }
}
