import { describe, expect, it } from 'vitest'
import { decodeTree, encodeFolder, PAGED_OVER, sha256, type TreeEntry } from '../../../src/snapshots/index.js'

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
