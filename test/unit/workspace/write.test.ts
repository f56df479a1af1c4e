import { spawn } from 'node:child_process'
import {
  chmod,
  mkdir,
  readdir,
  readFile as readRaw,
  rename,
  stat,
  symlink,
  writeFile as writeRaw,
} from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { editFile, readFile, resolveWorkspacePath, writeFile } from '../../../src/workspace/index.js'
import { sandbox } from './fixture.js'

const read = (root: string, relPath: string) => readRaw(path.join(root, relPath), 'utf8')

describe('writeFile', () => {
  it('creates a file and its missing parent directories, and reports created / changed / unchanged', async () => {
    const box = await sandbox()
    const created = await writeFile(box.root, { path: 'src/deep/new.ts', content: 'export {}\n' })
    expect(created).toMatchObject({
      ok: true,
      path: 'src/deep/new.ts',
      output: 'created src/deep/new.ts: 10 bytes',
    })
    expect(await read(box.root, 'src/deep/new.ts')).toBe('export {}\n')
    const changed = await writeFile(box.root, { path: 'src/deep/new.ts', content: 'export const a = 1\n' })
    expect(changed.output).toBe('changed src/deep/new.ts: 19 bytes (was 10 bytes)')
    expect(changed.summary).toBe('write src/deep/new.ts: changed, 19 bytes (was 10 bytes)')
    const unchanged = await writeFile(box.root, { path: 'src/deep/new.ts', content: 'export const a = 1\n' })
    expect(unchanged.output).toBe('src/deep/new.ts unchanged: it already has this content (19 bytes)')
  })

  it('writes atomically: no temporary file is left and the permissions of a replaced file are kept', async () => {
    const box = await sandbox()
    await box.files({ 'run.sh': '#!/bin/sh\necho one\n' })
    await chmod(path.join(box.root, 'run.sh'), 0o755)
    const before = await stat(path.join(box.root, 'run.sh'))
    await writeFile(box.root, { path: 'run.sh', content: '#!/bin/sh\necho two\n' })
    const after = await stat(path.join(box.root, 'run.sh'))
    expect(after.mode & 0o777).toBe(0o755)
    // A new inode: the content was renamed into place, never rewritten in place.
    expect(after.ino).not.toBe(before.ino)
    expect(await readdir(box.root)).toEqual(['run.sh'])
  })

  it('refuses content over the size ceiling and leaves the file as it was', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': 'old' })
    const outcome = await writeFile(box.root, { path: 'a.txt', content: 'x'.repeat(2 * 1024 * 1024 + 1) })
    expect(outcome.ok).toBe(false)
    expect(outcome.output).toMatch(/2,097,153 bytes; the limit is 2,097,152 bytes/)
    expect(await read(box.root, 'a.txt')).toBe('old')
  })

  it('refuses to create a new file under a symlinked directory that points outside', async () => {
    const box = await sandbox()
    await box.link('out', box.outside)
    const outcome = await writeFile(box.root, { path: 'out/planted.txt', content: 'x' })
    expect(outcome.ok).toBe(false)
    expect(outcome.output).toMatch(/"out" is a symlink that points outside the workspace/)
    expect(await readdir(box.outside)).toEqual(['secret.txt'])
    const nested = await writeFile(box.root, { path: 'out/new-dir/planted.txt', content: 'x' })
    expect(nested.ok).toBe(false)
    expect(await readdir(box.outside)).toEqual(['secret.txt'])
  })

  it('never writes through a final symlink that points outside, existing or dangling', async () => {
    const box = await sandbox()
    await box.link('secret-link', path.join(box.outside, 'secret.txt'))
    await box.link('dangling', path.join(box.outside, 'would-be-created.txt'))
    expect((await writeFile(box.root, { path: 'secret-link', content: 'pwned' })).ok).toBe(false)
    expect((await writeFile(box.root, { path: 'dangling', content: 'pwned' })).ok).toBe(false)
    expect(await readRaw(path.join(box.outside, 'secret.txt'), 'utf8')).toBe('outside secret\n')
    expect(await readdir(box.outside)).toEqual(['secret.txt'])
  })

  it('writes through a symlink that stays inside and says where the content went', async () => {
    const box = await sandbox()
    await box.files({ 'real/config.json': '{}' })
    await box.link('config.json', 'real/config.json')
    const outcome = await writeFile(box.root, { path: 'config.json', content: '{"a":1}' })
    expect(outcome.output).toBe(
      'changed config.json (through a symlink, at real/config.json): 7 bytes (was 2 bytes)',
    )
    expect(await read(box.root, 'real/config.json')).toBe('{"a":1}')
  })

  it('re-resolves at execution time: a parent swapped for an outside symlink after the check is refused', async () => {
    const box = await sandbox()
    await box.files({ 'build/keep.txt': '' })
    expect(resolveWorkspacePath(box.root, 'build/out.txt').ok).toBe(true)
    await rename(path.join(box.root, 'build'), path.join(box.root, 'build-old'))
    await symlink(box.outside, path.join(box.root, 'build'))
    const outcome = await writeFile(box.root, { path: 'build/out.txt', content: 'x' })
    expect(outcome.ok).toBe(false)
    expect(await readdir(box.outside)).toEqual(['secret.txt'])
  })

  it('refuses to replace a directory or the root', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': '' })
    expect((await writeFile(box.root, { path: 'src', content: 'x' })).output).toBe(
      'src is a directory, not a file',
    )
    expect((await writeFile(box.root, { path: '.', content: 'x' })).output).toBe(
      '. is a directory, not a file',
    )
  })
})

describe('editFile', () => {
  const source = ['function a() {', '  return 1', '}', '', 'function b() {', '  return 1', '}', ''].join('\n')

  it('replaces the one occurrence and shows the edited lines', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': source })
    const outcome = await editFile(box.root, {
      path: 'src/a.ts',
      search: 'function b() {\n  return 1',
      replace: 'function b() {\n  return 2',
    })
    expect(outcome.ok).toBe(true)
    expect(outcome.output.split('\n')[0]).toBe('edited src/a.ts: replaced lines 5–6 with 2 lines')
    expect(outcome.output).toMatch(/ {5}6\t {2}return 2/)
    expect(await read(box.root, 'src/a.ts')).toBe(
      source.replace('function b() {\n  return 1', 'function b() {\n  return 2'),
    )
  })

  it('refuses text that occurs more than once, naming the lines, and changes nothing', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': source })
    const outcome = await editFile(box.root, { path: 'src/a.ts', search: 'return 1', replace: 'return 3' })
    expect(outcome).toMatchObject({ ok: false })
    expect(outcome.output).toBe(
      'search text occurs 2 times in src/a.ts (at line 2, 6); it must occur exactly once — include more surrounding lines to make it unique',
    )
    expect(await read(box.root, 'src/a.ts')).toBe(source)
  })

  it('counts overlapping occurrences as ambiguous', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': 'aaa\n' })
    const outcome = await editFile(box.root, { path: 'a.txt', search: 'aa', replace: 'b' })
    expect(outcome.output).toMatch(/occurs 2 times/)
  })

  it('refuses text that does not occur, pointing at a near miss', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': source })
    const outcome = await editFile(box.root, {
      path: 'src/a.ts',
      search: 'function a() {\n    return 1',
      replace: 'x',
    })
    expect(outcome.ok).toBe(false)
    expect(outcome.output).toMatch(/^search text not found in src\/a.ts; its first line appears at line 1/)
    const absent = await editFile(box.root, { path: 'src/a.ts', search: 'nothing like it', replace: 'x' })
    expect(absent.output).toBe('search text not found in src/a.ts; read_file it to see the current content')
  })

  it('keeps Windows line endings and a byte order mark', async () => {
    const box = await sandbox()
    const bom = Buffer.from([0xef, 0xbb, 0xbf])
    await box.files({ 'win.txt': Buffer.concat([bom, Buffer.from('one\r\ntwo\r\nthree\r\n')]) })
    const outcome = await editFile(box.root, { path: 'win.txt', search: 'one\ntwo', replace: 'one\n2' })
    expect(outcome.ok).toBe(true)
    const bytes = await readRaw(path.join(box.root, 'win.txt'))
    expect(bytes.subarray(0, 3).equals(bom)).toBe(true)
    expect(bytes.subarray(3).toString('utf8')).toBe('one\r\n2\r\nthree\r\n')
  })

  it('refuses missing files, binary files and paths that escape', async () => {
    const box = await sandbox()
    await box.files({ 'blob.bin': Buffer.from([1, 0, 2]) })
    await box.link('leak', path.join(box.outside, 'secret.txt'))
    expect((await editFile(box.root, { path: 'nope.ts', search: 'a', replace: 'b' })).output).toBe(
      'nope.ts does not exist; create it with write_file',
    )
    expect((await editFile(box.root, { path: 'blob.bin', search: 'a', replace: 'b' })).output).toMatch(
      /binary data/,
    )
    expect((await editFile(box.root, { path: 'leak', search: 'outside', replace: 'x' })).ok).toBe(false)
    expect(await readRaw(path.join(box.outside, 'secret.txt'), 'utf8')).toBe('outside secret\n')
  })

  it('reports an edit that changes nothing as unchanged', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': 'keep\n' })
    const outcome = await editFile(box.root, { path: 'a.txt', search: 'keep', replace: 'keep' })
    expect(outcome).toMatchObject({
      ok: true,
      output: 'a.txt unchanged: the replacement equals the search text',
    })
  })
})

describe('file tools racing a process that swaps a directory for an outside symlink', () => {
  it('never put a byte outside the workspace, nor read one from there', async () => {
    const box = await sandbox()
    await box.files({ 'nest/build/secret.txt': 'inside\n' })
    // The outside has the same shape, so a path followed through the swapped link finds something there.
    await mkdir(path.join(box.outside, 'build'))
    await writeRaw(path.join(box.outside, 'build/secret.txt'), 'outside secret\n')
    await symlink(box.outside, path.join(box.root, 'escape'))
    // Another process flips `nest` between the real directory and a symlink to the outside, as fast as it can.
    const swapper = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('node:fs'); const r = ${JSON.stringify(box.root)}; const p = (n) => r + '/' + n
         for (;;) { try { fs.renameSync(p('nest'), p('real')); fs.renameSync(p('escape'), p('nest'));
           fs.renameSync(p('nest'), p('escape')); fs.renameSync(p('real'), p('nest')) } catch {} }`,
      ],
      { stdio: 'ignore' },
    )
    const outcomes = []
    try {
      for (let i = 0; i < 200; i++) {
        outcomes.push(await writeFile(box.root, { path: `nest/build/out-${i}.txt`, content: `${i}` }))
        outcomes.push(await writeFile(box.root, { path: `nest/build/new-${i}/f.txt`, content: `${i}` }))
        outcomes.push(
          await editFile(box.root, { path: 'nest/build/secret.txt', search: 'secret', replace: 'secret' }),
        )
        outcomes.push(await readFile(box.root, { path: 'nest/build/secret.txt' }))
      }
    } finally {
      swapper.kill('SIGKILL')
    }
    // Some calls succeed, some are refused; none may touch the outside.
    expect(outcomes.some((outcome) => outcome.ok)).toBe(true)
    expect(outcomes.filter((outcome) => outcome.output.includes('outside secret'))).toEqual([])
    expect((await readdir(box.outside)).sort()).toEqual(['build', 'secret.txt'])
    expect(await readdir(path.join(box.outside, 'build'))).toEqual(['secret.txt'])
  }, 60_000)
})
