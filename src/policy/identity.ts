/**
 * Who may answer an ask, and how their answers are proven. Approvers are listed with Ed25519 public keys;
 * a decision is then a signature the workflow verifies. `identity: unsigned` (explicit) trusts typed names
 * instead, for local work, and every such decision is marked unsigned in the audit. A policy that names
 * approvers without keys and without `identity: unsigned` does not load: a list of names nobody can prove
 * is not a control.
 */
import { z } from 'zod'
import { APPROVER_NAME, formatPublicKey, parsePublicKey } from '../identity/index.js'
import { PolicyError } from './errors.js'
import { POLICY_LIMITS } from './limits.js'

export const IDENTITY_MODES = ['signed', 'unsigned'] as const
export type IdentityMode = (typeof IDENTITY_MODES)[number]

const approverName = z
  .string()
  .regex(APPROVER_NAME, 'an approver name is letters, digits and . _ @ + - (up to 64, no spaces or padding)')

export const approverNameSchema = approverName

// Keys are compared as text everywhere (approver lists, signatures, the audit), so only one spelling of each
// key's 32 bytes is accepted: the same bytes in the URL alphabet or without padding would count as another key.
const publicKey = z.string().superRefine((text, ctx) => {
  const problem = keyProblem(text)
  if (problem) ctx.addIssue({ code: 'custom', message: problem })
})

/** Why `text` is not a key as a policy must write it, or undefined. */
function keyProblem(text: string): string | undefined {
  const parsed = parsePublicKey(text)
  if (!parsed.ok) return parsed.error
  const canonical = formatPublicKey(parsed.key)
  if (canonical === text) return undefined
  return `write this key in standard base64 with padding, as \`tether keys new\` prints it: ${canonical}`
}

export const approverSchema = z.union([
  approverName,
  z.object({ name: approverName, keys: z.array(publicKey).max(POLICY_LIMITS.keys).optional() }).strict(),
])

export type ApproverSpec = z.input<typeof approverSchema>

export interface Approver {
  name: string
  /** `ed25519:<base64>` public keys; several allow rotation. */
  keys: string[]
}

/** Who may answer, and whether answers must be signed. */
export interface ApproverIdentity {
  /** `signed` when approvers are listed (with keys), unless the policy says `unsigned`. */
  mode: IdentityMode
  /** Empty: anyone may answer (unsigned). */
  approvers: Approver[]
}

export function normaliseApprovers(specs: readonly ApproverSpec[]): Approver[] {
  return specs.map((spec) =>
    typeof spec === 'string' ? { name: spec, keys: [] } : { name: spec.name, keys: [...(spec.keys ?? [])] },
  )
}

/**
 * The identity a policy asks for; throws PolicyError naming the field for duplicate names or keys, an
 * approver without a key under signed identity, or `signed` without approvers.
 */
export function checkIdentity(
  approvers: readonly Approver[],
  explicit: IdentityMode | undefined,
  file?: string,
): ApproverIdentity {
  const fail = (field: string, message: string): never => {
    throw new PolicyError(`${file ? `${file}: ` : ''}${field}: ${message}`, field, file)
  }
  const names = new Map<string, number>()
  const keys = new Map<string, string>()
  for (const [index, approver] of approvers.entries()) {
    if (names.has(approver.name)) fail(`approvers[${index}]`, `"${approver.name}" is listed twice`)
    names.set(approver.name, index)
    for (const [k, key] of approver.keys.entries()) {
      const problem = keyProblem(key)
      if (problem) fail(`approvers[${index}].keys[${k}]`, problem)
      const owner = keys.get(key)
      if (owner !== undefined)
        fail(`approvers[${index}].keys[${k}]`, `this key is listed for ${owner} already; one key, one person`)
      keys.set(key, approver.name)
    }
  }
  const mode: IdentityMode = explicit ?? (approvers.length > 0 ? 'signed' : 'unsigned')
  if (mode === 'signed') {
    if (approvers.length === 0) fail('identity', 'signed identity needs approvers listed with their keys')
    for (const [index, approver] of approvers.entries()) {
      if (approver.keys.length === 0) {
        fail(
          `approvers[${index}]`,
          `"${approver.name}" has no key; add one (\`tether keys new ${approver.name}\` prints the entry to paste) or set identity: unsigned for local work`,
        )
      }
    }
  }
  return { mode, approvers: approvers.map((approver) => ({ name: approver.name, keys: [...approver.keys] })) }
}

/** Who answers on a floor, and what a run may do about it. */
interface IdentitySource {
  approvers: readonly Approver[]
  /** As written; absent = implied by the approvers. */
  identity?: IdentityMode | undefined
}

/**
 * Who answers a run's asks on a worker's floor. Approvers are the operator's: a floor that lists them (or
 * says `identity:` explicitly) is the list, and a run may only narrow it — name some of its approvers, with
 * some of their keys, and ask for signatures where the floor trusts names. A floor that says nothing about
 * approvers leaves them to the run (its asks are then the run's own). Throws PolicyError naming the run's
 * field and the floor.
 */
export function identityOnFloor(
  floor: IdentitySource,
  run: IdentitySource,
  source: string,
): { approvers: Approver[]; identity?: IdentityMode | undefined } {
  const fail = (field: string, message: string): never => {
    throw new PolicyError(`the run's policy ${field}: ${message} (the worker's floor: ${source})`, field)
  }
  const floorMode = checkIdentity(floor.approvers, floor.identity).mode
  const runMode = checkIdentity(run.approvers, run.identity).mode
  const open = floor.approvers.length === 0 && floor.identity === undefined
  if (open) return { approvers: copy(run.approvers), identity: run.identity }
  if (floorMode === 'signed' && run.identity === 'unsigned') {
    fail('identity', 'asks for unsigned answers, but the floor requires signed ones')
  }
  if (run.approvers.length === 0) {
    // The floor's list; a run may still ask for signatures the floor does not require.
    return { approvers: copy(floor.approvers), identity: run.identity ?? floor.identity }
  }
  if (floor.approvers.length > 0) {
    for (const [index, approver] of run.approvers.entries()) {
      const listed =
        floor.approvers.find((a) => a.name === approver.name) ??
        fail(
          `approvers[${index}]`,
          `"${approver.name}" is not an approver on the floor; a run may only name approvers the floor lists`,
        )
      for (const [k, key] of approver.keys.entries()) {
        if (listed.keys.length > 0 && !listed.keys.includes(key)) {
          fail(
            `approvers[${index}].keys[${k}]`,
            `this key is not one of ${approver.name}'s keys on the floor`,
          )
        }
      }
      if (floorMode === 'signed' && approver.keys.length === 0) {
        fail(`approvers[${index}]`, `"${approver.name}" has no key, and the floor requires signed answers`)
      }
    }
  }
  return { approvers: copy(run.approvers), identity: run.identity ?? runMode }
}

function copy(approvers: readonly Approver[]): Approver[] {
  return approvers.map((approver) => ({ name: approver.name, keys: [...approver.keys] }))
}

/**
 * A policy's budget approvers, checked against its approvers: under signed identity each must be a listed
 * approver (a raise is signed with their key); a name given twice is a mistake. Throws PolicyError.
 */
export function checkBudgetApprovers(
  budgetApprovers: readonly string[],
  approvers: readonly Approver[],
  file?: string,
): string[] {
  const fail = (field: string, message: string): never => {
    throw new PolicyError(`${file ? `${file}: ` : ''}${field}: ${message}`, field, file)
  }
  const seen = new Set<string>()
  for (const [index, name] of budgetApprovers.entries()) {
    if (seen.has(name)) fail(`budgetApprovers[${index}]`, `"${name}" is listed twice`)
    seen.add(name)
    if (approvers.length > 0 && !approvers.some((approver) => approver.name === name)) {
      fail(
        `budgetApprovers[${index}]`,
        `"${name}" is not among the approvers; a budget approver is an approver (with a key) who may also raise a run's cost cap`,
      )
    }
  }
  return [...budgetApprovers]
}

/**
 * Who may raise a run's cost cap on a worker's floor. Like approvers, they are the operator's: a floor that
 * lists approvers, says `identity:` or names budget approvers owns the list, and a run may only name some of
 * them; a floor that says none of these (the built-in one) leaves them to the run. Names the run's own
 * approvers leave out are dropped (a run may narrow). Throws PolicyError naming the run's field and the floor.
 */
export function budgetApproversOnFloor(
  floor: IdentitySource & { budgetApprovers: readonly string[] },
  run: { budgetApprovers: readonly string[] },
  approvers: readonly Approver[],
  source: string,
): string[] {
  const open =
    floor.approvers.length === 0 && floor.identity === undefined && floor.budgetApprovers.length === 0
  let names: readonly string[] = run.budgetApprovers
  if (!open) {
    for (const [index, name] of run.budgetApprovers.entries()) {
      if (!floor.budgetApprovers.includes(name)) {
        throw new PolicyError(
          `the run's policy budgetApprovers[${index}]: "${name}" is not a budget approver on the floor; a run may only name budget approvers the floor lists (the worker's floor: ${source})`,
          `budgetApprovers[${index}]`,
        )
      }
    }
    if (names.length === 0) names = floor.budgetApprovers
  }
  return names.filter((name) => approvers.length === 0 || approvers.some((a) => a.name === name))
}
