/**
 * The bundled CLI hashes PostgreSQL passwords with scripts/pg-node-crypto.cjs in place of pg's Web Crypto
 * version: each function must give pg's own result for the same input, or a connection would not log in.
 */
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'

const require = createRequire(import.meta.url)
type Hashing = Record<string, (...args: unknown[]) => unknown>
const ours = require('../../../scripts/pg-node-crypto.cjs') as Hashing
const pgs = require('pg/lib/crypto/utils.js') as Hashing

const bytes = async (value: unknown) => Buffer.from((await value) as ArrayBuffer).toString('hex')

describe("the bundle's pg password hashing", () => {
  it('exports the functions pg has', () => {
    expect(Object.keys(ours).sort()).toEqual(Object.keys(pgs).sort())
  })

  it('gives what pg gives for SCRAM-SHA-256 and MD5', async () => {
    const salt = Buffer.from('c2FsdHNhbHRzYWx0', 'base64')
    expect(await bytes(ours.sha256?.(salt))).toBe(await bytes(pgs.sha256?.(salt)))
    expect(await bytes(ours.deriveKey?.('pässword', salt, 4096))).toBe(
      await bytes(pgs.deriveKey?.('pässword', salt, 4096)),
    )
    const key = await pgs.deriveKey?.('secret', salt, 16)
    expect(await bytes(ours.hmacSha256?.(key, 'Client Key'))).toBe(
      await bytes(pgs.hmacSha256?.(key, 'Client Key')),
    )
    for (const name of ['SHA-256', 'SHA-384', 'SHA-512'])
      expect(await bytes(ours.hashByName?.(name, salt))).toBe(await bytes(pgs.hashByName?.(name, salt)))
    expect(await ours.md5?.('tether')).toBe(await pgs.md5?.('tether'))
    expect(await ours.postgresMd5PasswordHash?.('user', 'pw', Buffer.from([1, 2, 3, 4]))).toBe(
      await pgs.postgresMd5PasswordHash?.('user', 'pw', Buffer.from([1, 2, 3, 4])),
    )
    expect(Buffer.byteLength(ours.randomBytes?.(18) as Buffer)).toBe(18)
  })
})
