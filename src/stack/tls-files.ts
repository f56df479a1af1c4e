/**
 * The certificates and keys of tether's own connections (Temporal, PostgreSQL), read and checked before any
 * handshake, so that a missing file, a key that is not the certificate's or an expired certificate is one
 * line naming the setting, not a TLS error from deep inside a driver. Also: how Node names a server
 * certificate it does not trust, and a refusal by the server, so both connections word them alike.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'

/** One line naming the setting and what to do. */
export class TlsFileError extends Error {
  override name = 'TlsFileError'
}

/** The file a setting names. */
export function readTlsFile(path: string, setting: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EACCES'
          ? 'is not readable by this user'
          : code === 'EISDIR'
            ? 'is a folder'
            : `cannot be read (${code ?? String(error)})`
    throw new TlsFileError(`${setting} names ${path}, which ${why}; point it at the PEM file`)
  }
}

export function parseCertificate(data: Uint8Array, setting: string): X509Certificate {
  try {
    return new X509Certificate(data)
  } catch {
    throw new TlsFileError(
      `${setting} does not hold a PEM certificate; give the certificate file (-----BEGIN CERTIFICATE-----)`,
    )
  }
}

/** `encrypted` says what to do with a key that needs a passphrase that was not given (or was wrong). */
export function parsePrivateKey(
  data: Uint8Array,
  setting: string,
  options: { passphrase?: string | undefined; encrypted: string },
): KeyObject {
  try {
    return createPrivateKey({
      key: Buffer.from(data),
      ...(options.passphrase !== undefined ? { passphrase: options.passphrase } : {}),
    })
  } catch {
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(Buffer.from(data).toString())) {
      const which =
        options.passphrase === undefined
          ? 'an encrypted key'
          : 'an encrypted key the passphrase does not open'
      throw new TlsFileError(`${setting} holds ${which}; ${options.encrypted}`)
    }
    throw new TlsFileError(
      `${setting} does not hold a PEM private key; give the key file (-----BEGIN PRIVATE KEY-----)`,
    )
  }
}

/** A client certificate and its key: both parse, the key is the certificate's, and it has not expired. */
export function checkClientPair(
  pair: { cert: Uint8Array; key: Uint8Array; passphrase?: string | undefined },
  settings: { cert: string; key: string; encrypted: string },
): void {
  const certificate = parseCertificate(pair.cert, settings.cert)
  const key = parsePrivateKey(pair.key, settings.key, {
    passphrase: pair.passphrase,
    encrypted: settings.encrypted,
  })
  if (!certificate.checkPrivateKey(key)) {
    throw new TlsFileError(
      `${settings.key} is not the private key of the certificate in ${settings.cert}; give the key that belongs to it`,
    )
  }
  const expires = Date.parse(certificate.validTo)
  if (expires < Date.now()) {
    throw new TlsFileError(
      `the client certificate in ${settings.cert} expired on ${new Date(expires).toISOString()}; get a new one`,
    )
  }
}

/** Node's codes for a server certificate that no trusted CA signed. */
export const UNTRUSTED_CERTIFICATE = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_SIGNATURE_FAILURE',
])

/** A TLS alert from the server: it refused the handshake, most often over the client certificate. */
export function isTlsAlert(error: { code?: string | undefined; message?: string | undefined }): boolean {
  return Boolean(error.code?.includes('ALERT')) || /alert|certificate required/i.test(error.message ?? '')
}
