/** Who may open the inbox: loopback with the stack's token, otherwise tokens or a proxy's identity header. */
import { statSync } from 'node:fs'
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  accessProblem,
  addToken,
  identify,
  isLoopback,
  localToken,
  loginToken,
  readTokens,
  TOKEN_COOKIE,
} from '../../../src/inbox/access.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-inbox-access-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage

describe('inbox access', () => {
  it('needs an access mode on any address but loopback', () => {
    for (const host of ['127.0.0.1', '127.8.9.1', '::1', '[::1]', 'localhost']) {
      expect(isLoopback(host), host).toBe(true)
      expect(accessProblem(host, 'local')).toBeUndefined()
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'inbox.example.com', '128.0.0.1']) {
      expect(isLoopback(host), host).toBe(false)
      expect(accessProblem(host, 'local')).toMatch(
        /^\S+ is not a loopback address, so others could reach the inbox: choose an access mode/,
      )
      expect(accessProblem(host, 'tokens')).toBeUndefined()
      expect(accessProblem(host, 'header')).toBeUndefined()
    }
  })

  it('on loopback, answers only to a loopback Host (a rebound name is refused)', () => {
    const local = { mode: 'local' as const, token: 'the-stack-token-0123456789' }
    const signedIn = new Map([[TOKEN_COOKIE, local.token]])
    expect(identify(local, request({ host: '127.0.0.1:7280' }), signedIn)).toEqual({ ok: true })
    expect(identify(local, request({ host: 'localhost:7280' }), signedIn)).toEqual({ ok: true })
    expect(identify(local, request({ host: '[::1]:7280' }), signedIn)).toEqual({ ok: true })
    expect(identify(local, request({ host: 'attacker.example:7280' }), signedIn)).toMatchObject({
      ok: false,
      status: 421,
    })
  })

  it('on loopback, still needs the stack’s token: any process on the machine can reach loopback', () => {
    const local = { mode: 'local' as const, token: 'the-stack-token-0123456789' }
    const anyone = identify(local, request({ host: '127.0.0.1:7280' }), new Map())
    expect(anyone).toMatchObject({ ok: false, status: 401 })
    expect((anyone as { message: string }).message).toMatch(
      /needs the link `tether dev` \(or `tether inbox`\) printed/,
    )
    const wrong = new Map([[TOKEN_COOKIE, 'the-stack-token-0123456780']])
    expect(identify(local, request({ host: '127.0.0.1:7280' }), wrong)).toMatchObject({
      ok: false,
      status: 401,
    })
    expect(
      identify(local, request({ host: '127.0.0.1:7280', authorization: `Bearer ${local.token}` }), new Map()),
    ).toEqual({ ok: true })
    expect(loginToken(local, local.token)).toBe(local.token)
    expect(loginToken(local, 'nope')).toBeUndefined()
  })

  it('keeps the stack’s token in the state folder, private, across restarts', () => {
    const first = localToken(dir)
    expect(first.length).toBeGreaterThanOrEqual(20)
    expect(localToken(dir)).toBe(first)
    expect(statSync(join(dir, 'inbox-token')).mode & 0o077).toBe(0)
  })

  it('makes private token files, reads them back, and knows each person by their token', async () => {
    const file = join(dir, 'tokens')
    const alice = addToken(file, 'alice')
    const bob = addToken(file, 'bob')
    const access = { mode: 'tokens' as const, names: readTokens(file) }
    expect(identify(access, request({ authorization: `Bearer ${alice}` }), new Map())).toEqual({
      ok: true,
      user: 'alice',
    })
    expect(identify(access, request({}), new Map([[TOKEN_COOKIE, bob]]))).toEqual({ ok: true, user: 'bob' })
    expect(identify(access, request({ authorization: 'Bearer nope' }), new Map())).toMatchObject({
      ok: false,
      status: 401,
    })
    expect(loginToken(access, alice)).toBe(alice)
    expect(loginToken(access, 'forged-token-of-some-length')).toBeUndefined()
    expect(() => addToken(file, 'not a name')).toThrow(/is not an approver name/)
  })

  it('refuses token files others can read, short or repeated tokens and bad lines, naming the line', async () => {
    const file = join(dir, 'bad-tokens')
    const write = async (text: string, mode = 0o600) => {
      await writeFile(file, text)
      await chmod(file, mode)
    }
    await write('alice aaaaaaaaaaaaaaaaaaaaaaaa\n', 0o644)
    expect(() => readTokens(file)).toThrow(/can be read by others; make it private/)
    await write('alice short\n')
    expect(() => readTokens(file)).toThrow(/bad-tokens:1: the token is too short/)
    await write('# x\nalice aaaaaaaaaaaaaaaaaaaaaaaa\nbob aaaaaaaaaaaaaaaaaaaaaaaa\n')
    expect(() => readTokens(file)).toThrow(/bad-tokens:3: this token is listed twice/)
    await write('alice\n')
    expect(() => readTokens(file)).toThrow(/bad-tokens:1: write one "name token" per line/)
    await write('# nothing\n')
    expect(() => readTokens(file)).toThrow(/lists no tokens/)
    expect(() => readTokens(join(dir, 'missing'))).toThrow(/cannot read the tokens file/)
  })

  it("takes the name a proxy's identity header carries, and nothing without it", () => {
    const access = { mode: 'header' as const, header: 'X-Forwarded-User' }
    expect(identify(access, request({ 'x-forwarded-user': 'carol' }), new Map())).toEqual({
      ok: true,
      user: 'carol',
    })
    expect(identify(access, request({}), new Map())).toMatchObject({
      ok: false,
      status: 401,
      message: 'no X-Forwarded-User header: reach this inbox through its authenticating proxy',
    })
  })
})
