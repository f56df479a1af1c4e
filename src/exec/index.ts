/**
 * The exec runner: argv-only processes with bounded head+tail capture and whole-tree kills.
 * Workflow code imports `./activity-options.js` directly instead: this door also leads to Node modules.
 */
export {
  EXEC_HEARTBEAT_TIMEOUT_MS,
  EXEC_START_TO_CLOSE_SLACK_MS,
  type ExecActivityOptions,
  type ExecActivityTuning,
  execActivityOptions,
} from './activity-options.js'
export { elisionMarker, OutputCapture } from './capture.js'
export {
  DEFAULT_DRAIN_MS,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_OUTPUT_CEILING,
  DEFAULT_TIMEOUT_MS,
} from './defaults.js'
export {
  type EnvScrubRules,
  GIT_CONFIG_PINS,
  isScrubbedEnvName,
  neverPassed,
  pinGitConfig,
  SANDBOX_ENV_ALLOWED,
  SCRUBBED_ENV,
  sandboxEnvironment,
  scrubEnv,
} from './env.js'
export { ExecInputError, ExecSpawnError } from './errors.js'
export { runCommand } from './run.js'
export {
  adoptEdits,
  type CacheAccess,
  closeWarmSandboxes,
  DEFAULT_SANDBOX_LIMITS,
  diskShortfall,
  EgressJudge,
  type FilterArch,
  filterArch,
  type HandBack,
  handBackWorkspace,
  heldByIdentity,
  IDENTITY_COUNT,
  IDENTITY_FIRST,
  isRootWorker,
  type NetworkAccess,
  type NetworkDecision,
  type PlantedGitFile,
  plantedGitFiles,
  rootWorkspaceRefusal,
  type SandboxLimits,
  type SandboxOptions,
  type SandboxReport,
  type SandboxRuntime,
  SandboxUnavailableError,
  sandboxRuntime,
  seccompFilter,
  toolchainBinds,
} from './sandbox/index.js'
export { type Service, type ServiceExit, type ServiceOptions, startService } from './service.js'
export type {
  ExecEnv,
  ExecProgress,
  ExecResult,
  ExecStatus,
  RunCommandOptions,
  StreamCapture,
} from './types.js'
