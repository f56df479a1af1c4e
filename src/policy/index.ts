/**
 * The policy module's door. Pure and deterministic (no Temporal, no I/O except `loadPolicyFile`, which
 * reaches the file system only when called), so a workflow, a local activity and the CLI share one judge.
 */

export {
  type AnalysedNode,
  analyseArgv,
  analyseScript,
  type ExecContext,
  namesSensitivePath,
} from '../commands/index.js'
export { quoteWord, renderCommand, renderExecVerdict } from '../present/index.js'
export {
  ambiguousIpv4,
  canonicalIp,
  formatIp,
  formatRange,
  type IpAddress,
  type IpRange,
  isIpv4,
  nat64Ipv4,
  parseIp,
  parseRange,
  rangeHolds,
  type SpecialRange,
  sameIp,
  specialRange,
  splitHostPort,
} from './addresses.js'
export { PolicyError } from './errors.js'
export { loadPolicyFile, parsePolicyText } from './file.js'
export { BUILTIN_FLOOR, builtinFloor, type Floor, floorOf, loadFloor, onFloor } from './floor.js'
export { POLICY_LIMITS } from './limits.js'
export { hostPort } from './net.js'
export { Policy } from './policy.js'
export { type RememberedRule, rememberRule } from './remember.js'
export {
  CACHE_ACCESS,
  type CacheAccess,
  parseSize,
  SANDBOX_MODES,
  type SandboxMode,
  type SandboxPolicy,
  type SandboxSettings,
} from './sandbox.js'
export type { FloorRecord, LayerOrigin, LayerSpec, PolicySpec, PolicySpecInput, RuleSpec } from './spec.js'
export { stricterPolicy } from './tighten.js'
export {
  ACTS,
  type Act,
  EFFECTS,
  type Effect,
  type ExecCheck,
  type ExecNodeKind,
  type ExecVerdict,
  type Verdict,
} from './types.js'
