/**
 * What an approver signs: one canonical statement per decision, binding who (the key) to what (this run,
 * this approval, this exact action, this answer, this remembered rule, this time). Pure, with a pure-JS
 * SHA-256, so the workflow computes the same bytes deterministically inside its sandbox.
 */
import { sha256 } from '@noble/hashes/sha2.js'

/** JSON with object keys sorted at every level and no whitespace: the same value gives the same bytes. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new TypeError('canonicalJson: not a finite number')
    if (value === undefined) throw new TypeError('canonicalJson: undefined has no JSON form')
    return JSON.stringify(value)
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`
}

const encoder = new TextEncoder()

function hex(bytes: Uint8Array): string {
  let text = ''
  for (const byte of bytes) text += byte.toString(16).padStart(2, '0')
  return text
}

/** The action an approval is about, exactly as the policy judged it. */
export interface JudgedAction {
  act: string
  target: string
  /** The judged command tree as shown to the approver (exec only). */
  tree?: string | undefined
}

/** Hex SHA-256 of a value's canonical JSON: the same value gives the same digest anywhere, the workflow included. */
export function digestOf(value: unknown): string {
  return hex(sha256(encoder.encode(canonicalJson(value))))
}

/** Hex SHA-256 of the judged action: a signature over it covers every word the approver was shown. */
export function actionDigest(action: JudgedAction): string {
  return digestOf({ act: action.act, target: action.target, tree: action.tree ?? null })
}

/** Everything a signed decision says. */
export interface DecisionStatement {
  /** The run (workflow id). */
  run: string
  approval: string
  /** `actionDigest` of the request. */
  action: string
  decision: 'approve' | 'deny'
  /** The rule added for the rest of the run, exactly as it will be added; null for none. */
  remember: string | null
  /** What the model reads with a denial (or the approver's note with an approval); null for none. */
  reason: string | null
  /** An edited command the approver approves instead of the asked one; null for none. */
  replacement: string[] | null
  /** The new cost cap a budget approver approves (`"50 USD"`); absent for every other answer. */
  raiseTo?: string | undefined
  /** When the approver signed, in Unix milliseconds. */
  issuedAt: number
}

const DOMAIN = 'tether decision v1\n'

/** The exact bytes signed: a domain prefix (no signature made for anything else can pass) + canonical JSON. */
export function statementBytes(statement: DecisionStatement): Uint8Array {
  const { run, approval, action, decision, remember, reason, replacement, raiseTo, issuedAt } = statement
  // `raiseTo` only where there is one, so every statement signed before it existed keeps its bytes.
  return encoder.encode(
    DOMAIN +
      canonicalJson({
        run,
        approval,
        action,
        decision,
        remember,
        reason,
        replacement,
        ...(typeof raiseTo === 'string' ? { raiseTo } : {}),
        issuedAt,
      }),
  )
}

/** A short, stable name for a public key: `SHA256:` + the first 16 bytes of its hash, hex. */
export function keyFingerprint(publicKey: Uint8Array): string {
  return `SHA256:${hex(sha256(publicKey)).slice(0, 32)}`
}
