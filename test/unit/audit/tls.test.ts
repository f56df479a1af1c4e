/**
 * TLS settings for the audit database, read as libpq reads them (URL parameters, else PGSSL* variables) and
 * turned into node-postgres' TLS options; settings that cannot work are one line before connecting.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { ConnectionOptions } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AuditConnectionError, postgresTls } from '../../../src/audit/index.js'
import { type Certificates, makeCertificates, type Pair } from '../../support/certificates.js'

let certs: Certificates
let client: Pair

beforeAll(async () => {
  certs = await makeCertificates()
  client = await certs.client('tether')
}, 60_000)

afterAll(async () => {
  await certs?.cleanup()
})

const URL_BASE = 'postgres://tether:pw@db.internal:5432/audit'
const tls = (query: string, env: NodeJS.ProcessEnv = {}) =>
  postgresTls(`${URL_BASE}${query ? `?${query}` : ''}`, 'db.internal:5432', env)

function failure(read: () => unknown): string {
  try {
    read()
  } catch (error) {
    expect(error).toBeInstanceOf(AuditConnectionError)
    expect((error as AuditConnectionError).retryable).toBe(false)
    return (error as Error).message
  }
  throw new Error('expected an AuditConnectionError')
}

describe('postgresTls', () => {
  it('leaves a URL without TLS settings alone, and never lets node-postgres read PGSSLMODE on its own', () => {
    expect(tls('')).toEqual({ connectionString: URL_BASE, ssl: false, mode: undefined })
    expect(tls('application_name=x')).toMatchObject({ ssl: false, mode: undefined })
  })

  it('gives require, verify-ca and verify-full the meaning libpq gives them', async () => {
    const ca = await readFile(certs.ca)
    expect(tls('sslmode=disable')).toEqual({ connectionString: URL_BASE, ssl: false, mode: 'disable' })
    // require: encrypted, the server not checked (node-postgres alone would check it as verify-full).
    expect(tls('sslmode=require')).toEqual({
      connectionString: URL_BASE,
      ssl: { rejectUnauthorized: false },
      mode: 'require',
    })
    const verifyCa = tls(`sslmode=verify-ca&sslrootcert=${certs.ca}`).ssl as ConnectionOptions
    expect(verifyCa).toMatchObject({ ca })
    expect(verifyCa.rejectUnauthorized).not.toBe(false)
    // The chain is checked, the host name is not.
    expect(verifyCa.checkServerIdentity?.('db.internal', {} as never)).toBeUndefined()
    // require with a root certificate checks the chain, as verify-ca does.
    const requireWithRoot = tls(`sslmode=require&sslrootcert=${certs.ca}`).ssl as ConnectionOptions
    expect(requireWithRoot).toMatchObject({ ca })
    expect(requireWithRoot.rejectUnauthorized).not.toBe(false)
    expect(requireWithRoot.checkServerIdentity).toBeTypeOf('function')
    const full = tls(`sslmode=verify-full&sslrootcert=${certs.ca}`)
    expect(full.ssl).toEqual({ ca })
    expect(full.connectionString).toBe(URL_BASE)
    expect(tls('sslmode=verify-full&sslrootcert=system').ssl).toEqual({})
  })

  it('reads the client certificate from the URL, or from PGSSL* variables; the URL wins', async () => {
    const fromUrl = tls(
      `sslmode=verify-full&sslrootcert=${certs.ca}&sslcert=${client.cert}&sslkey=${client.key}`,
    )
    expect(fromUrl.ssl).toEqual({
      ca: await readFile(certs.ca),
      cert: await readFile(client.cert),
      key: await readFile(client.key),
    })
    const fromEnv = tls('', {
      PGSSLMODE: 'verify-full',
      PGSSLROOTCERT: certs.ca,
      PGSSLCERT: client.cert,
      PGSSLKEY: client.key,
    })
    expect(fromEnv).toEqual({ ...fromUrl, connectionString: URL_BASE })
    expect(tls('sslmode=disable', { PGSSLMODE: 'verify-full' }).ssl).toBe(false)
    // node-postgres' own switches would override these settings, so they go.
    expect(tls('sslmode=require&ssl=true&uselibpqcompat=true').connectionString).toBe(URL_BASE)
  })

  it('says in one line which setting cannot work', async () => {
    expect(failure(() => tls('sslmode=prefer'))).toBe(
      'sslmode in DATABASE_URL is prefer, which falls back to an unencrypted connection; tether does not: use require (encrypted), verify-full (encrypted, server checked) or disable',
    )
    expect(failure(() => tls('', { PGSSLMODE: 'strict' }))).toBe(
      'PGSSLMODE is "strict"; use disable, require, verify-ca or verify-full (as libpq names them)',
    )
    expect(failure(() => tls('sslmode=verify-ca'))).toMatch(
      /^sslmode in DATABASE_URL is verify-ca, which needs the CA that signed the server's certificate: set sslrootcert/,
    )
    expect(failure(() => tls(`sslcert=${client.cert}&sslkey=${client.key}`))).toBe(
      'DATABASE_URL gives sslcert but no sslmode; add sslmode=verify-full (or verify-ca, or require) so it is used',
    )
    const missing = join(certs.dir, 'missing.crt')
    expect(failure(() => tls(`sslmode=require&sslcert=${missing}&sslkey=${client.key}`))).toBe(
      `sslcert in DATABASE_URL names ${missing}, which does not exist; point it at the PEM file`,
    )
    expect(failure(() => tls(`sslmode=require&sslcert=${client.cert}`))).toMatch(
      /^sslcert in DATABASE_URL is set but no key; set sslkey/,
    )
    expect(failure(() => tls(`sslmode=require&sslcert=${client.cert}&sslkey=${certs.untrusted.key}`))).toBe(
      'sslkey in DATABASE_URL is not the private key of the certificate in sslcert in DATABASE_URL; give the key that belongs to it',
    )
    expect(failure(() => tls('sslmode=verify-full', { PGSSLROOTCERT: client.key }))).toMatch(
      /^PGSSLROOTCERT does not hold a PEM certificate/,
    )
  })

  it('opens an encrypted key with sslpassword, and names a key it cannot open', async () => {
    const { execFileSync } = await import('node:child_process')
    const encrypted = join(certs.dir, 'encrypted.key')
    execFileSync('openssl', [
      'pkey',
      '-in',
      client.key,
      '-aes256',
      '-passout',
      'pass:s3cret',
      '-out',
      encrypted,
    ])
    const query = `sslmode=require&sslcert=${client.cert}&sslkey=${encrypted}`
    expect(tls(`${query}&sslpassword=s3cret`).ssl).toMatchObject({ passphrase: 's3cret' })
    expect(failure(() => tls(query))).toMatch(
      /^sslkey in DATABASE_URL holds an encrypted key; give its passphrase/,
    )
    expect(failure(() => tls(`${query}&sslpassword=wrong`))).toMatch(
      /^sslkey in DATABASE_URL holds an encrypted key the passphrase does not open/,
    )
  })
})
