import { execFileSync } from 'node:child_process'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { readMany } from '../../../src/snapshots/fs-workers.js'
import {
  CHUNK_BYTES,
  decodeTree,
  type Exclusion,
  exclusion,
  scanTree,
  sha256,
  WorkspaceIndex,
} from '../../../src/snapshots/index.js'
import { openScanned } from '../../../src/snapshots/scan.js'

// The tests run side by side (most of their time is waiting out the racy window): folders go at the end.
const folders: string[] = []
afterAll(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true })
})

function workspace(files: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), 'tether-scan-'))
  folders.push(root)
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), content)
  }
  return root
}

const nothing: { key: string; excluded: Exclusion } = { key: 'none', excluded: () => false }
/** `parallelOver: 0` sends every stat to the stat workers, however small the tree. */
const scanWith =
  (parallelOver?: number) =>
  (root: string, index = new WorkspaceIndex(), ex = nothing) =>
    scanTree(root, index, ex, { parallelOver })
const scan = scanWith()

describe.concurrent('the tree of a workspace', () => {
  it('is the same for the same files, modes, links and folders, wherever they are', async () => {
    const a = workspace({ 'src/a.js': 'one', 'b.txt': 'two' })
    const b = workspace({ 'b.txt': 'two', 'src/a.js': 'one' })
    expect((await scan(a)).root).toBe((await scan(b)).root)
  })

  it('changes with content, mode, a symlink target, and an empty folder', async () => {
    const root = workspace({ 'a.txt': 'one' })
    const first = (await scan(root)).root
    chmodSync(join(root, 'a.txt'), 0o755)
    const moded = (await scan(root)).root
    expect(moded).not.toBe(first)
    mkdirSync(join(root, 'empty'))
    const withFolder = (await scan(root)).root
    expect(withFolder).not.toBe(moded)
    symlinkSync('a.txt', join(root, 'link'))
    const linked = (await scan(root)).root
    rmSync(join(root, 'link'))
    symlinkSync('elsewhere', join(root, 'link'))
    expect((await scan(root)).root).not.toBe(linked)
    expect(linked).not.toBe(withFolder)
  })

  it('keeps names that are not UTF-8 byte for byte', async () => {
    const root = workspace()
    const name = Buffer.from([0x66, 0xff, 0x2e, 0x74])
    writeFileSync(Buffer.concat([Buffer.from(`${root}/`), name]), 'x')
    const result = await scan(root)
    const top = decodeTree(result.objects.get(result.root) as Buffer)
    expect(Buffer.from(top[0]?.name as string, 'latin1')).toEqual(name)
  })

  it('reads only what changed: a file is hashed again only when its stat says it may differ', async () => {
    const files = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`d/f${i}.txt`, `file ${i}`]))
    const root = workspace(files)
    // Old modification and change times are trusted; files written within the racy window are not.
    const index = new WorkspaceIndex()
    const first = await scan(root, index)
    expect(first.hashed).toBe(50)
    const racy = await scan(root, index)
    expect(racy.root).toBe(first.root)
    // Written just now, so racy: read again until they are old enough.
    expect(racy.hashed).toBe(50)
    for (let i = 0; i < 50; i++) utimesSync(join(root, `d/f${i}.txt`), 1_000_000, 1_000_000)
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    await scan(root, index)
    const steady = await scan(root, index)
    expect(steady.hashed).toBe(0)
    writeFileSync(join(root, 'd/f7.txt'), 'file 8')
    // Same size, and the modification time put back: the change time still shows the rewrite.
    utimesSync(join(root, 'd/f7.txt'), 1_000_000, 1_000_000)
    const changed = await scan(root, index)
    expect(changed.hashed).toBe(1)
    expect(changed.root).not.toBe(first.root)
  }, 20_000)

  it('stores a large file as chunks', async () => {
    const root = workspace()
    writeFileSync(join(root, 'big.bin'), Buffer.alloc(CHUNK_BYTES * 2 + 10, 7))
    const result = await scan(root)
    const [entry] = decodeTree(result.objects.get(result.root) as Buffer)
    expect(entry).toMatchObject({ kind: 'F', size: CHUNK_BYTES * 2 + 10 })
    // Two equal full chunks and a tail: two content objects, the list and the folder.
    expect(result.objects.size).toBe(4)
  })

  it('leaves out declared caches and what the policy hides from reads', async () => {
    const root = workspace({
      'src/a.js': 'code',
      'node_modules/x/index.js': 'dependency',
      'pkg/node_modules/y.js': 'nested',
      '.env': 'SECRET=1',
      'config/.env': 'SECRET=2',
    })
    const ex = { key: 'k', excluded: exclusion(['node_modules'], (path) => /(^|\/)\.env$/.test(path)) }
    const result = await scan(root, new WorkspaceIndex(), ex)
    const names = decodeTree(result.objects.get(result.root) as Buffer).map((e) => e.name)
    expect(names).toEqual(['config', 'pkg', 'src'])
    const stored = [...result.objects.values()].filter(Buffer.isBuffer).map((b) => b.toString())
    expect(stored.some((text) => text.includes('SECRET'))).toBe(false)
    expect(stored.some((text) => text.includes('dependency') || text.includes('nested'))).toBe(false)
  })
})

/** A workspace whose files are all older than the racy window, so the index trusts every stat of it. */
async function settled(files: Record<string, string>): Promise<string> {
  const root = workspace(files)
  await new Promise((resolve) => setTimeout(resolve, 2_100))
  return root
}

describe.concurrent.each([
  ['on this thread', undefined],
  ['on stat workers', 0],
])('an incremental scan, stats %s', (_, parallelOver) => {
  const scan = scanWith(parallelOver)

  it('sees every kind of change a fresh scan sees, however the stat was dressed up', async () => {
    const root = await settled({
      'content/a.txt': 'one',
      'replaced/a.txt': 'one',
      'moded/a.sh': 'echo',
      'deleted/deep/a.txt': 'one',
      'folder/a.txt': 'one',
      'linked/target-a': 'a',
      'listed/a.txt': 'one',
      'hidden/a.txt': 'one',
    })
    symlinkSync('target-a', join(root, 'linked/link'))
    // Whole seconds, so that putting them back restores them exactly: only the change time can tell.
    const old = new Date('2020-01-01T00:00:00Z')
    for (const path of ['content/a.txt', 'replaced/a.txt', 'listed']) utimesSync(join(root, path), old, old)
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    const ex = { key: 'k', excluded: exclusion(['node_modules'], (path) => /(^|\/)\.env$/.test(path)) }
    const index = new WorkspaceIndex()
    let before = (await scan(root, index, ex)).root
    const changes: Array<[string, () => void]> = [
      [
        'content rewritten, same size, mtime put back',
        () => {
          writeFileSync(join(root, 'content/a.txt'), 'two')
          utimesSync(join(root, 'content/a.txt'), old, old)
        },
      ],
      [
        'a file replaced by a same-size file, mtime put back',
        () => {
          writeFileSync(join(root, 'replaced/b.tmp'), 'two')
          utimesSync(join(root, 'replaced/b.tmp'), old, old)
          renameSync(join(root, 'replaced/b.tmp'), join(root, 'replaced/a.txt'))
        },
      ],
      ['a mode change', () => chmodSync(join(root, 'moded/a.sh'), 0o755)],
      ['a deletion', () => rmSync(join(root, 'deleted/deep/a.txt'))],
      ['a new empty folder', () => mkdirSync(join(root, 'folder/empty'))],
      [
        'a symlink target of the same length',
        () => {
          rmSync(join(root, 'linked/link'))
          symlinkSync('target-b', join(root, 'linked/link'))
        },
      ],
      [
        'a new file in a folder whose mtime is put back',
        () => {
          writeFileSync(join(root, 'listed/new.txt'), 'new')
          utimesSync(join(root, 'listed'), old, old)
        },
      ],
    ]
    for (const [what, change] of changes) {
      change()
      const incremental = await scan(root, index, ex)
      const fresh = await scan(root, new WorkspaceIndex(), ex)
      expect(incremental.root, what).toBe(fresh.root)
      expect(incremental.root, what).not.toBe(before)
      before = incremental.root
    }
    // What the policy hides and a declared cache stay out when they appear in a folder already scanned.
    writeFileSync(join(root, 'hidden/.env'), 'SECRET=1')
    mkdirSync(join(root, 'hidden/node_modules'))
    writeFileSync(join(root, 'hidden/node_modules/x.js'), 'dependency')
    const after = await scan(root, index, ex)
    expect(after.root).toBe(before)
    const stored = [...after.objects.values()].filter(Buffer.isBuffer).map((b) => b.toString())
    expect(stored.some((text) => text.includes('SECRET') || text.includes('dependency'))).toBe(false)
  }, 20_000)

  it('encodes only the folders on the path to a change, and hashes only the changed file', async () => {
    const files: Record<string, string> = { 'a/b/c.txt': 'one' }
    for (let i = 0; i < 20; i++) files[`other${i}/f.txt`] = `file ${i}`
    const root = await settled(files)
    const index = new WorkspaceIndex()
    const first = await scan(root, index)
    expect(first.encoded).toBe(23)
    index.stored(1)
    const unchanged = await scan(root, index)
    expect(unchanged).toMatchObject({ root: first.root, hashed: 0, encoded: 0 })
    expect(unchanged.objects.size).toBe(0)
    writeFileSync(join(root, 'a/b/c.txt'), 'two')
    const changed = await scan(root, index)
    expect(changed).toMatchObject({ hashed: 1, encoded: 3 })
    // The file and its three folders: 'a/b', 'a' and the root.
    expect(changed.objects.size).toBe(4)
    expect(changed.objects.get(sha256('two'))?.toString()).toBe('two')
  }, 20_000)

  it('hands on the objects of a scan no store confirmed, until one does', async () => {
    const root = await settled({ 'src/a.js': 'code', 'big.bin': 'x' })
    writeFileSync(join(root, 'big.bin'), Buffer.alloc(CHUNK_BYTES + 5, 3))
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    const index = new WorkspaceIndex()
    const compared = await scan(root, index)
    // Nothing changed and nothing is read again, but nothing was stored either: every object goes again.
    const next = await scan(root, index)
    expect(next.hashed).toBe(0)
    expect([...next.objects.keys()].sort()).toEqual([...compared.objects.keys()].sort())
    index.stored(1)
    expect((await scan(root, index)).objects.size).toBe(0)
  }, 20_000)

  it('sees a file replaced by a folder of the same name', async () => {
    const root = await settled({ 'src/a.js': 'code', 'swap/b.txt': 'one' })
    const index = new WorkspaceIndex()
    await scan(root, index)
    const old = new Date('2020-01-01T00:00:00Z')
    utimesSync(join(root, 'swap'), old, old)
    await scan(root, index)
    rmSync(join(root, 'swap/b.txt'))
    mkdirSync(join(root, 'swap/b.txt'))
    writeFileSync(join(root, 'swap/b.txt/inside'), 'two')
    utimesSync(join(root, 'swap'), old, old)
    const incremental = await scan(root, index)
    expect(incremental.root).toBe((await scan(root, new WorkspaceIndex())).root)
    expect(incremental.files).toBe(2)
  }, 20_000)
})

describe('file workers', () => {
  const scan = scanWith(0)
  /** Nothing shared out: every stat and read on this thread. */
  const scanHere = scanWith(Number.POSITIVE_INFINITY)

  it('read and hash the files new to the index: the tree and objects read here, nothing hidden read', async () => {
    const files: Record<string, string> = { '.env': 'SECRET=1', 'empty.txt': '' }
    for (let i = 0; i < 60; i++) files[`src/f${i}.js`] = `module ${i}`
    const root = workspace(files)
    writeFileSync(join(root, 'src/large.bin'), Buffer.alloc(2 * 1024 * 1024, 3))
    writeFileSync(join(root, 'src/chunked.bin'), Buffer.alloc(CHUNK_BYTES + 5, 4))
    writeFileSync(Buffer.from(`${root}/caf\xe9.txt`, 'latin1'), 'latin1 name')
    symlinkSync('src/f1.js', join(root, 'link'))
    const ex = { key: 'k', excluded: exclusion([], (path) => path === '.env') }
    // An access time older than the modification time: the file system stamps a read (relatime does too).
    utimesSync(join(root, '.env'), new Date(1e12), new Date())
    const bytes = (source: unknown) =>
      Buffer.isBuffer(source)
        ? source
        : (() => {
            const { path, offset, length } = source as { path: string; offset: number; length: number }
            return readFileSync(Buffer.from(path, 'latin1')).subarray(offset, offset + length)
          })()
    const onWorkers = await scan(root, new WorkspaceIndex(), ex)
    const here = await scanHere(root, new WorkspaceIndex(), ex)
    expect(onWorkers.root).toBe(here.root)
    expect(onWorkers.hashed).toBe(here.hashed)
    expect([...onWorkers.objects.keys()].sort()).toEqual([...here.objects.keys()].sort())
    for (const [hash, source] of onWorkers.objects) expect(sha256(bytes(source))).toBe(hash)
    // The large file is read again, and checked, at upload; the small ones come back in memory.
    expect(onWorkers.objects.get(sha256(Buffer.alloc(2 * 1024 * 1024, 3)))).toMatchObject({ offset: 0 })
    expect(Buffer.isBuffer(onWorkers.objects.get(sha256(Buffer.from('module 7'))))).toBe(true)
    expect(onWorkers.objects.has(sha256(Buffer.from('SECRET=1')))).toBe(false)
    expect(statSync(join(root, '.env')).atimeMs).toBe(1e12)
  }, 30_000)

  it('read each file up to the size its stat gave, and leave one they cannot read to the caller', async () => {
    const root = workspace({ 'a.txt': 'grown since its stat', 'b.txt': 'short', 'sub/c.txt': 'c' })
    const file = (name: string, size: number, keep = true) => ({
      path: join(root, name),
      real: join(realpathSync(root), name),
      size,
      keep,
    })
    const reads = await readMany([
      file('a.txt', 5),
      file('b.txt', 50),
      file('gone.txt', 3),
      file('b.txt', 5, false),
    ])
    expect(reads[0]).toEqual({ hash: sha256(Buffer.from('grown')), length: 5, data: Buffer.from('grown') })
    expect(reads[1]).toEqual({ hash: sha256(Buffer.from('short')), length: 5, data: Buffer.from('short') })
    expect(reads[2]).toBeUndefined()
    expect(reads[3]).toEqual({ hash: sha256(Buffer.from('short')), length: 5, data: undefined })
    // A link or a pipe put where the stat saw a file, or a link put where it saw a folder on the file's way,
    // is neither read through nor waited on.
    expect((await readMany([file('sub/c.txt', 1)]))[0]?.hash).toBe(sha256(Buffer.from('c')))
    const elsewhere = workspace({ 'c.txt': 'not in the workspace' })
    rmSync(join(root, 'sub'), { recursive: true })
    symlinkSync(elsewhere, join(root, 'sub'))
    symlinkSync('/etc/passwd', join(root, 'link'))
    execFileSync('mkfifo', [join(root, 'pipe')])
    const swapped = await readMany([file('link', 10), file('pipe', 10), file('sub/c.txt', 10)])
    expect(swapped).toEqual([undefined, undefined, undefined])
    for (const name of ['link', 'pipe', 'sub/c.txt']) {
      const { path, real } = file(name, 0)
      expect(() => openScanned(Buffer.from(path), path, real)).toThrow(
        `${path} changed while the snapshot was taken`,
      )
    }
    // Only empty files to keep: they are laid out in a block of no bytes.
    writeFileSync(join(root, 'empty'), '')
    const empty = await readMany([file('empty', 0)])
    expect(empty).toEqual([{ hash: sha256(Buffer.alloc(0)), length: 0, data: Buffer.alloc(0) }])
  }, 30_000)

  it('stat a workspace again from the paths they kept, and are sent them again once they let them go', async () => {
    const root = await settled({ 'a.txt': 'one', 'src/b.js': 'two' })
    const index = new WorkspaceIndex()
    await scan(root, index)
    writeFileSync(join(root, 'a.txt'), 'changed, same paths')
    const kept = await scan(root, index)
    expect(kept.hashed).toBe(1)
    expect(kept.root).toBe((await scan(root, new WorkspaceIndex())).root)
    // More workspaces than a worker keeps lists for push this one's paths out of every worker.
    for (let i = 0; i < 20; i++) await scan(workspace({ [`other${i}.txt`]: 'x' }))
    writeFileSync(join(root, 'src/b.js'), 'changed again')
    const resent = await scan(root, index)
    expect(resent.hashed).toBeGreaterThanOrEqual(1)
    expect(resent.root).toBe((await scan(root, new WorkspaceIndex())).root)
    expect(resent.root).not.toBe(kept.root)
    // As many paths as before, one of them another: the new list is sent, not the kept one stat'ed.
    renameSync(join(root, 'a.txt'), join(root, 'c.txt'))
    const renamed = await scan(root, index)
    expect(renamed.root).toBe((await scan(root, new WorkspaceIndex())).root)
    expect(renamed.files).toBe(2)
  }, 30_000)

  it('take a long list a chunk at a time, and together stat every entry of it', async () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 1_300; i++) files[`d${i % 3}/f${i}.txt`] = `content ${i}`
    const root = await settled(files)
    const index = new WorkspaceIndex()
    const onWorkers = await scan(root, index)
    const here = await scanHere(root)
    expect(onWorkers.files).toBe(1_300)
    expect(onWorkers.root).toBe(here.root)
    // A change in the last chunk, and one in the first, are both seen.
    writeFileSync(join(root, 'd2/f1298.txt'), 'late change')
    writeFileSync(join(root, 'd0/f0.txt'), 'early change')
    const changed = await scan(root, index)
    expect(changed.hashed).toBe(2)
    expect(changed.root).toBe((await scanHere(root)).root)
  }, 30_000)
})
