/**
 * Is this file text the model can read and edit? Only UTF-8 is: other encodings would be rewritten as
 * UTF-8 by an edit, silently changing bytes the model never saw.
 */
import { isUtf8 } from 'node:buffer'

/** How much of a file's head is sniffed for a NUL byte, the mark of binary data (as git does). */
export const SNIFF_BYTES = 8 * 1024

const SIGNATURES: ReadonlyArray<{ kind: string; bytes: readonly number[]; at?: number }> = [
  { kind: 'PNG image', bytes: [0x89, 0x50, 0x4e, 0x47] },
  { kind: 'JPEG image', bytes: [0xff, 0xd8, 0xff] },
  { kind: 'GIF image', bytes: [0x47, 0x49, 0x46, 0x38] },
  { kind: 'WebP image', bytes: [0x57, 0x45, 0x42, 0x50], at: 8 },
  { kind: 'PDF document', bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] },
  { kind: 'ZIP archive (also jar, docx, xlsx)', bytes: [0x50, 0x4b, 0x03, 0x04] },
  { kind: 'gzip archive', bytes: [0x1f, 0x8b] },
  { kind: 'bzip2 archive', bytes: [0x42, 0x5a, 0x68] },
  { kind: 'xz archive', bytes: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] },
  { kind: '7-Zip archive', bytes: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c] },
  { kind: 'tar archive', bytes: [0x75, 0x73, 0x74, 0x61, 0x72], at: 257 },
  { kind: 'ELF executable', bytes: [0x7f, 0x45, 0x4c, 0x46] },
  { kind: 'Mach-O executable', bytes: [0xcf, 0xfa, 0xed, 0xfe] },
  { kind: 'Java class file', bytes: [0xca, 0xfe, 0xba, 0xbe] },
  { kind: 'WebAssembly module', bytes: [0x00, 0x61, 0x73, 0x6d] },
  { kind: 'SQLite database', bytes: [...Buffer.from('SQLite format 3\0')] },
  { kind: 'UTF-32 text (little-endian byte order mark)', bytes: [0xff, 0xfe, 0x00, 0x00] },
  { kind: 'UTF-16 text (little-endian byte order mark)', bytes: [0xff, 0xfe] },
  { kind: 'UTF-16 text (big-endian byte order mark)', bytes: [0xfe, 0xff] },
]

function startsWith(head: Uint8Array, bytes: readonly number[], at: number): boolean {
  if (head.length < at + bytes.length) return false
  return bytes.every((byte, i) => head[at + i] === byte)
}

/**
 * Names what kind of non-text a file's head shows, or undefined when it may be UTF-8 text. `head` is the
 * first bytes of the file (up to `SNIFF_BYTES`); the UTF-8 check of the whole content happens on decode.
 */
export function sniffNonText(head: Uint8Array): string | undefined {
  for (const signature of SIGNATURES) {
    if (startsWith(head, signature.bytes, signature.at ?? 0)) return signature.kind
  }
  if (head.subarray(0, SNIFF_BYTES).includes(0)) return 'binary data'
  return undefined
}

export const NOT_UTF8_KIND = 'text that is not UTF-8 (a legacy encoding such as Latin-1, or corrupt bytes)'

export type TextContent = { ok: true; text: string } | { ok: false; kind: string }

/** Decodes a whole file as UTF-8 text (a leading byte order mark is dropped), or names what it is instead. */
export function decodeText(bytes: Uint8Array): TextContent {
  const kind = sniffNonText(bytes)
  if (kind) return { ok: false, kind }
  if (!isUtf8(bytes)) return { ok: false, kind: NOT_UTF8_KIND }
  return { ok: true, text: new TextDecoder('utf-8').decode(bytes) }
}

/** A streaming UTF-8 decoder that reports bad bytes instead of replacing them. */
export function strictUtf8Decoder(): {
  push(chunk: Uint8Array): string | undefined
  end(): string | undefined
} {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const guard = (decode: () => string) => {
    try {
      return decode()
    } catch {
      return undefined
    }
  }
  return {
    push: (chunk) => guard(() => decoder.decode(chunk, { stream: true })),
    end: () => guard(() => decoder.decode()),
  }
}

/** A line as the file tools show it, like `cat -n`: right-aligned 1-based number, a tab, the text. */
export function numberedLine(lineNumber: number, text: string): string {
  return `${String(lineNumber).padStart(6)}\t${text}`
}

/** A name as the model reads it: control characters escaped, so a crafted file name cannot fake output lines. */
export function printable(name: string): string {
  return name.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
