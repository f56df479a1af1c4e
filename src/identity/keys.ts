/**
 * Approver public keys as a policy lists them (`ed25519:` + base64 of the 32-byte key) and signature
 * checks. Pure JavaScript Ed25519 (@noble/curves): the same code verifies in the workflow's Update
 * validator, in its Signal handler and in `tether audit approvals --verify`.
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import { type DecisionStatement, keyFingerprint, statementBytes } from './statement.js'

const PREFIX = 'ed25519:'

/** Approver names: what a policy lists and what key files are called (no spaces, nothing to mistake). */
export const APPROVER_NAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$/

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const VALUES = new Map([...ALPHABET].map((char, value) => [char, value]))

/**
 * Base64 (standard or URL alphabet, padding optional) → bytes; undefined when it is not base64. Written out
 * rather than `atob`, which the workflow sandbox does not have.
 */
export function fromBase64(text: string): Uint8Array | undefined {
  const normal = text
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .replace(/={1,2}$/, '')
  if (!/^[A-Za-z0-9+/]*$/.test(normal) || normal.length % 4 === 1) return undefined
  const bytes = new Uint8Array(Math.floor((normal.length * 3) / 4))
  let buffer = 0
  let bits = 0
  let at = 0
  for (const char of normal) {
    buffer = ((buffer << 6) | (VALUES.get(char) as number)) & 0xffffff
    bits += 6
    if (bits >= 8) {
      bits -= 8
      bytes[at++] = (buffer >> bits) & 0xff
    }
  }
  return bytes
}

export function toBase64(bytes: Uint8Array): string {
  let text = ''
  for (let i = 0; i < bytes.length; i += 3) {
    const triple = ((bytes[i] ?? 0) << 16) | ((bytes[i + 1] ?? 0) << 8) | (bytes[i + 2] ?? 0)
    text += ALPHABET[(triple >> 18) & 63]
    text += ALPHABET[(triple >> 12) & 63]
    text += i + 1 < bytes.length ? ALPHABET[(triple >> 6) & 63] : '='
    text += i + 2 < bytes.length ? ALPHABET[triple & 63] : '='
  }
  return text
}

/** The 32 key bytes of `ed25519:<base64>`, or why it is not a key. */
export function parsePublicKey(text: string): { ok: true; key: Uint8Array } | { ok: false; error: string } {
  if (typeof text !== 'string' || !text.startsWith(PREFIX)) {
    return {
      ok: false,
      error: 'a key is written "ed25519:" followed by its base64 (`tether keys new NAME` prints one)',
    }
  }
  const key = fromBase64(text.slice(PREFIX.length))
  if (key?.length !== 32) {
    return { ok: false, error: 'an Ed25519 public key is 32 bytes of base64 after "ed25519:"' }
  }
  return { ok: true, key }
}

export function formatPublicKey(key: Uint8Array): string {
  return PREFIX + toBase64(key)
}

/** `ed25519:<base64>` → its fingerprint; undefined when it is not a key. */
export function fingerprintOf(publicKey: string): string | undefined {
  const parsed = parsePublicKey(publicKey)
  return parsed.ok ? keyFingerprint(parsed.key) : undefined
}

/** Whether `signature` (base64) is `publicKey`'s signature of `statement`. Never throws. */
export function verifyStatement(publicKey: string, statement: DecisionStatement, signature: string): boolean {
  const key = parsePublicKey(publicKey)
  const bytes = fromBase64(signature)
  if (!key.ok || !bytes || bytes.length !== 64) return false
  try {
    return ed25519.verify(bytes, statementBytes(statement), key.key)
  } catch {
    return false
  }
}
