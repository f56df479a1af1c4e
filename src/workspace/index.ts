/**
 * The workspace a run works in: path safety, the file tools offered to the model, toolchain detection,
 * never-exiting-command recognition and failure advice. Pure Node — nothing here imports Temporal.
 */

export { ADVICE, adviceFor } from './advice.js'
export { holdsDeniedFile } from './denied.js'
export { type ListDirArgs, listDir } from './list.js'
export {
  DEFAULT_LIMITS,
  type PathTarget,
  type ToolOptions,
  type ToolOutcome,
  type WorkspaceLimits,
} from './outcome.js'
export {
  type NormalisedPath,
  normaliseWorkspacePath,
  type PathResolution,
  type ResolvedPath,
  ROOT_PATH,
  resolveWorkspacePath,
} from './paths.js'
export { type ReadFileArgs, readFile } from './read.js'
export { type SearchArgs, type SearchOptions, searchFiles } from './search.js'
export {
  describeToolchain,
  detectEcosystem,
  detectToolchain,
  type Toolchain,
  type ToolchainCommand,
} from './toolchain.js'
export { TREE_FORMAT, type TreeDigest, treeDigest } from './tree.js'
export { type LongRunning, longRunningCommand, workspaceFiles, workspaceView } from './view.js'
export { type EditFileArgs, editFile, type WriteFileArgs, writeFile } from './write.js'
