/**
 * Who may open the inbox. On a loopback address only this machine can reach it — but every process and
 * user on this machine can, so local mode still needs the stack's own token (kept in tether's private
 * state folder, where no sandboxed command can read it, and printed by `tether dev` as a login link, the
 * way notebook servers do); it also answers only to a loopback Host, so a web page that rebinds its own name
 * to 127.0.0.1 cannot read it. Any other address needs an access mode: per-user tokens (a file of `name
 * token` lines), or an identity header that an authenticating reverse proxy sets. Either way the server
 * learns the person's name, and an answer sent under another name is refused.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import { dirname, join } from 'node:path'
import { APPROVER_NAME } from '../identity/index.js'
import { InboxError } from './errors.js'

export type Access =
  /** Loopback, with the stack's token (see `localToken`). */
  | { mode: 'local'; token: string }
  /** Token hashes (sha256 hex) → the names they stand for. */
  | { mode: 'tokens'; names: ReadonlyMap<string, string> }
  /** The header an authenticating reverse proxy sets to the person's name. */
  | { mode: 'header'; header: string }

/** Whether `host` is a loopback address (or `localhost`): only this machine can connect. */
export function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  if (bare === 'localhost') return true
  if (isIP(bare) === 4) return bare.startsWith('127.')
  return bare === '::1'
}

/** Why the inbox may not listen on `host` with `access`, in one line; undefined when it may. */
export function accessProblem(host: string, access: Access['mode']): string | undefined {
  if (access !== 'local' || isLoopback(host)) return undefined
  return (
    `${host} is not a loopback address, so others could reach the inbox: choose an access mode — ` +
    '--access tokens (see `tether inbox token NAME`) or --access header --identity-header NAME (behind an authenticating proxy)'
  )
}

function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/**
 * Reads a tokens file: one `name token` per line, `#` comments. Refuses a file others can read, a bad
 * name, a short token and a token listed twice, naming the line.
 */
export function readTokens(file: string): Map<string, string> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch {
    throw new InboxError(`cannot read the tokens file ${file}; make one with \`tether inbox token NAME\``)
  }
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0) {
    throw new InboxError(`${file} can be read by others; make it private (chmod 600 ${file})`)
  }
  const names = new Map<string, string>()
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim()
    if (!line || line.startsWith('#')) continue
    const [name, token, ...rest] = line.split(/\s+/)
    const where = `${file}:${index + 1}`
    if (!name || !token || rest.length > 0) throw new InboxError(`${where}: write one "name token" per line`)
    if (!APPROVER_NAME.test(name)) throw new InboxError(`${where}: "${name}" is not an approver name`)
    if (token.length < 20) throw new InboxError(`${where}: the token is too short (20 characters at least)`)
    const hash = tokenHash(token)
    if (names.has(hash)) throw new InboxError(`${where}: this token is listed twice`)
    names.set(hash, name)
  }
  if (names.size === 0) {
    throw new InboxError(`${file} lists no tokens; add one with \`tether inbox token NAME\``)
  }
  return names
}

/** Makes a token for `name` and appends it to the tokens file (created private); returns the token. */
export function addToken(file: string, name: string): string {
  if (!APPROVER_NAME.test(name)) {
    throw new InboxError(
      `"${name}" is not an approver name: use letters, digits and . _ @ + - (up to 64, starting with a letter or digit)`,
    )
  }
  const token = randomBytes(24).toString('base64url')
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const fresh = !existsSync(file)
  appendFileSync(file, `${fresh ? '# tether inbox tokens: name token\n' : ''}${name} ${token}\n`, {
    mode: 0o600,
  })
  return token
}

export const TOKEN_COOKIE = 'tether_token'

export type Visitor = { ok: true; user?: string | undefined } | { ok: false; status: number; message: string }

/** Who is asking, by the access mode; a refusal says what to do. */
export function identify(access: Access, request: IncomingMessage, cookies: Map<string, string>): Visitor {
  switch (access.mode) {
    case 'local': {
      // A page elsewhere that points its own name at 127.0.0.1 sends its own name as the Host.
      const host = hostName(request.headers.host ?? '')
      if (!isLoopback(host)) {
        return {
          ok: false,
          status: 421,
          message: `this inbox answers only to 127.0.0.1 or localhost, not ${host}`,
        }
      }
      const token = presented(request, cookies)
      return token !== undefined && sameToken(token, access.token)
        ? { ok: true }
        : {
            ok: false,
            status: 401,
            message:
              "this inbox needs the link `tether dev` (or `tether inbox`) printed: it carries this stack's token, " +
              'which any other process on this machine lacks',
          }
    }
    case 'tokens': {
      const token = presented(request, cookies)
      const user = token ? access.names.get(tokenHash(token)) : undefined
      return user
        ? { ok: true, user }
        : {
            ok: false,
            status: 401,
            message:
              'this inbox needs your token: open the link with ?token=… that `tether inbox token NAME` printed',
          }
    }
    case 'header': {
      const value = request.headers[access.header.toLowerCase()]
      const user = (Array.isArray(value) ? value[0] : value)?.trim()
      return user
        ? { ok: true, user }
        : {
            ok: false,
            status: 401,
            message: `no ${access.header} header: reach this inbox through its authenticating proxy`,
          }
    }
  }
}

/** The token of a `?token=` login link, when it is one of the tokens (or the stack's). */
export function loginToken(access: Access, token: string | null): string | undefined {
  if (!token) return undefined
  if (access.mode === 'local') return sameToken(token, access.token) ? token : undefined
  if (access.mode !== 'tokens') return undefined
  return access.names.has(tokenHash(token)) ? token : undefined
}

/** A token a request presents: `Authorization: Bearer …` or the login cookie. */
function presented(request: IncomingMessage, cookies: Map<string, string>): string | undefined {
  return /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? cookies.get(TOKEN_COOKIE)
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(tokenHash(given), 'hex')
  const b = Buffer.from(tokenHash(expected), 'hex')
  return timingSafeEqual(a, b)
}

/** A fresh token for a local inbox (an inbox started without one gets its own). */
export function newLocalToken(): string {
  return randomBytes(24).toString('base64url')
}

/**
 * The stack's inbox token: `<stateDir>/inbox-token`, made once (mode 0600) so a login link keeps working
 * across restarts of `tether dev`. The state folder is hidden from every sandboxed command.
 */
export function localToken(stateDir: string): string {
  const file = join(stateDir, 'inbox-token')
  try {
    const token = readFileSync(file, 'utf8').trim()
    if (token.length >= 20) return token
  } catch {
    // made below
  }
  mkdirSync(stateDir, { recursive: true, mode: 0o700 })
  const token = newLocalToken()
  writeFileSync(file, `${token}\n`, { mode: 0o600 })
  return token
}

function hostName(host: string): string {
  const bracketed = /^\[([^\]]*)\]/.exec(host)
  if (bracketed) return bracketed[1] as string
  return host.replace(/:\d+$/, '')
}
