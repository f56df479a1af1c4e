/**
 * The operator's floor: the worker's own policy, the first layers of every run it serves. Whoever starts a
 * run chooses its goal and may stack layers of its own on the floor, which can only tighten it; the sandbox,
 * the approvers and their keys, and the identity mode are the floor's (DESIGN §9). A worker started without
 * a floor file stands on the built-in one: the sandbox enforced and tether's secret denies, nothing else
 * decided (every default `allow`, so the run's own policy decides within it).
 */
import { PolicyError } from './errors.js'
import { parsePolicyText, readPolicyFile } from './file.js'
import { Policy } from './policy.js'

export interface Floor {
  policy: Policy
  /** The floor file's path, or `built-in`. */
  source: string
}

export const BUILTIN_FLOOR = 'built-in'

export function builtinFloor(): Floor {
  const policy = Policy.tiered()
    .withDefault('write', 'allow')
    .withDefault('exec', 'allow')
    .withDefault('net', 'allow')
    .withDefault('mcp', 'allow')
  return { policy, source: BUILTIN_FLOOR }
}

/**
 * Reads a floor file (a policy file: JSON or YAML), once, when a worker starts — synchronously, so a
 * plugin can take one where the Worker is constructed. A floor whose rules or defaults ask must say who
 * answers — approvers with their keys, or `identity: unsigned` to let anyone — or a run could name its own
 * approvers for the floor's asks.
 */
export function loadFloor(path: string): Floor {
  const text = readPolicyFile(path, 'floor file')
  const policy = parsePolicyText(text, path)
  checkFloor(policy, path)
  return { policy, source: path }
}

/** A floor given as a policy (the plugin's option): checked like a file. */
export function floorOf(policy: Policy, source = 'the worker configuration'): Floor {
  checkFloor(policy, source)
  return { policy, source }
}

function checkFloor(policy: Policy, source: string): void {
  const spec = policy.toSpec()
  if (spec.floor || spec.layers.some((layer) => layer.origin !== undefined)) {
    throw new PolicyError(`${source}: floor: a floor is a policy of its own, not a run's effective policy`)
  }
  if (spec.approvers?.length || spec.identity) return
  const asks =
    Object.values(spec.defaults).includes('ask') ||
    spec.layers.some((layer) => layer.rules.some((rule) => rule.effect === 'ask'))
  if (asks) {
    throw new PolicyError(
      `${source}: approvers: the floor asks, but says nobody may answer; list the approvers with their keys ` +
        '(`tether keys new NAME` prints the entry), or set identity: unsigned to let anyone answer',
      'approvers',
      source,
    )
  }
}

/**
 * The policy a run works under on this floor: its own spec validated, then stacked on the floor (see
 * `Policy.onFloor`). Throws PolicyError with one line that names the run's field and the floor.
 */
export function onFloor(floor: Floor, spec: unknown): Policy {
  let run: Policy
  try {
    run = Policy.fromSpec(spec)
  } catch (error) {
    if (!(error instanceof PolicyError)) throw error
    throw new PolicyError(`the run's policy is invalid: ${error.message}`, error.field)
  }
  return Policy.onFloor(floor.policy, run, floor.source)
}
