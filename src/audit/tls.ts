/**
 * TLS to the audit database, read the way libpq reads it: `sslmode`, `sslrootcert`, `sslcert`, `sslkey` and
 * `sslpassword` in DATABASE_URL, else PGSSLMODE, PGSSLROOTCERT, PGSSLCERT and PGSSLKEY. node-postgres reads
 * only some of these (the variables not at all but PGSSLMODE, and it treats `require` and `verify-ca` as
 * `verify-full`), so they are read here, the files checked, and handed to it as Node TLS options.
 */
import type { ConnectionOptions } from 'node:tls'
import { checkClientPair, parseCertificate, readTlsFile, TlsFileError } from '../stack/index.js'
import { AuditConnectionError } from './errors.js'

export type SslMode = 'disable' | 'require' | 'verify-ca' | 'verify-full'

export interface PostgresTls {
  /** The URL without the settings read here, so node-postgres does not read them again its own way. */
  connectionString: string
  /** For node-postgres' `ssl` (a URL without sslmode keeps node-postgres' own `ssl=true`, which wins). */
  ssl: false | ConnectionOptions
  mode: SslMode | undefined
}

const PARAMETERS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'sslpassword'] as const
type Parameter = (typeof PARAMETERS)[number]
const VARIABLES: Record<Exclude<Parameter, 'sslpassword'>, string> = {
  sslmode: 'PGSSLMODE',
  sslrootcert: 'PGSSLROOTCERT',
  sslcert: 'PGSSLCERT',
  sslkey: 'PGSSLKEY',
}

/**
 * The TLS options for `connectionString`. `env` supplies the PGSSL* variables (pass `{}` for a server tether
 * started itself). Throws a one-line, non-retryable AuditConnectionError for settings that cannot work.
 */
export function postgresTls(connectionString: string, target: string, env: NodeJS.ProcessEnv): PostgresTls {
  let url: URL
  try {
    url = new URL(connectionString)
  } catch {
    // describeServer has already said what is wrong with it.
    return { connectionString, ssl: false, mode: undefined }
  }
  const fail = (message: string) => new AuditConnectionError(message, target, false)
  const given: Partial<Record<Parameter, { value: string; setting: string }>> = {}
  for (const name of PARAMETERS) {
    const inUrl = url.searchParams.get(name)
    const variable = name === 'sslpassword' ? undefined : VARIABLES[name]
    if (inUrl) given[name] = { value: inUrl, setting: `${name} in DATABASE_URL` }
    else if (variable && env[variable]) given[name] = { value: env[variable] as string, setting: variable }
    url.searchParams.delete(name)
  }
  const mode = given.sslmode?.value
  const files = ['sslrootcert', 'sslcert', 'sslkey'] as const
  if (mode === undefined) {
    const stray = files.find((name) => given[name]?.setting.endsWith('DATABASE_URL'))
    if (stray) {
      throw fail(
        `DATABASE_URL gives ${stray} but no sslmode; add sslmode=verify-full (or verify-ca, or require) so it is used`,
      )
    }
    return { connectionString, ssl: false, mode: undefined }
  }
  // node-postgres' own TLS switches would override what is decided here.
  url.searchParams.delete('ssl')
  url.searchParams.delete('uselibpqcompat')
  const stripped = url.toString()
  if (mode === 'disable') return { connectionString: stripped, ssl: false, mode }
  if (mode === 'allow' || mode === 'prefer') {
    throw fail(
      `${given.sslmode?.setting} is ${mode}, which falls back to an unencrypted connection; tether does not: use require (encrypted), verify-full (encrypted, server checked) or disable`,
    )
  }
  if (mode !== 'require' && mode !== 'verify-ca' && mode !== 'verify-full') {
    throw fail(
      `${given.sslmode?.setting} is "${mode}"; use disable, require, verify-ca or verify-full (as libpq names them)`,
    )
  }
  try {
    const ssl: ConnectionOptions = {}
    const root = given.sslrootcert
    // `system` (as in libpq) means the CAs Node trusts, which is also what no root certificate means here.
    if (root && root.value !== 'system') {
      ssl.ca = readTlsFile(root.value, root.setting)
      parseCertificate(ssl.ca, root.setting)
    }
    const cert = given.sslcert
    const key = given.sslkey
    if (cert && !key)
      throw fail(`${cert.setting} is set but no key; set sslkey (or PGSSLKEY) to its private key`)
    if (key && !cert) throw fail(`${key.setting} is set but no certificate; set sslcert (or PGSSLCERT) too`)
    if (cert && key) {
      ssl.cert = readTlsFile(cert.value, cert.setting)
      ssl.key = readTlsFile(key.value, key.setting)
      const passphrase = given.sslpassword?.value
      if (passphrase !== undefined) ssl.passphrase = passphrase
      checkClientPair(
        { cert: ssl.cert, key: ssl.key, passphrase },
        {
          cert: cert.setting,
          key: key.setting,
          encrypted: 'give its passphrase as sslpassword in DATABASE_URL, or decrypt it',
        },
      )
    }
    if (mode === 'verify-ca' && !ssl.ca) {
      throw fail(
        `${given.sslmode?.setting} is verify-ca, which needs the CA that signed the server's certificate: set sslrootcert (or PGSSLROOTCERT), or use verify-full`,
      )
    }
    // libpq's require checks nothing unless a root certificate is given, and then checks it as verify-ca does.
    if (mode === 'require' && !ssl.ca) ssl.rejectUnauthorized = false
    if (mode === 'verify-ca' || (mode === 'require' && ssl.ca)) ssl.checkServerIdentity = () => undefined
    return { connectionString: stripped, ssl, mode }
  } catch (error) {
    if (error instanceof TlsFileError) throw fail(error.message)
    throw error
  }
}
