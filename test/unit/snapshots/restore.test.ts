/**
 * A tree laid out on disk (src/snapshots/restore.ts), its files written by worker threads: names that are
 * not UTF-8, modes the umask would cut, empty and chunked files, links and empty folders all come back as
 * scanned, and the index the restore fills knows every file (the scan after it reads none). A disk that
 * fills up fails the restore with the file system's own error.
 */
import { execFileSync } from 'node:child_process'
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  CHUNK_BYTES,
  type Exclusion,
  type ObjectStore,
  scanTree,
  WorkspaceIndex,
} from '../../../src/snapshots/index.js'
import { restoreTree } from '../../../src/snapshots/restore.js'
import type { ObjectSource } from '../../../src/snapshots/scan.js'

const isRoot = process.getuid?.() === 0
const nothing: { key: string; excluded: Exclusion } = { key: 'none', excluded: () => false }
const folders: string[] = []
afterAll(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true })
})

function folder(): string {
  const made = mkdtempSync(join(tmpdir(), 'tether-restore-'))
  folders.push(made)
  return made
}

function bytesOf(source: ObjectSource): Buffer {
  if (Buffer.isBuffer(source)) return source
  const data = Buffer.alloc(source.length)
  const fd = openSync(source.path, 'r')
  try {
    readSync(fd, data, 0, source.length, source.offset)
  } finally {
    closeSync(fd)
  }
  return data
}

/**
 * A store in this process's memory, holding what a scan of `root` made; the tree's root hash. With
 * `unchecked`, it also hands objects over unchecked, as `unchecked` makes them of what it holds.
 */
async function stored(
  root: string,
  unchecked?: (data: Buffer) => Buffer,
): Promise<{ store: ObjectStore; tree: string }> {
  const scan = await scanTree(root, new WorkspaceIndex(), nothing)
  const objects = new Map([...scan.objects].map(([hash, source]) => [hash, bytesOf(source)]))
  const store: ObjectStore = {
    name: 'memory',
    missing: async (hashes) => hashes.filter((hash) => !objects.has(hash)),
    put: async () => {},
    get: async (hashes) => new Map(hashes.map((hash) => [hash, objects.get(hash) as Buffer])),
    ...(unchecked
      ? {
          getUnchecked: async (hashes: readonly string[]) =>
            new Map(hashes.map((hash) => [hash, unchecked(objects.get(hash) as Buffer)])),
        }
      : {}),
    list: async function* () {},
    delete: async () => {},
  }
  return { store, tree: scan.root }
}

/** `data` copied into a range of a shared block, as the PostgreSQL store hands objects over. */
function inShared(data: Buffer): Buffer {
  const block = new SharedArrayBuffer(data.length + 16)
  const range = Buffer.from(block, 8, data.length)
  data.copy(range)
  return range
}

describe('a restore', () => {
  it('gives back the tree as it was scanned, and an index that knows every file it wrote', async () => {
    const source = folder()
    mkdirSync(join(source, 'src', 'empty'), { recursive: true })
    writeFileSync(join(source, 'src', 'main.ts'), 'export {}\n')
    writeFileSync(join(source, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 })
    writeFileSync(join(source, 'private'), 'mine')
    chmodSync(join(source, 'private'), 0o600)
    writeFileSync(join(source, 'group-writable'), 'ours')
    chmodSync(join(source, 'group-writable'), 0o775)
    writeFileSync(join(source, 'nothing'), '')
    writeFileSync(join(source, 'résumé ✓.txt'), 'utf-8 name')
    writeFileSync(Buffer.from(`${source}/latin1-\xe9`, 'latin1'), 'a name that is not UTF-8')
    writeFileSync(join(source, 'large.bin'), Buffer.alloc(CHUNK_BYTES + 1000, 3))
    symlinkSync('src/main.ts', join(source, 'link'))
    for (let i = 0; i < 300; i++) writeFileSync(join(source, 'src', `file${i}.txt`), `file ${i}\n`)
    const { store, tree } = await stored(source)

    const target = join(folder(), 'restored')
    const index = new WorkspaceIndex()
    const umask = process.umask(0o077)
    let written: { files: number; bytes: number }
    try {
      written = await restoreTree(store, tree, target, index)
    } finally {
      process.umask(umask)
    }
    expect(written.files).toBe(309)
    const again = await scanTree(target, index, nothing)
    expect(again.root).toBe(tree)
    expect(again.hashed).toBe(0)
    expect(execFileSync('stat', ['-c', '%a', join(target, 'group-writable')], { encoding: 'utf8' })).toBe(
      '775\n',
    )
  })

  it('writes objects handed over unchecked where they are, shared or not, each checked first', async () => {
    const source = folder()
    for (let i = 0; i < 100; i++) writeFileSync(join(source, `file${i}.txt`), `file ${i}\n`)
    writeFileSync(join(source, 'nothing'), '')
    symlinkSync('file1.txt', join(source, 'link'))
    let handed = 0
    const { store, tree } = await stored(source, (data) => (handed++ % 2 === 0 ? inShared(data) : data))
    const target = join(folder(), 'restored')
    const index = new WorkspaceIndex()
    expect(await restoreTree(store, tree, target, index)).toMatchObject({ files: 102 })
    expect(handed).toBe(102)
    expect((await scanTree(target, index, nothing)).root).toBe(tree)
  })

  it('refuses a file or link whose bytes are not what its name says, and writes nothing of them', async () => {
    for (const bad of ['file7.txt', 'link']) {
      const source = folder()
      for (let i = 0; i < 20; i++) writeFileSync(join(source, `file${i}.txt`), `file ${i}\n`)
      symlinkSync('file1.txt', join(source, 'link'))
      const wrong = bad === 'link' ? 'file1.txt' : 'file 7\n'
      const { store, tree } = await stored(source, (data) =>
        inShared(data.toString() === wrong ? Buffer.from(`${wrong}tampered`) : data),
      )
      const target = join(folder(), 'restored')
      await expect(restoreTree(store, tree, target, new WorkspaceIndex())).rejects.toThrow(
        /returned object .* with other content than its name says/,
      )
      expect(existsSync(join(target, bad))).toBe(false)
    }
  })

  it.runIf(isRoot)('fails with the file system’s own error when the disk fills up', async () => {
    const source = folder()
    for (let i = 0; i < 40; i++) writeFileSync(join(source, `part${i}`), Buffer.alloc(100_000, i))
    const { store, tree } = await stored(source)
    const small = folder()
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tether-test-restore', small])
    try {
      const error = await restoreTree(store, tree, join(small, 'restored'), new WorkspaceIndex()).catch(
        (e: unknown) => e,
      )
      expect(error).toMatchObject({ code: 'ENOSPC' })
    } finally {
      execFileSync('umount', ['-l', small])
    }
  })
})
