/**
 * The workspace on this machine as the judge reads it (judge/judge.ts): paths resolved through their links,
 * what a recursive reader would meet, and the package.json files and scripts a command leads to — through
 * the same safe reads as the file tools.
 */
import { type LongRunning, neverExitingCommand, type WorkspaceFiles } from '../commands/index.js'
import type { WorkspaceView } from '../judge/index.js'
import { holdsDeniedFile } from './denied.js'
import { hasEntry, readWorkspaceText } from './io.js'
import { resolveWorkspacePath } from './paths.js'

export type { LongRunning } from '../commands/index.js'

/** The workspace at `root` as the never-exiting check reads it. */
export function workspaceFiles(root: string): WorkspaceFiles {
  return {
    read: (relPath, maxBytes) => readWorkspaceText(root, relPath, maxBytes),
    has: (relPath) => hasEntry(root, relPath),
  }
}

/** Whether `argv`, run in the workspace at `root`, never exits by design (see commands/never-exiting.ts). */
export function longRunningCommand(root: string, argv: readonly string[]): LongRunning | undefined {
  return neverExitingCommand(workspaceFiles(root), argv)
}

/** The workspace at `root`, as the judge sees it. */
export function workspaceView(root: string): WorkspaceView {
  return {
    root,
    resolve: (path) => resolveWorkspacePath(root, path),
    holdsDenied: (path, denied) => holdsDeniedFile(root, path, denied),
    files: workspaceFiles(root),
  }
}
