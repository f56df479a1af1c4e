import { describe, expect, it } from 'vitest'
import {
  decodeTree,
  displayName,
  encodeFolder,
  PAGED_OVER,
  sha256,
  type TreeEntry,
} from '../../../src/snapshots/index.js'

const file = (name: string, content = name): TreeEntry => ({
  kind: 'f',
  mode: 0o644,
  size: content.length,
  hash: sha256(content),
  name,
})
const names = (n: number) => Array.from({ length: n }, (_, i) => `file-${String(i).padStart(4, '0')}.txt`)
const hashes = (entries: TreeEntry[]) => new Set(encodeFolder(entries).map((o) => o.hash))
const added = (before: Set<string>, after: Set<string>) => [...after].filter((h) => !before.has(h))

describe('a folder object', () => {
  it('is one listing while the folder is small', () => {
    const objects = encodeFolder(names(PAGED_OVER).map((n) => file(n)))
    expect(objects).toHaveLength(1)
    expect(decodeTree(objects[0]?.data as Buffer)).toHaveLength(PAGED_OVER)
  })

  it('is a list of pages when the folder is large, holding every entry once, in order', () => {
    const entries = names(500).map((n) => file(n))
    const [folder, ...pages] = encodeFolder(entries)
    const listed = decodeTree(folder?.data as Buffer)
    expect(listed.every((e) => e.kind === 'p')).toBe(true)
    expect(listed.map((e) => e.hash)).toEqual(pages.map((p) => p.hash))
    expect(pages.flatMap((p) => decodeTree(p.data).map((e) => e.name))).toEqual(names(500))
    expect(listed.reduce((sum, e) => sum + e.size, 0)).toBe(500)
    expect(pages.every((p) => decodeTree(p.data).length <= 64)).toBe(true)
  })

  it('changes by one page and its list when one entry is changed, added or removed', () => {
    const entries = names(500).map((n) => file(n))
    const before = hashes(entries)
    const changed = entries.map((e, i) => (i === 250 ? file(e.name, 'new content') : e))
    expect(added(before, hashes(changed))).toHaveLength(2)
    expect(added(before, hashes([...entries, file('file-0250.txt.bak')]))).toHaveLength(2)
    expect(added(before, hashes(entries.filter((_, i) => i !== 100)))).toHaveLength(2)
  })
})

describe('a name as people read it', () => {
  const name = (...bytes: number[]) => Buffer.from(bytes).toString('latin1')
  const utf8 = (text: string) => Buffer.from(text, 'utf8').toString('latin1')

  it('is the UTF-8 text, a byte-order mark and a real U+FFFD included', () => {
    for (const text of ['src/add.js', 'ünïcode/日本.txt', '\uFEFFbom', 'a\uFFFDb', 'emoji-😀'])
      expect(displayName(utf8(text))).toBe(text)
  })

  it('shows each byte that is no part of a UTF-8 character as \\xNN, so such names stay apart', () => {
    expect(displayName(name(0x62, 0xff, 0x63))).toBe('b\\xffc')
    expect(displayName(name(0x62, 0xfe, 0x63))).toBe('b\\xfec')
    // A character cut short, an overlong form, a surrogate's encoding: bytes, with what follows kept.
    expect(displayName(name(0x61, 0xe2, 0x82, 0x2f, 0xc3, 0xa9))).toBe('a\\xe2\\x82/é')
    expect(displayName(name(0xc0, 0xaf))).toBe('\\xc0\\xaf')
    expect(displayName(name(0xed, 0xa0, 0x80, 0x41))).toBe('\\xed\\xa0\\x80A')
  })
})
