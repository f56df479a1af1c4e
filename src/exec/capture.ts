/**
 * Constant-memory capture of one output stream: the first and last characters, plus byte count, line
 * count and sha256 of everything. Bytes are decoded incrementally (a character split across reads is
 * joined, never cut), invalid UTF-8 becomes U+FFFD as a TextDecoder would, and characters are Unicode code
 * points, so a surrogate pair is never split either.
 *
 * The middle of a long stream is never decoded: once the head is full, a read that is valid UTF-8 is
 * counted on its bytes (a continuation byte adds no character), which is several times faster than
 * decoding it, and only the bytes that can still end up in the tail are kept. A read with invalid bytes
 * is decoded, so its U+FFFD count is exactly the decoder's.
 */
import { isUtf8 } from 'node:buffer'
import { createHash, type Hash } from 'node:crypto'
import { TextDecoder } from 'node:util'
import type { StreamCapture } from './types.js'

const NEWLINE = 0x0a
const HIGH_SURROGATE = /[\uD800-\uDBFF]/
const NOT_HIGH_SURROGATES = /[^\uD800-\uDBFF]+/g

export function elisionMarker(elided: number): string {
  return `\n[... ${elided} characters elided ...]\n`
}

/** Code points in `text`. Decoder output is well formed, so every high surrogate starts a pair. */
function codePoints(text: string): number {
  // The test is nearly free on Latin-1 strings, which V8 knows hold no surrogates.
  if (!HIGH_SURROGATE.test(text)) return text.length
  return text.length - text.replace(NOT_HIGH_SURROGATES, '').length
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff
}

/** Index in `text` just after its first `count` code points. */
function indexAfter(text: string, count: number, textCodePoints: number): number {
  if (textCodePoints === text.length) return count
  let index = 0
  for (let seen = 0; seen < count; seen++) index += isLowSurrogate(text.charCodeAt(index + 1)) ? 2 : 1
  return index
}

/** The last `count` code points of `text`. */
function lastCodePoints(text: string, count: number, textCodePoints: number): string {
  if (count >= textCodePoints) return text
  if (textCodePoints === text.length) return text.slice(text.length - count)
  let index = text.length
  for (let seen = 0; seen < count; seen++) index -= isLowSurrogate(text.charCodeAt(index - 1)) ? 2 : 1
  return text.slice(index)
}

/** Bytes of a UTF-8 sequence that starts with `lead`; 0 for ASCII and bytes that cannot start one. */
function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2
  if (lead >= 0xe0 && lead <= 0xef) return 3
  if (lead >= 0xf0 && lead <= 0xf4) return 4
  return 0
}

/** Whether `bytes` (lead first) can still become a valid sequence, by the decoder's rules. */
function isValidPrefix(bytes: readonly number[]): boolean {
  const [lead = 0, second, third] = bytes
  if (second !== undefined) {
    const low = lead === 0xe0 ? 0xa0 : lead === 0xf0 ? 0x90 : 0x80
    const high = lead === 0xed ? 0x9f : lead === 0xf4 ? 0x8f : 0xbf
    if (second < low || second > high) return false
  }
  return third === undefined || (third >= 0x80 && third <= 0xbf)
}

/** The unfinished sequence at the end of a stream whose last (up to three) bytes are `last`, if any. */
function unfinished(last: readonly number[]): number[] {
  for (let start = last.length - 1; start >= 0; start--) {
    const byte = last[start]!
    if ((byte & 0xc0) === 0x80) continue
    const held = last.slice(start)
    return sequenceLength(byte) > held.length && isValidPrefix(held) ? held : []
  }
  return []
}

/** Continuation bytes (0b10xxxxxx) in `bytes`, four at a time. */
function continuationBytes(bytes: Uint8Array): number {
  let count = 0
  let index = 0
  const isContinuation = (byte: number) => (byte & 0xc0) === 0x80
  for (; index < bytes.length && (bytes.byteOffset + index) % 4 !== 0; index++) {
    if (isContinuation(bytes[index]!)) count++
  }
  // A short slice can end before an aligned offset; a Uint32Array view may not even start there.
  if (index >= bytes.length) return count
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset + index, (bytes.length - index) >>> 2)
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    // Bit 7 of each byte set where the byte's top bits are 10; then the four flags summed by a multiply.
    const flags = word & ~(word << 1) & 0x80808080
    if (flags !== 0) count += Math.imul(flags >>> 7, 0x01010101) >>> 24
  }
  for (index += words.length * 4; index < bytes.length; index++) if (isContinuation(bytes[index]!)) count++
  return count
}

/**
 * Characters the decoder would produce for `chunk`, counted on the bytes, or undefined when the chunk (with
 * the bytes held back around it) is not valid UTF-8 or too small to bother.
 */
function cleanCount(
  chunk: Uint8Array,
  heldBefore: readonly number[],
  heldAfter: readonly number[],
): number | undefined {
  if (chunk.length < 8) return undefined
  const completing = heldBefore.length > 0 ? sequenceLength(heldBefore[0]!) - heldBefore.length : 0
  if (completing > 0 && !isUtf8(Uint8Array.from([...heldBefore, ...chunk.subarray(0, completing)])))
    return undefined
  const body = chunk.subarray(completing, chunk.length - heldAfter.length)
  if (!isUtf8(body)) return undefined
  return (completing > 0 ? 1 : 0) + body.length - continuationBytes(body)
}

/** A fresh decoder, as the stream's own one started: a leading byte order mark is kept as a character. */
function utf8Decoder(): TextDecoder {
  return new TextDecoder('utf-8', { ignoreBOM: true })
}

/**
 * Raw bytes whose decoding ends with the stream's current tail. Kept instead of decoded text, which would
 * be wasted work for all but the last read, and whose survival from one read to the next makes V8 grow
 * its young generation by tens of MiB.
 */
interface TailWindow {
  /** What the stream's decoder held back just before `bytes`. */
  held: readonly number[]
  bytes: Uint8Array
}

function decodeWindow(window: TailWindow): string {
  const decoder = utf8Decoder()
  return (
    decoder.decode(new Uint8Array(window.held), { stream: true }) +
    decoder.decode(window.bytes, { stream: true })
  )
}

/**
 * Keeps the last `count` characters of `chunk` as a window of raw bytes. The last `count` characters take at
 * most 4·count bytes, before at most 3 bytes of an unfinished one; a window that starts inside an earlier
 * character decodes that part as U+FFFD, which lies before the characters we keep.
 */
function tailWindow(chunk: Uint8Array, held: readonly number[], count: number): TailWindow {
  const start = chunk.length - 4 * count - 3
  return start <= 0 ? { held, bytes: chunk } : { held: [], bytes: chunk.subarray(start) }
}

/**
 * Captures one stream. `push` may keep a reference to the last chunk it was given (not a copy), so a
 * caller must not reuse a chunk's memory; Node's stream chunks are never reused.
 */
export class OutputCapture {
  private readonly hash: Hash = createHash('sha256')
  private decoder = utf8Decoder()
  /** Set while reads counted on their bytes have bypassed the decoder. */
  private decoderBehind = false
  private readonly headLimit: number
  private readonly tailLimit: number
  private head = ''
  private headCount = 0
  // The tail is either text, which may grow to twice its limit before it is cut (so small reads do not each
  // pay for a cut), or, after a read that alone covers it, that read's last bytes.
  private tail = ''
  private tailCount = 0
  private window: TailWindow | undefined
  private total = 0
  private byteCount = 0
  private newlines = 0
  private lastByte = -1
  /** The bytes the decoder holds back at the end of the input so far (an unfinished sequence). */
  private held: readonly number[] = []

  /** `ceiling` characters are kept: ⌊ceiling/2⌋ from the start, the rest from the end. */
  constructor(private readonly ceiling: number) {
    this.headLimit = Math.floor(ceiling / 2)
    this.tailLimit = ceiling - this.headLimit
  }

  get bytes(): number {
    return this.byteCount
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return
    this.hash.update(chunk)
    this.byteCount += chunk.length
    this.lastByte = chunk[chunk.length - 1]!
    for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) this.newlines++
    const heldBefore = this.held
    const last =
      chunk.length >= 3 ? [...chunk.subarray(chunk.length - 3)] : [...heldBefore, ...chunk].slice(-3)
    this.held = unfinished(last)

    let text: string | undefined
    let count = this.headCount === this.headLimit ? cleanCount(chunk, heldBefore, this.held) : undefined
    if (count === undefined) {
      text = this.decode(chunk, heldBefore)
      count = codePoints(text)
    } else {
      this.decoderBehind = true
    }
    this.total += count
    if (text !== undefined) {
      const rest = this.addHead(text, count)
      if (rest === undefined) return
      text = rest.text
      count = rest.count
    }
    if (this.tailLimit === 0) return
    if (count >= this.tailLimit) {
      this.window = tailWindow(chunk, heldBefore, this.tailLimit)
      this.tail = ''
      this.tailCount = 0
    } else {
      this.addTail(text ?? this.decode(chunk, heldBefore), count)
    }
  }

  finish(): StreamCapture {
    // A stream that ended inside a character yields U+FFFD here, as a one-shot decode would.
    this.syncDecoder(this.held)
    const rest = this.decoder.decode()
    const count = codePoints(rest)
    this.total += count
    const afterHead = this.addHead(rest, count)
    if (afterHead && this.tailLimit > 0) this.addTail(afterHead.text, afterHead.count)
    this.settleWindow()
    const tail = lastCodePoints(this.tail, this.tailLimit, this.tailCount)
    const elided = Math.max(0, this.total - this.ceiling)
    return {
      text: elided > 0 ? this.head + elisionMarker(elided) + tail : this.head + tail,
      elided,
      bytes: this.byteCount,
      lines: this.newlines + (this.byteCount > 0 && this.lastByte !== NEWLINE ? 1 : 0),
      sha256: this.hash.digest('hex'),
    }
  }

  private decode(chunk: Uint8Array, heldBefore: readonly number[]): string {
    this.syncDecoder(heldBefore)
    return this.decoder.decode(chunk, { stream: true })
  }

  /** After reads that bypassed it, a new decoder holding what the old one would hold now. */
  private syncDecoder(held: readonly number[]): void {
    if (!this.decoderBehind) return
    this.decoder = utf8Decoder()
    this.decoder.decode(new Uint8Array(held), { stream: true })
    this.decoderBehind = false
  }

  /** Fills the head with decoded text holding `count` code points; returns what is left for the tail. */
  private addHead(text: string, count: number): { text: string; count: number } | undefined {
    if (text.length === 0) return undefined
    const room = this.headLimit - this.headCount
    if (room === 0) return { text, count }
    if (count <= room) {
      this.head += text
      this.headCount += count
      return undefined
    }
    const cut = indexAfter(text, room, count)
    this.head += text.slice(0, cut)
    this.headCount = this.headLimit
    return { text: text.slice(cut), count: count - room }
  }

  private addTail(text: string, count: number): void {
    this.settleWindow()
    this.tail += text
    this.tailCount += count
    if (this.tailCount > 2 * this.tailLimit) {
      this.tail = lastCodePoints(this.tail, this.tailLimit, this.tailCount)
      this.tailCount = this.tailLimit
    }
  }

  /** Turns a pending window back into tail text, so text can be appended to it. */
  private settleWindow(): void {
    if (!this.window) return
    const text = decodeWindow(this.window)
    const count = codePoints(text)
    this.window = undefined
    this.tail = lastCodePoints(text, this.tailLimit, count)
    this.tailCount = Math.min(count, this.tailLimit)
  }
}
