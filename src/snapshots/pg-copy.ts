/**
 * Rows read from PostgreSQL with `COPY (…) TO STDOUT (FORMAT binary)`, as bytes, and written with
 * `COPY … FROM STDIN (FORMAT binary)`.
 *
 * node-postgres reads every column as text: a `bytea` comes as hex, twice its size, which the client turns
 * into a string and then back into bytes. For a restore that is nearly all of its time (195 MB of objects:
 * about 1 s of this process's CPU, against a `tar -xf` of the same tree in 0.4 s on a tmpfs). Binary COPY
 * sends each value's bytes as they are; they are copied once, out of the connection's buffer, as each
 * message arrives. node-postgres has no binary mode to ask for instead (its reader decodes every value as
 * UTF-8 text). Writing, a `bytea` parameter goes as hex too: 195 MB of objects took 3.4–4.1 s of this
 * process's CPU and 11.6–13.5 s in all.
 */
import type pg from 'pg'

/** What PostgreSQL's binary COPY output begins with (its signature), before the flags and extension length. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')
const HEADER_BYTES = SIGNATURE.length + 8
/** The flag saying rows carry OIDs, which a query's COPY never has. */
const WITH_OIDS = 1 << 16

export class CopyFormatError extends Error {
  override name = 'CopyFormatError'
}

/** Bytes of each shared block values are laid out in, when asked for (a larger value gets one of its own). */
const SHARED_BLOCK_BYTES = 4 * 1024 * 1024

/**
 * Reads the binary COPY format from chunks of any size into rows of byte values (null for NULL). Fixed-size
 * parts split across chunks are gathered in a small buffer; each value gets a buffer of its own, or with
 * `shared`, a range of a shared block, one after another: worker threads can then read the values where
 * they are, without a copy (a restore's writers do).
 */
export class BinaryCopyReader {
  readonly rows: Array<Array<Buffer | null>> = []
  private stage: 'header' | 'skip' | 'count' | 'length' | 'value' | 'end' = 'header'
  private readonly small = Buffer.alloc(HEADER_BYTES)
  private want = HEADER_BYTES
  private have = 0
  private row: Array<Buffer | null> = []
  private left = 0
  private value: Buffer = Buffer.alloc(0)
  private block: SharedArrayBuffer | undefined
  private blockUsed = 0

  constructor(private readonly options: { shared?: boolean } = {}) {}

  push(chunk: Buffer): void {
    let at = 0
    while (at < chunk.length) {
      if (this.stage === 'end') throw new CopyFormatError('the copy went on after its end mark')
      const target = this.stage === 'value' || this.stage === 'skip' ? this.value : this.small
      const taken = Math.min(this.want - this.have, chunk.length - at)
      chunk.copy(target, this.have, at, at + taken)
      this.have += taken
      at += taken
      if (this.have === this.want) this.took()
    }
  }

  /** Checks the copy ended where its format says it does. */
  end(): Array<Array<Buffer | null>> {
    if (this.stage !== 'end') throw new CopyFormatError('the copy ended in the middle of a row')
    return this.rows
  }

  private took(): void {
    const { small } = this
    switch (this.stage) {
      case 'header': {
        if (!small.subarray(0, SIGNATURE.length).equals(SIGNATURE))
          throw new CopyFormatError('the copy does not begin with the binary format’s signature')
        if (small.readInt32BE(SIGNATURE.length) & WITH_OIDS)
          throw new CopyFormatError('the copy carries row OIDs')
        const extension = small.readInt32BE(SIGNATURE.length + 4)
        if (extension < 0) throw new CopyFormatError('the copy’s header extension has a negative length')
        if (extension > 0) this.expectValue(extension, 'skip')
        else this.expect('count', 2)
        break
      }
      case 'skip':
        this.expect('count', 2)
        break
      case 'count': {
        const count = small.readInt16BE(0)
        if (count < -1) throw new CopyFormatError(`a row of the copy has ${count} values`)
        this.row = []
        this.left = count
        if (count === -1) this.stage = 'end'
        else if (count === 0) this.endRow()
        else this.expect('length', 4)
        break
      }
      case 'length': {
        const length = small.readInt32BE(0)
        if (length < -1) throw new CopyFormatError(`a value of the copy has length ${length}`)
        if (length === -1) this.endValue(null)
        else if (length === 0) this.endValue(Buffer.alloc(0))
        else this.expectValue(length, 'value')
        break
      }
      case 'value':
        this.endValue(this.value)
        break
    }
  }

  private expect(stage: 'count' | 'length', bytes: number): void {
    this.stage = stage
    this.want = bytes
    this.have = 0
  }

  private expectValue(bytes: number, stage: 'value' | 'skip'): void {
    this.stage = stage
    this.value =
      stage === 'value' && this.options.shared ? this.sharedRange(bytes) : Buffer.allocUnsafe(bytes)
    this.want = bytes
    this.have = 0
  }

  private sharedRange(bytes: number): Buffer {
    if (!this.block || this.blockUsed + bytes > this.block.byteLength) {
      this.block = new SharedArrayBuffer(Math.max(SHARED_BLOCK_BYTES, bytes))
      this.blockUsed = 0
    }
    const range = Buffer.from(this.block, this.blockUsed, bytes)
    this.blockUsed += bytes
    return range
  }

  private endValue(value: Buffer | null): void {
    this.row.push(value)
    if (--this.left === 0) this.endRow()
    else this.expect('length', 4)
  }

  private endRow(): void {
    this.rows.push(this.row)
    this.expect('count', 2)
  }
}

/** What a COPY does with the connection while it runs; `done` gives its result once the server is ready again. */
interface CopyHandlers<T> {
  /** A chunk of the server's output (COPY TO), valid only during the call. */
  data?: (chunk: Buffer) => void
  /** The server waits for the input (COPY FROM): what to send. */
  input?: () => Buffer
  done: () => T
}

/** Runs the COPY `statement` on one of `pool`'s connections, as a query node-postgres is handed whole. */
async function copy<T>(pool: pg.Pool, statement: string, handlers: CopyHandlers<T>): Promise<T> {
  const client = await pool.connect()
  let broken: Error | undefined
  try {
    return await new Promise<T>((resolve, reject) => {
      let failed: unknown
      const attempt = (work: () => void) => {
        if (failed !== undefined) return
        try {
          work()
        } catch (error) {
          failed = error
        }
      }
      // What node-postgres calls on a query object it is given (a "submittable").
      const submittable = {
        submit: (connection: { query(text: string): void }) => connection.query(statement),
        handleCopyData: (message: { chunk: Buffer }) => attempt(() => handlers.data?.(message.chunk)),
        handleCopyInResponse: (connection: {
          sendCopyFromChunk(chunk: Buffer): void
          endCopyFrom(): void
          sendCopyFail(message: string): void
        }) => {
          const input = handlers.input?.()
          if (input === undefined) return connection.sendCopyFail('this COPY has no input')
          connection.sendCopyFromChunk(input)
          connection.endCopyFrom()
        },
        handleCommandComplete: () => {},
        handleReadyForQuery: () => {
          attempt(() => resolve(handlers.done()))
          if (failed !== undefined) reject(failed)
        },
        handleError: (error: Error) => {
          // An error from the connection itself (not the server's answer) leaves it unusable.
          if (!('severity' in error)) broken = error
          reject(error)
        },
        handleEmptyQuery: () => {},
        handleRowDescription: () => {},
        handleDataRow: () => {},
      }
      client.query(submittable as never)
    })
  } finally {
    client.release(broken)
  }
}

/**
 * The rows of `query` (a SELECT whose values are all in its text: COPY takes no parameters), read over one
 * of `pool`'s connections; with `shared`, the values are ranges of shared blocks (see BinaryCopyReader).
 */
export function copyRows(
  pool: pg.Pool,
  query: string,
  options: { shared?: boolean } = {},
): Promise<Array<Array<Buffer | null>>> {
  const reader = new BinaryCopyReader(options)
  return copy(pool, `copy (${query}) to stdout (format binary)`, {
    data: (chunk) => reader.push(chunk),
    done: () => reader.end(),
  })
}

/** A 32-bit integer value of a binary COPY. */
export function int4(n: number): Buffer {
  const value = Buffer.alloc(4)
  value.writeInt32BE(n)
  return value
}

/** `rows` in the binary COPY format; each value is its bytes in the format (text as UTF-8, see int4). */
export function binaryCopy(rows: ReadonlyArray<readonly Buffer[]>): Buffer {
  const parts: Buffer[] = [SIGNATURE, Buffer.alloc(8)]
  for (const row of rows) {
    const count = Buffer.alloc(2)
    count.writeInt16BE(row.length)
    parts.push(count)
    for (const value of row) parts.push(int4(value.length), value)
  }
  parts.push(Buffer.from([0xff, 0xff]))
  return Buffer.concat(parts)
}

/** Writes `rows` into `target` (a table and its columns: `name (a, b)`) with COPY FROM, all or none. */
export function copyIn(pool: pg.Pool, target: string, rows: ReadonlyArray<readonly Buffer[]>): Promise<void> {
  return copy(pool, `copy ${target} from stdin (format binary)`, {
    input: () => binaryCopy(rows),
    done: () => undefined,
  })
}
