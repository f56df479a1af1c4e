/**
 * The audit store's errors. Each message is one line a person can act on: it names the server (host:port,
 * never the password), what went wrong, and what to check.
 */
import { isTlsAlert, UNTRUSTED_CERTIFICATE } from '../stack/index.js'

export class AuditError extends Error {
  override name = 'AuditError'
}

/** Bad input to a writer or query (a caller bug): retrying the same call cannot succeed. */
export class AuditInputError extends AuditError {
  override name = 'AuditInputError'
}

/**
 * A write that disagrees with what is already stored under the same key (e.g. a different transcript
 * message at a sequence number that is taken). The stored row is kept; the caller must reconcile.
 */
export class AuditConflictError extends AuditError {
  override name = 'AuditConflictError'
}

/** The schema in the database does not match the migrations this build of tether knows. */
export class AuditMigrationError extends AuditError {
  override name = 'AuditMigrationError'
}

/**
 * The server could not be reached, refused the credentials, or dropped the connection. `retryable` tells
 * whether the same call may succeed later (a lost connection or a server starting up) or needs a person
 * (wrong password, missing database).
 */
export class AuditConnectionError extends AuditError {
  override name = 'AuditConnectionError'
  constructor(
    message: string,
    readonly target: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** Where a connection string points, for messages: never includes the password. */
export interface ServerAddress {
  host: string
  port: number
  user: string
  database: string
  /** `host:port`, the form every connection message uses. */
  target: string
}

export function describeServer(connectionString: string): ServerAddress {
  let url: URL
  try {
    url = new URL(connectionString)
  } catch {
    throw new AuditConnectionError(
      'DATABASE_URL is not a valid connection string: expected postgres://user:password@host:port/database',
      'unknown',
      false,
    )
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new AuditConnectionError(
      `DATABASE_URL uses the scheme '${url.protocol.replace(/:$/, '')}': expected postgres://user:password@host:port/database`,
      'unknown',
      false,
    )
  }
  // A socket folder may be given as ?host=/path instead of in the authority.
  const host = url.searchParams.get('host') ?? (url.hostname || 'localhost')
  const port = Number(url.port || 5432)
  const user = decodeURIComponent(url.username) || 'postgres'
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || user
  return { host, port, user, database, target: `${host}:${port}` }
}

interface PgLikeError {
  code?: string
  message?: string
}

const LOST_CONNECTION =
  /Connection terminated|connection (?:was )?closed|terminating connection|server closed the connection|Client has encountered a connection error|read ECONNRESET|write EPIPE/i

/**
 * Turns a driver error into an AuditConnectionError when it is about the connection, else undefined.
 * `operation` names what was being done, for the lost-connection message.
 */
export function connectionError(
  error: unknown,
  server: ServerAddress,
  operation: string,
): AuditConnectionError | undefined {
  if (error instanceof AuditConnectionError) return error
  const { code, message = '' } = (error ?? {}) as PgLikeError
  const at = `PostgreSQL at ${server.target}`
  const fail = (text: string, retryable: boolean) =>
    new AuditConnectionError(oneLine(text), server.target, retryable, { cause: error })
  switch (code) {
    case 'ECONNREFUSED':
      return fail(
        `cannot connect to ${at}: connection refused; check that the server is running and that the host and port in DATABASE_URL are right`,
        true,
      )
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return fail(
        `cannot resolve the PostgreSQL host '${server.host}': check the host name in DATABASE_URL`,
        code === 'EAI_AGAIN',
      )
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return fail(
        `cannot reach ${at} (${code}): check the network path (firewall, VPN) and that the server is up`,
        true,
      )
    case '28000':
      if (/no encryption/i.test(message)) {
        return fail(
          `${at} accepts user '${server.user}' only over TLS (${message}); add sslmode=verify-full (with sslrootcert) or sslmode=require to DATABASE_URL`,
          false,
        )
      }
      if (/certificate/i.test(message)) {
        return fail(
          `${at} refused user '${server.user}' for want of a valid client certificate (${message}); set sslcert and sslkey in DATABASE_URL (or PGSSLCERT and PGSSLKEY) to a certificate whose common name is the user`,
          false,
        )
      }
      return fail(
        `${at} refused the credentials for user '${server.user}' (${message}); check the user and password in DATABASE_URL`,
        false,
      )
    case '28P01':
      return fail(
        `${at} refused the credentials for user '${server.user}' (${message}); check the user and password in DATABASE_URL`,
        false,
      )
    case '3D000':
      return fail(
        `database '${server.database}' does not exist on ${at}; create it (createdb ${server.database}) or fix the database name in DATABASE_URL`,
        false,
      )
    case '57P03':
      return fail(`${at} is starting up or shutting down (${message}); retry shortly`, true)
  }
  const tls = tlsProblem(code, message, at, server)
  if (tls) return fail(tls, false)
  if (/timeout expired|connection timeout|timeout exceeded when trying to connect/i.test(message)) {
    return fail(
      `${at} did not answer in time; check the network path (firewall, VPN) and that the server is up`,
      true,
    )
  }
  // Class 08 is connection trouble, except 08P01 (a malformed protocol message: a bug, not the network).
  const connectionClass = code?.startsWith('08') && code !== '08P01'
  if (code === '57P01' || code === '57P02' || connectionClass || LOST_CONNECTION.test(message)) {
    return fail(
      `lost the connection to ${at} during ${operation} (${message || code}); audit writes are idempotent, so retrying is safe`,
      true,
    )
  }
  return undefined
}

/** A TLS failure, worded for the libpq-style settings in DATABASE_URL (see tls.ts). */
function tlsProblem(
  code: string | undefined,
  message: string,
  at: string,
  server: ServerAddress,
): string | undefined {
  if (code && UNTRUSTED_CERTIFICATE.has(code)) {
    return `the certificate of ${at} is not signed by a CA tether trusts for it (${code}); set sslrootcert in DATABASE_URL (or PGSSLROOTCERT) to the CA that signed it`
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `the certificate of ${at} is not for the host '${server.host}' (${message}); connect by a name it is for, or use sslmode=verify-ca`
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return `the certificate of ${at} is not valid now (${code}); the server's operator must renew it`
  }
  if (/server does not support SSL/i.test(message)) {
    return `${at} does not offer TLS; turn ssl on at the server, or set sslmode=disable in DATABASE_URL`
  }
  if (isTlsAlert({ code, message })) {
    const alert = /alert [a-z ]+/i.exec(message)?.[0] ?? code
    return `${at} refused the TLS handshake (${alert}); check sslcert and sslkey in DATABASE_URL (or PGSSLCERT and PGSSLKEY): a certificate signed by a CA the server trusts, with its key`
  }
  return undefined
}

export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim()
}
