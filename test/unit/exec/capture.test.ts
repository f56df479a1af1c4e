import { createHash } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { elisionMarker, OutputCapture } from '../../../src/exec/index.js'

function capture(ceiling: number, ...chunks: Array<Uint8Array | string>) {
  const output = new OutputCapture(ceiling)
  for (const chunk of chunks) output.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  return output.finish()
}

/** What a capture of `bytes` must be, computed the slow way from the whole stream at once. */
function expected(bytes: Uint8Array, ceiling: number) {
  const chars = [...new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes)]
  const head = Math.floor(ceiling / 2)
  const elided = Math.max(0, chars.length - ceiling)
  const newlines = bytes.filter((byte) => byte === 0x0a).length
  return {
    text:
      elided > 0
        ? chars.slice(0, head).join('') +
          elisionMarker(elided) +
          chars.slice(chars.length - (ceiling - head)).join('')
        : chars.join(''),
    elided,
    bytes: bytes.length,
    lines: newlines + (bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a ? 1 : 0),
    sha256: createHash('sha256').update(bytes).digest('hex'),
  }
}

describe('OutputCapture', () => {
  it('keeps a stream that fits whole', () => {
    expect(capture(100, 'hello\n', 'world')).toEqual({
      text: 'hello\nworld',
      elided: 0,
      bytes: 11,
      lines: 2,
      sha256: createHash('sha256').update('hello\nworld').digest('hex'),
    })
  })

  it('keeps the head and tail around the exact elision marker', () => {
    const result = capture(10, '0123456789', 'abcdefghij')
    expect(result.text).toBe('01234\n[... 10 characters elided ...]\nfghij')
    expect(result.elided).toBe(10)
  })

  it('gives the extra character of an odd ceiling to the tail', () => {
    expect(capture(5, 'abcdefgh').text).toBe('ab\n[... 3 characters elided ...]\nfgh')
  })

  it('with a ceiling of 0 keeps only the marker', () => {
    expect(capture(0, 'abc').text).toBe(elisionMarker(3))
    expect(capture(0).text).toBe('')
  })

  it('joins a character split across reads instead of cutting it', () => {
    const euro = Buffer.from('€') // three bytes
    const result = capture(10, euro.subarray(0, 1), euro.subarray(1, 2), euro.subarray(2))
    expect(result.text).toBe('€')
  })

  it('counts code points, so an emoji is one character and is never halved', () => {
    const result = capture(4, '😀😀😀😀😀😀')
    expect(result.text).toBe(`😀😀${elisionMarker(2)}😀😀`)
    expect(result.bytes).toBe(24)
  })

  it('turns invalid bytes into U+FFFD and a stream cut inside a character into one U+FFFD', () => {
    expect(capture(10, new Uint8Array([0x61, 0xff, 0x62])).text).toBe('a\uFFFDb')
    expect(capture(10, new Uint8Array([0x61, 0xe2, 0x82])).text).toBe('a\uFFFD')
  })

  it('counts right when a read ends in bytes that only look like the start of a character', () => {
    // 0xF0 0x80 can never become a character; the decoder rejects it at once, holding nothing back.
    for (const start of [
      [0xf0, 0x80],
      [0xf4, 0x90],
      [0xe0, 0x80],
      [0xed, 0xa0],
      [0xf0, 0x90, 0x41],
    ]) {
      const chunks = [new Uint8Array(start), Buffer.from('abc😀')]
      expect(capture(4, ...chunks)).toEqual(expected(Buffer.concat(chunks), 4))
    }
  })

  it('counts a short read that sits at any alignment in its buffer (a read can start anywhere in a pool)', () => {
    // The read's clean middle ("AB") is two bytes at every offset modulo 4; one of them once made a typed
    // word view start at an unaligned offset and throw.
    for (let offset = 0; offset < 4; offset++) {
      const pool = new Uint8Array(16 + offset)
      pool.set([144, 128, 128, 65, 66, 240, 144, 128], offset)
      const chunks = [
        'x'.repeat(16),
        Uint8Array.from([65, 66, 240]),
        pool.subarray(offset, offset + 8),
        Uint8Array.from([128]),
      ]
      const whole = Buffer.concat(
        chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : chunk)),
      )
      const result = capture(0, ...chunks)
      expect(result.elided, `offset ${offset}`).toBe([...whole.toString('utf8')].length)
      expect(result.bytes).toBe(whole.length)
    }
  })

  it('keeps a leading byte order mark as a character', () => {
    expect(capture(10, '\uFEFFx').text).toBe('\uFEFFx')
  })

  it('matches a whole-stream decode for any bytes, ceiling and split into reads', () => {
    // Bytes biased towards UTF-8 lead and continuation bytes, so multi-byte and broken sequences are common.
    // The bytes where UTF-8 decoding has its edge cases: sequence leads and the limits of second bytes.
    const edges = fc.constantFrom(
      0x41,
      0x80,
      0x8f,
      0x90,
      0x9f,
      0xa0,
      0xbf,
      0xc2,
      0xe0,
      0xed,
      0xef,
      0xf0,
      0xf4,
      0xf5,
    )
    const byte = fc.oneof(
      edges,
      fc.integer({ min: 0x20, max: 0x7e }),
      fc.constant(0x0a),
      fc.integer({ min: 0x80, max: 0xbf }),
      fc.integer({ min: 0xc2, max: 0xf4 }),
      fc.integer({ min: 0, max: 0xff }),
    )
    const text = fc.string({ unit: 'grapheme', maxLength: 60 }).map((s) => [...Buffer.from(s)])
    const stream = fc
      .array(fc.oneof(fc.array(byte, { maxLength: 40 }), text), { maxLength: 12 })
      .map((parts) => parts.flat())
    fc.assert(
      fc.property(
        stream,
        fc.integer({ min: 0, max: 64 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (all, ceiling, cuts) => {
          const bytes = new Uint8Array(all)
          const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b)
          const chunks = [0, ...points, bytes.length]
            .slice(1)
            .map((end, i, ends) => bytes.subarray(i === 0 ? 0 : ends[i - 1], end))
          expect(capture(ceiling, ...chunks)).toEqual(expected(bytes, ceiling))
        },
      ),
      { numRuns: 5_000 },
    )
  })

  it('takes the tail from the end of a large read, starting between characters', () => {
    // Reads far larger than the tail, with the window's first byte landing inside characters of each width.
    for (const filler of ['a', 'é', '€', '😀', '\uFFFD']) {
      for (let shift = 0; shift < 4; shift++) {
        const bytes = Buffer.from(`${'x'.repeat(shift)}${filler.repeat(300)}END`)
        const chunks = [bytes.subarray(0, 7), bytes.subarray(7)]
        expect(capture(9, ...chunks)).toEqual(expected(bytes, 9))
      }
    }
    const invalid = Buffer.concat([
      Buffer.from('head'),
      Buffer.alloc(200, 0x80),
      Buffer.from([0xf0, 0x9f, 0x98]),
    ])
    expect(capture(6, invalid.subarray(0, 2), invalid.subarray(2))).toEqual(expected(invalid, 6))
  })

  it('stays bounded however much passes through', () => {
    const output = new OutputCapture(100)
    const line = Buffer.from('ligne numéro ✓ 😀\n')
    for (let i = 0; i < 100_000; i++) output.push(line)
    const result = output.finish()
    expect(result.bytes).toBe(line.length * 100_000)
    expect(result.lines).toBe(100_000)
    expect(result.elided).toBe([...line.toString()].length * 100_000 - 100)
    expect(result.text.length).toBeLessThanOrEqual(200 + elisionMarker(result.elided).length)
  })
})
