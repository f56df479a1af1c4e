/** The command sandbox (bubblewrap on Linux): what `runCommand` uses when given `sandbox` options. */

export { closeWarmSandboxes, prepareSandbox } from './ahead.js'
export { type CgroupSupport, detectCgroups } from './cgroup.js'
export { diskShortfall } from './disk.js'
export { type PlantedGitFile, plantedGitFiles } from './git-planted.js'
export {
  adoptEdits,
  type HandBack,
  handBackWorkspace,
  heldByIdentity,
  IDENTITY_COUNT,
  IDENTITY_FIRST,
  isRootWorker,
  rootWorkspaceRefusal,
} from './identity.js'
export { DEFAULT_SANDBOX_LIMITS, SandboxBoundError, type SandboxedLaunch } from './launch.js'
export { EgressJudge, type Judgement } from './proxy.js'
export { findOnPath, type SandboxRuntime, SandboxUnavailableError, sandboxRuntime } from './runtime.js'
export { type FilterArch, filterArch, seccompFilter } from './seccomp.js'
export { type CacheAccess, type ToolchainBinds, toolchainBinds } from './toolchains.js'
export type { NetworkAccess, NetworkDecision, SandboxLimits, SandboxOptions, SandboxReport } from './types.js'
