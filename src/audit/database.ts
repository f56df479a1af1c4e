/**
 * The connection pool behind the store, with every driver error turned into a one-line AuditError that names
 * the server and the operation.
 */
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import {
  AuditConnectionError,
  AuditError,
  AuditInputError,
  connectionError,
  describeServer,
  oneLine,
  type ServerAddress,
} from './errors.js'
import { postgresTls } from './tls.js'

export interface DatabaseOptions {
  connectionString: string
  /** The pool's size (default 10), and half as many again for transactions (see `Database.pipelined`). */
  maxConnections?: number
  /** Shown in pg_stat_activity, so an operator can tell tether's connections apart. */
  applicationName?: string
  connectTimeoutMs?: number
  /** Where PGSSLMODE, PGSSLROOTCERT, PGSSLCERT and PGSSLKEY come from (default `process.env`). */
  env?: NodeJS.ProcessEnv
}

/**
 * Waiting through a database outage (a worker: every write is idempotent, so a retried statement writes
 * nothing twice). Statements wait with a bounded back-off until the server answers again; one line is
 * logged when an outage starts and one when it ends, not one per attempt.
 */
export interface OutagePolicy {
  wait: true
  /** Asked before each new attempt: give up (throw the connection error) when it says so. */
  stopWhen?: () => boolean
  /** Called on every attempt while waiting (e.g. to heartbeat, so the wait does not look like a dead worker). */
  whileWaiting?: () => void
  log?: (line: string) => void
}

/** Longest pause between attempts while the server is away. */
const OUTAGE_MAX_DELAY_MS = 5_000

// bigint columns hold counts and byte sizes far below 2^53; numbers are what callers expect. Set per pool,
// never globally, so other pg users in the same process are unaffected.
const INT8_OID = 20
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
}

/**
 * Every statement is prepared once per connection under a name derived from its text, so repeated audit
 * queries skip parsing and planning. Texts never embed values, so the set of names stays small.
 */
const statementNames = new Map<string, string>()

function statementName(text: string): string {
  let name = statementNames.get(text)
  if (!name) {
    name = `tether_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`
    statementNames.set(text, name)
  }
  return name
}

/** What a writer needs: the pool (each statement commits on its own) or one transaction's connection. */
export interface Queryable {
  query<Row extends pg.QueryResultRow>(
    operation: string,
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<Row>>
}

/** An error of a transaction's own work, carried through the store's error handling unchanged. */
class NotTheDatabase extends AuditError {
  constructor(readonly error: unknown) {
    super(error instanceof Error ? error.message : String(error))
  }
}

export class Database implements Queryable {
  readonly pool: pg.Pool
  /**
   * Connections in node-postgres's pipeline mode, for `together`: a transaction's statements go out without
   * waiting for the answer to the one before. Kept apart because the snapshot store's `COPY` cannot run on
   * them.
   */
  private readonly pipelined: pg.Pool
  readonly server: ServerAddress
  /** Set once the store has connected: a server that is down at start-up is an error, not a wait. */
  outages: OutagePolicy | undefined
  /** When the current outage began (shared by every statement waiting through it). */
  private outageSince: number | undefined

  constructor(options: DatabaseOptions) {
    this.server = describeServer(options.connectionString)
    const { connectionString, ssl } = postgresTls(
      options.connectionString,
      this.server.target,
      options.env ?? process.env,
    )
    const shared: pg.PoolConfig = {
      connectionString,
      ssl,
      application_name: options.applicationName ?? 'tether-audit',
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      idleTimeoutMillis: 30_000,
      types,
    }
    // Transactions take two round trips each, so half as many connections serve them; a smaller pool for
    // everything else (reads, single writes, the snapshot store) made steps wait under 500 runs at once.
    const size = options.maxConnections ?? 10
    this.pool = new pg.Pool({ ...shared, max: size })
    this.pipelined = new pg.Pool({ ...shared, max: Math.ceil(size / 2), pipeline: true })
    // An idle connection the server closes (restart, pg_terminate_backend) is reported here; the pool drops
    // it and opens a new one on demand. Without a listener the error would crash the process.
    this.pool.on('error', () => {})
    this.pipelined.on('error', () => {})
  }

  query<Row extends pg.QueryResultRow>(
    operation: string,
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<Row>> {
    return this.persist(async () => {
      try {
        return await this.pool.query<Row>({ name: statementName(text), text, values })
      } catch (error) {
        throw this.translate(error, operation)
      }
    })
  }

  /** Runs `attempt`, and — under a waiting outage policy — again until the server answers. */
  private async persist<T>(attempt: () => Promise<T>): Promise<T> {
    let delay = 250
    for (;;) {
      try {
        const result = await attempt()
        if (this.outageSince !== undefined) {
          const seconds = ((Date.now() - this.outageSince) / 1000).toFixed(1)
          this.outageSince = undefined
          this.outages?.log?.(
            `audit database at ${this.server.target} is back after ${seconds} s; writes go on`,
          )
        }
        return result
      } catch (error) {
        const policy = this.outages
        if (!policy || !(error instanceof AuditConnectionError) || !error.retryable || policy.stopWhen?.())
          throw error
        if (this.outageSince === undefined) {
          this.outageSince = Date.now()
          policy.log?.(
            `${error.message} — waiting for it (nothing is lost: writes resume where they stopped)`,
          )
        }
        policy.whileWaiting?.()
        await sleep(delay)
        delay = Math.min(delay * 2, OUTAGE_MAX_DELAY_MS)
      }
    }
  }

  /**
   * Runs `work`'s statements in one transaction, one commit for all of them; rolls back if it throws, and
   * after an outage runs all of it again (the writers are idempotent). The connection is pipelined: `begin`
   * and every statement `work` sends before it awaits one go out in one round trip, and are answered in the
   * order sent. A statement that fails aborts the transaction, so those behind it fail too and nothing
   * commits.
   */
  async together<T>(operation: string, work: (tx: Queryable) => Promise<T>): Promise<T> {
    try {
      return await this.persist(() =>
        this.onConnection(
          operation,
          async (client) => {
            // What goes out before the event loop turns (`begin` and the statements `work` sends at once)
            // leaves in one write: one segment for the server to read, not one per statement.
            const { stream } = client.connection
            stream.cork()
            setImmediate(() => stream.uncork())
            const begun = client.query('begin')
            // Awaited below; a failure before then is the connection's, which fails `work` too.
            begun.catch(() => {})
            try {
              const result = await this.translating(client, work)
              await begun
              await client.query('commit')
              return result
            } catch (error) {
              await client.query('rollback').catch(() => {})
              throw error
            }
          },
          this.pipelined,
        ),
      )
    } catch (error) {
      throw error instanceof NotTheDatabase ? error.error : error
    }
  }

  /** `work` on a transaction's connection, its statements' errors translated, its own carried unchanged. */
  private async translating<T>(client: pg.PoolClient, work: (tx: Queryable) => Promise<T>): Promise<T> {
    try {
      return await work({
        query: async <Row extends pg.QueryResultRow>(op: string, text: string, values?: unknown[]) => {
          try {
            // Without values, the simple protocol: statements separated by `;` share one round trip.
            return values === undefined
              ? await client.query<Row>(text)
              : await client.query<Row>({ name: statementName(text), text, values })
          } catch (error) {
            throw this.translate(error, op)
          }
        },
      })
    } catch (error) {
      // Not the database's (a workspace that changed while its snapshot was stored): rolled back, and
      // thrown as it is, not as an audit failure.
      throw error instanceof AuditError ? error : new NotTheDatabase(error)
    }
  }

  /** Runs `work` on one dedicated connection (no transaction is opened); all of it again after an outage. */
  withClient<T>(operation: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.persist(() => this.onConnection(operation, work))
  }

  private async onConnection<T>(
    operation: string,
    work: (client: pg.PoolClient) => Promise<T>,
    pool = this.pool,
  ): Promise<T> {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      throw this.translate(error, operation)
    }
    let failed: unknown
    try {
      return await work(client)
    } catch (error) {
      failed = error
      throw this.translate(error, operation)
    } finally {
      // A connection that broke is discarded rather than handed to the next caller.
      client.release(failed !== undefined && connectionError(failed, this.server, operation) !== undefined)
    }
  }

  translate(error: unknown, operation: string): AuditError {
    if (error instanceof AuditError) return error
    const lost = connectionError(error, this.server, operation)
    if (lost) return lost
    const { code, message = String(error) } = (error ?? {}) as { code?: string; message?: string }
    if (code === '23503') {
      return new AuditInputError(
        `${operation}: the run has no row in runs; record its start (recordRunStarted) first (${oneLine(message)})`,
        { cause: error },
      )
    }
    // Other integrity violations are caller bugs too (a value out of range or of the wrong shape).
    if (code?.startsWith('23') || code?.startsWith('22')) {
      return new AuditInputError(`${operation}: ${oneLine(message)}`, { cause: error })
    }
    return new AuditError(`${operation} failed on PostgreSQL at ${this.server.target}: ${oneLine(message)}`, {
      cause: error,
    })
  }

  async end(): Promise<void> {
    await Promise.all([this.pool.end(), this.pipelined.end()])
  }
}
