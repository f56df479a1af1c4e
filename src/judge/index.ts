/** The judge's door: a tool call, the run's policy and its workspace in, the verdict history records out. */
export {
  BUILTIN_LAYER,
  BUILTIN_RULES,
  judge,
  judgeCall,
  mcpNoRetry,
  type Resolution,
  type WorkspaceView,
} from './judge.js'
