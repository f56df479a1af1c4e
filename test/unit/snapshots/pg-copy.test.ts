/**
 * PostgreSQL's binary COPY format, read from chunks cut anywhere (the connection hands its messages over in
 * pieces of any size). The bytes are built here from the format's documentation; a real server's output is
 * read in the integration tests (test/integration/snapshot-store.test.ts).
 */
import { describe, expect, it } from 'vitest'
import { BinaryCopyReader, binaryCopy, CopyFormatError, int4 } from '../../../src/snapshots/pg-copy.js'

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')

function int16(n: number): Buffer {
  const b = Buffer.alloc(2)
  b.writeInt16BE(n)
  return b
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n)
  return b
}

/** A binary COPY of `rows`, with `extension` as its header extension. */
function copyOf(rows: Array<Array<Buffer | null>>, extension = Buffer.alloc(0), flags = 0): Buffer {
  return Buffer.concat([
    SIGNATURE,
    int32(flags),
    int32(extension.length),
    extension,
    ...rows.flatMap((row) => [
      int16(row.length),
      ...row.flatMap((value) => (value === null ? [int32(-1)] : [int32(value.length), value])),
    ]),
    int16(-1),
  ])
}

function read(bytes: Buffer, cut: number, shared = false): Array<Array<Buffer | null>> {
  const reader = new BinaryCopyReader({ shared })
  for (let at = 0; at < bytes.length; at += cut) reader.push(bytes.subarray(at, at + cut))
  return reader.end()
}

const every = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
const rows = [
  [Buffer.from('a'.repeat(64)), every],
  [Buffer.from('b'), Buffer.alloc(0)],
  [Buffer.from('c'), null],
  [],
  [Buffer.alloc(70_000, 7)],
]

describe('a binary COPY', () => {
  it('is read into its rows, byte for byte, however its bytes are cut', () => {
    const bytes = copyOf(rows, Buffer.from('ext'))
    for (const cut of [1, 2, 3, 5, 7, 19, 64, 1000, bytes.length]) expect(read(bytes, cut)).toEqual(rows)
  })

  it('lays values out in shared blocks when asked, each in a range of its own, a large one in a block of its own', () => {
    const large = Buffer.alloc(5 * 1024 * 1024, 9)
    const shared = [...rows, [Buffer.from('d'), large, Buffer.from('e')]]
    const bytes = copyOf(shared)
    for (const cut of [1000, 65_536]) {
      const got = read(bytes, cut, true)
      // Compared as bytes: a deep equality of 5 MB takes the test's whole time.
      expect(got.map((row) => row.map((v) => v?.toString('hex') ?? null))).toEqual(
        shared.map((row) => row.map((v) => v?.toString('hex') ?? null)),
      )
      const values = got.flat().filter((v): v is Buffer => v !== null && v.length > 0)
      expect(values.every((v) => v.buffer instanceof SharedArrayBuffer)).toBe(true)
      const [d, big, e] = got.at(-1) as Buffer[]
      expect(big?.buffer).not.toBe(d?.buffer)
      expect(e?.buffer).not.toBe(big?.buffer)
      // Ranges never overlap: writing one leaves the others as they were.
      ;(d as Buffer).fill(0)
      expect(got.at(-1)?.[2]).toEqual(Buffer.from('e'))
      expect(got[0]?.[1]).toEqual(every)
    }
  })

  it('hands each value a buffer of its own, not a view of the chunk it came in', () => {
    const bytes = copyOf([[Buffer.from('value')]])
    const reader = new BinaryCopyReader()
    reader.push(bytes)
    bytes.fill(0)
    expect(reader.end()).toEqual([[Buffer.from('value')]])
  })

  it('is refused when it is not one: a wrong signature, row OIDs, a cut-off end, bytes after the end', () => {
    const bytes = copyOf(rows)
    const wrong = Buffer.from(bytes)
    wrong[0] = 0x51
    expect(() => read(wrong, 64)).toThrow(CopyFormatError)
    expect(() => read(copyOf(rows, Buffer.alloc(0), 1 << 16), 64)).toThrow(/row OIDs/)
    expect(() => read(bytes.subarray(0, bytes.length - 3), 64)).toThrow(/ended in the middle of a row/)
    expect(() => read(Buffer.concat([bytes, int16(1)]), 64)).toThrow(/after its end mark/)
    expect(() => read(Buffer.concat([SIGNATURE, int32(0), int32(0), int16(1), int32(-5)]), 64)).toThrow(
      /length -5/,
    )
  })

  it('is written as it is read: what binaryCopy makes, the reader gives back', () => {
    const written = [
      [Buffer.from('a'.repeat(64)), every, int4(256)],
      [Buffer.from('b'), Buffer.alloc(0), int4(0)],
    ]
    const bytes = binaryCopy(written)
    expect(bytes.equals(copyOf(written))).toBe(true)
    expect(read(bytes, 5)).toEqual(written)
  })
})
