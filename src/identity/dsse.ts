/**
 * DSSE envelopes (the Dead Simple Signing Envelope in-toto attestations travel in): the pre-authentication
 * encoding that is signed, key ids as securesystemslib computes them, and verification with pure-JS
 * Ed25519. Signing needs a private key: keyring.ts (Node) does that half.
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import { fromBase64, parsePublicKey, toBase64 } from './keys.js'
import { digestOf } from './statement.js'

/** The payload type of an in-toto Statement in an envelope. */
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json'

export interface DsseEnvelope {
  /** Base64 of the payload's bytes (standard alphabet, padded). */
  payload: string
  payloadType: string
  signatures: Array<{ keyid: string; sig: string }>
}

const encoder = new TextEncoder()

/** The bytes a DSSE signature covers: `DSSEv1 <len(type)> <type> <len(body)> <body>`, lengths in bytes. */
export function pae(payloadType: string, payload: Uint8Array): Uint8Array {
  const type = encoder.encode(payloadType)
  const head = encoder.encode(`DSSEv1 ${type.length} ${payloadType} ${payload.length} `)
  const bytes = new Uint8Array(head.length + payload.length)
  bytes.set(head)
  bytes.set(payload, head.length)
  return bytes
}

function hex(bytes: Uint8Array): string {
  let text = ''
  for (const byte of bytes) text += byte.toString(16).padStart(2, '0')
  return text
}

/**
 * The key id of an Ed25519 public key (`ed25519:<base64>`) as securesystemslib names it: the SHA-256 of the
 * canonical JSON of `{keytype, scheme, keyval: {public: <hex>}}`; undefined when it is not a key.
 */
export function keyIdOf(publicKey: string): string | undefined {
  const parsed = parsePublicKey(publicKey)
  if (!parsed.ok) return undefined
  return digestOf({ keytype: 'ed25519', scheme: 'ed25519', keyval: { public: hex(parsed.key) } })
}

/** An envelope around `payload`, signed by `sign` (Ed25519 over the PAE bytes, base64) as `keyid`. */
export function sealEnvelope(
  payloadType: string,
  payload: Uint8Array,
  signer: { keyid: string; sign(bytes: Uint8Array): string },
): DsseEnvelope {
  return {
    payload: toBase64(payload),
    payloadType,
    signatures: [{ keyid: signer.keyid, sig: signer.sign(pae(payloadType, payload)) }],
  }
}

/**
 * Checks that `value` is a DSSE envelope of `payloadType` signed by `publicKey` (a signature whose key id
 * is that key's and which verifies over the PAE bytes), and returns its payload parsed as JSON; or one line
 * saying what is wrong. Never throws.
 */
export function openEnvelope(
  value: unknown,
  publicKey: string,
  payloadType = IN_TOTO_PAYLOAD_TYPE,
): { ok: true; payload: unknown } | { ok: false; error: string } {
  const fail = (error: string) => ({ ok: false as const, error })
  const envelope = value as Partial<DsseEnvelope> | null
  if (
    !envelope ||
    typeof envelope !== 'object' ||
    typeof envelope.payload !== 'string' ||
    typeof envelope.payloadType !== 'string' ||
    !Array.isArray(envelope.signatures)
  ) {
    return fail('not a DSSE envelope (it needs payload, payloadType and signatures)')
  }
  if (envelope.payloadType !== payloadType) {
    return fail(`the payload type is ${JSON.stringify(envelope.payloadType)}, not ${payloadType}`)
  }
  const key = parsePublicKey(publicKey)
  const keyid = keyIdOf(publicKey)
  if (!key.ok || !keyid) return fail(`the verification key is not an Ed25519 public key: ${publicKey}`)
  const payload = fromBase64(envelope.payload)
  // Only the one spelling: text that decodes to the signed bytes another way is not what was signed.
  if (!payload || toBase64(payload) !== envelope.payload) return fail('the payload is not base64 as signed')
  const mine = envelope.signatures.filter((s) => s && typeof s === 'object' && s.keyid === keyid)
  if (mine.length === 0) return fail(`no signature by key ${keyid.slice(0, 16)}… (the key given)`)
  const signed = pae(envelope.payloadType, payload)
  const verified = mine.some((signature) => {
    const sig = typeof signature.sig === 'string' ? fromBase64(signature.sig) : undefined
    // As with the payload, only the spelling that was made: unused bits of the last character count too.
    if (sig?.length !== 64 || toBase64(sig) !== signature.sig) return false
    try {
      return ed25519.verify(sig, signed, key.key)
    } catch {
      return false
    }
  })
  if (!verified)
    return fail('the signature does not verify: the envelope was altered or signed by another key')
  try {
    return { ok: true, payload: JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) }
  } catch {
    return fail('the signed payload is not JSON')
  }
}
