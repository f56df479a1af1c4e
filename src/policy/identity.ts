/**
 * Who may answer an ask, and how their answers are proven. Approvers are listed with Ed25519 public keys;
 * a decision is then a signature the workflow verifies. `identity: unsigned` (explicit) trusts typed names
 * instead, for local work, and every such decision is marked unsigned in the audit. A policy that names
 * approvers without keys and without `identity: unsigned` does not load: a list of names nobody can prove
 * is not a control.
 */
import { z } from 'zod'
import { APPROVER_NAME, parsePublicKey } from '../identity/index.js'
import { PolicyError } from './errors.js'

export const IDENTITY_MODES = ['signed', 'unsigned'] as const
export type IdentityMode = (typeof IDENTITY_MODES)[number]

const approverName = z
  .string()
  .regex(APPROVER_NAME, 'an approver name is letters, digits and . _ @ + - (up to 64, no spaces or padding)')

const publicKey = z.string().superRefine((text, ctx) => {
  const parsed = parsePublicKey(text)
  if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.error })
})

export const approverSchema = z.union([
  approverName,
  z.object({ name: approverName, keys: z.array(publicKey).optional() }).strict(),
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
