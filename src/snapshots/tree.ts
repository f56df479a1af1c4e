/**
 * The content-addressed tree: how a workspace's files, links and folders become objects named by the
 * SHA-256 of their bytes. A file's object is its content (or, past `CHUNK_BYTES`, a list of chunk objects);
 * a symlink's is its target; a folder's is the sorted list of its entries. The root folder's name is the
 * workspace's root hash: equal roots mean equal trees, byte for byte, mode for mode.
 *
 * Names are kept as the bytes the file system holds, carried in `latin1` strings (one character per byte),
 * so a name that is not UTF-8 is restored exactly as it was.
 */
import { createHash } from 'node:crypto'

/** Files larger than this are stored as a list of chunks: memory stays bounded and a changed part is small. */
export const CHUNK_BYTES = 4 * 1024 * 1024

/**
 * `f` file, `F` chunked file (its object lists the chunks), `l` symlink, `d` folder; `p` a page of a large
 * folder's entries (only in a folder's own object: named by its first entry, `size` its entry count).
 */
export type EntryKind = 'f' | 'F' | 'l' | 'd' | 'p'

export interface TreeEntry {
  kind: EntryKind
  /** Permission bits (`0o777`); setuid, setgid and sticky are not state (a restore never sets them). */
  mode: number
  /** Bytes of the file (0 for folders; the target's length for links). */
  size: number
  hash: string
  /** The name as bytes, in a latin1 string. */
  name: string
}

const HEADER = 'tether-tree 1\n'

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex')
}

/** A folder's object: the header, then each entry as `kind mode size hash<TAB>name<NUL>`, sorted by name. */
export function encodeTree(entries: readonly TreeEntry[]): Buffer {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  let text = HEADER
  for (const e of sorted) text += `${e.kind} ${e.mode.toString(8)} ${e.size} ${e.hash}\t${e.name}\0`
  return Buffer.from(text, 'latin1')
}

export class TreeFormatError extends Error {
  override name = 'TreeFormatError'
}

export function decodeTree(data: Buffer): TreeEntry[] {
  const text = data.toString('latin1')
  if (!text.startsWith(HEADER)) throw new TreeFormatError('not a tether tree object (its header is wrong)')
  const entries: TreeEntry[] = []
  let at = HEADER.length
  while (at < text.length) {
    const tab = text.indexOf('\t', at)
    const end = text.indexOf('\0', tab)
    if (tab < 0 || end < 0) throw new TreeFormatError('a tree entry is cut short')
    const [kind, mode, size, hash] = text.slice(at, tab).split(' ')
    if (!kind || !'fFldp'.includes(kind) || kind.length !== 1 || !/^[0-9a-f]{64}$/.test(hash ?? '')) {
      throw new TreeFormatError(`a tree entry is malformed: ${JSON.stringify(text.slice(at, tab))}`)
    }
    const name = text.slice(tab + 1, end)
    if (name === '' || name === '.' || name === '..' || name.includes('/')) {
      throw new TreeFormatError(`a tree entry has an impossible name: ${JSON.stringify(name)}`)
    }
    entries.push({
      kind: kind as EntryKind,
      mode: Number.parseInt(mode ?? '', 8) & 0o777,
      size: Number(size),
      hash: hash as string,
      name,
    })
    at = end + 1
  }
  return entries
}

/** Folders of more entries than this are stored as pages, so a change rewrites one page, not the folder. */
export const PAGED_OVER = 32
/** A page ends after at most this many entries, or earlier where a name says so (about 1 in 16). */
const PAGE_MAX = 64

/**
 * A folder's objects: its own (returned first, with its hash) and, when it is large, its pages. Pages end
 * where an entry's name hashes to a low first byte, so they depend on names only: adding, removing or
 * changing one entry rewrites one page and the folder's short list of pages, as the folder grows.
 */
export function encodeFolder(entries: readonly TreeEntry[]): Array<{ hash: string; data: Buffer }> {
  const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  if (sorted.length <= PAGED_OVER) {
    const data = encodeTree(sorted)
    return [{ hash: sha256(data), data }]
  }
  const pages: Array<{ hash: string; data: Buffer }> = []
  const listed: TreeEntry[] = []
  let page: TreeEntry[] = []
  const close = () => {
    const data = encodeTree(page)
    const hash = sha256(data)
    pages.push({ hash, data })
    listed.push({ kind: 'p', mode: 0, size: page.length, hash, name: (page[0] as TreeEntry).name })
    page = []
  }
  for (const entry of sorted) {
    page.push(entry)
    if (
      page.length >= PAGE_MAX ||
      (createHash('sha256').update(entry.name, 'latin1').digest()[0] as number) < 16
    )
      close()
  }
  if (page.length > 0) close()
  const data = encodeTree(listed)
  return [{ hash: sha256(data), data }, ...pages]
}

/** A chunked file's object: the chunk hashes, one per line. */
export function encodeChunks(hashes: readonly string[]): Buffer {
  return Buffer.from(`tether-chunks 1\n${hashes.join('\n')}\n`, 'latin1')
}

export function decodeChunks(data: Buffer): string[] {
  const lines = data.toString('latin1').split('\n')
  if (lines[0] !== 'tether-chunks 1') throw new TreeFormatError('not a tether chunk list')
  const hashes = lines.slice(1, -1)
  if (hashes.some((hash) => !/^[0-9a-f]{64}$/.test(hash)))
    throw new TreeFormatError('a chunk hash is malformed')
  return hashes
}

/** A name as the policy reads it: the bytes decoded as UTF-8, a byte that is not UTF-8 as U+FFFD. */
export function policyName(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8')
}

/** Strict, and keeping a leading byte-order mark: it is part of the name. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function decoded(bytes: Uint8Array): string | undefined {
  try {
    return UTF8.decode(bytes)
  } catch {
    return undefined
  }
}

/** Bytes in the UTF-8 character a byte starts (0: it starts none). */
function characterLength(lead: number): number {
  if (lead < 0x80) return 1
  if (lead >= 0xc2 && lead <= 0xdf) return 2
  if (lead >= 0xe0 && lead <= 0xef) return 3
  if (lead >= 0xf0 && lead <= 0xf4) return 4
  return 0
}

/**
 * A name as people read it: UTF-8, and each byte that is not part of a UTF-8 character as `\xNN` — with
 * replacement marks, two names that differ only in such a byte would look alike.
 */
export function displayName(latin1: string): string {
  const bytes = Buffer.from(latin1, 'latin1')
  const whole = decoded(bytes)
  if (whole !== undefined) return whole
  let shown = ''
  for (let i = 0; i < bytes.length; ) {
    const lead = bytes[i] as number
    const length = characterLength(lead)
    const character =
      length > 0 && i + length <= bytes.length ? decoded(bytes.subarray(i, i + length)) : undefined
    if (character !== undefined) {
      shown += character
      i += length
    } else {
      shown += `\\x${lead.toString(16).padStart(2, '0')}`
      i += 1
    }
  }
  return shown
}
