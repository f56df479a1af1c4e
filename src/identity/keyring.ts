/**
 * An approver's key pair on their own machine: made by `tether keys new NAME`, kept as a PKCS#8 PEM file
 * (mode 0600) in the user's config folder, used by `tether approve` / `tether deny` to sign. Node only
 * (node:crypto); the policy holds only the public half.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
  sign,
} from 'node:crypto'
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { keyIdOf } from './dsse.js'
import { APPROVER_NAME, formatPublicKey, fromBase64, parsePublicKey, toBase64 } from './keys.js'
import { type DecisionStatement, statementBytes } from './statement.js'

export class KeyringError extends Error {
  override name = 'KeyringError'
}

/** `$XDG_CONFIG_HOME/tether/keys` (default `~/.config/tether/keys`), or `TETHER_KEYS_DIR`. */
export function keysDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TETHER_KEYS_DIR) return env.TETHER_KEYS_DIR
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'tether', 'keys')
}

function checkName(name: string): void {
  if (!APPROVER_NAME.test(name)) {
    throw new KeyringError(
      `"${name}" is not an approver name: use letters, digits and . _ @ + - (up to 64, starting with a letter or digit)`,
    )
  }
}

function publicKeyOf(key: KeyObject): string {
  const jwk = createPublicKey(key).export({ format: 'jwk' }) as { x?: string }
  const raw = jwk.x ? fromBase64(jwk.x) : undefined
  if (raw?.length !== 32) throw new KeyringError('the key file does not hold an Ed25519 key')
  return formatPublicKey(raw)
}

/** Makes NAME's key pair; refuses to overwrite one (a lost private key cannot sign again). */
export function createKey(name: string, dir = keysDir()): { file: string; publicKey: string } {
  checkName(name)
  const file = join(dir, `${name}.pem`)
  if (existsSync(file)) {
    throw new KeyringError(
      `${file} exists already; its public key: \`tether keys show ${name}\` (move the file away first to make a new one)`,
    )
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const { privateKey } = generateKeyPairSync('ed25519')
  writeFileSync(file, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: 'wx' })
  return { file, publicKey: publicKeyOf(privateKey) }
}

export interface ApproverKey {
  name: string
  file: string
  publicKey: string
  sign(statement: DecisionStatement): string
}

/** NAME's private key from the keyring; refuses a file others can read. */
export function loadKey(name: string, dir = keysDir()): ApproverKey {
  checkName(name)
  const file = join(dir, `${name}.pem`)
  if (!existsSync(file)) {
    throw new KeyringError(
      `no key for ${name} in ${dir}; make one with \`tether keys new ${name}\` and add its public key to the policy`,
    )
  }
  const key = privateKeyFile(file, `${name}'s key`)
  return {
    name,
    file,
    publicKey: publicKeyOf(key),
    sign: (statement) => toBase64(sign(null, statementBytes(statement), key)),
  }
}

/** The names with a key in the keyring. */
export function listKeys(dir = keysDir()): string[] {
  try {
    return readdirSync(dir)
      .filter((file) => file.endsWith('.pem'))
      .map((file) => file.slice(0, -4))
      .filter((name) => APPROVER_NAME.test(name))
      .sort()
  } catch {
    return []
  }
}

/** The worker's own key: what it signs each run's provenance with. */
export interface WorkerKey {
  file: string
  publicKey: string
  /** The key id DSSE signatures carry (securesystemslib's: dsse.ts). */
  keyid: string
  sign(bytes: Uint8Array): string
}

/**
 * The worker's signing key from `file`, made there (mode 0600, its folder 0700) when there is none yet: the
 * first worker to start makes it, every later one (and a second one racing it) reads the same key. Refuses
 * a file others can read.
 */
export function workerKey(file: string): WorkerKey {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
    const { privateKey } = generateKeyPairSync('ed25519')
    // Written whole under a name of its own, then linked into place: a worker racing this one finds either
    // no file or the whole key, never a file created and not yet written.
    const draft = `${file}.${process.pid}.${randomUUID()}`
    writeFileSync(draft, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600, flag: 'wx' })
    try {
      linkSync(draft, file)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    } finally {
      unlinkSync(draft)
    }
  }
  const key = privateKeyFile(file, 'the worker key')
  const publicKey = publicKeyOf(key)
  return {
    file,
    publicKey,
    keyid: keyIdOf(publicKey) as string,
    sign: (bytes) => toBase64(sign(null, bytes, key)),
  }
}

/**
 * A public key given the ways a person has one: `ed25519:<base64>`, or a PEM file (public or private) such
 * as the worker's key file. Throws KeyringError.
 */
export function publicKeyFrom(text: string): string {
  if (text.startsWith('ed25519:')) {
    if (!parsePublicKey(text).ok) throw new KeyringError(`${text} is not an Ed25519 public key`)
    return text
  }
  let pem: string
  try {
    pem = readFileSync(text, 'utf8')
  } catch {
    throw new KeyringError(`cannot read the key file ${text}; give an ed25519:<base64> key or a PEM file`)
  }
  try {
    return publicKeyOf(pem.includes('PRIVATE KEY') ? createPrivateKey(pem) : createPublicKey(pem))
  } catch (error) {
    if (error instanceof KeyringError) throw error
    throw new KeyringError(`${text} holds no Ed25519 key`)
  }
}

/** An Ed25519 private key file, refused when others can read it. */
function privateKeyFile(file: string, what: string): KeyObject {
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
    throw new KeyringError(`${what} ${file} can be read by others; make it private (chmod 600 ${file})`)
  }
  let key: KeyObject
  try {
    key = createPrivateKey(readFileSync(file, 'utf8'))
  } catch {
    throw new KeyringError(`${what} ${file} is not a PEM private key`)
  }
  if (key.asymmetricKeyType !== 'ed25519') throw new KeyringError(`${what} ${file} is not an Ed25519 key`)
  return key
}
