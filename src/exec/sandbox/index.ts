/** The command sandbox (bubblewrap on Linux): what `runCommand` uses when given `sandbox` options. */
export { type CgroupSupport, detectCgroups } from './cgroup.js'
export { DEFAULT_SANDBOX_LIMITS, prepareSandbox, type SandboxedLaunch } from './launch.js'
export { EgressJudge, type Judgement } from './proxy.js'
export { findOnPath, type SandboxRuntime, SandboxUnavailableError, sandboxRuntime } from './runtime.js'
export { type CacheAccess, type ToolchainBinds, toolchainBinds } from './toolchains.js'
export type { NetworkAccess, NetworkDecision, SandboxLimits, SandboxOptions, SandboxReport } from './types.js'
