import { rename, symlink } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { listDir, searchFiles } from '../../../src/workspace/index.js'
import { sandbox } from './fixture.js'

const everything = { canRead: () => true }

describe('listDir', () => {
  it('lists entries sorted, with type, size and a / after directories', async () => {
    const box = await sandbox()
    await box.files({ 'src/b.ts': 'bb', 'src/a.ts': 'a', 'src/lib/x.ts': '' })
    await box.link('src/link.ts', 'a.ts')
    const outcome = await listDir(box.root, { path: 'src' })
    expect(outcome).toMatchObject({ ok: true, path: 'src', summary: 'list src: 4 entries' })
    expect(outcome.output.split('\n')).toEqual([
      'src/: 4 entries',
      'file              1  a.ts',
      'file              2  b.ts',
      'dir                  lib/',
      'link                 link.ts -> a.ts',
    ])
  })

  it('lists the root by default and marks links that lead outside', async () => {
    const box = await sandbox()
    await box.files({ 'README.md': '# hi\n' })
    await box.link('out', box.outside)
    const outcome = await listDir(box.root, {})
    expect(outcome.output).toMatch(/^\(workspace root\): 2 entries\n/)
    expect(outcome.output).toMatch(/link {17}out -> .*outside \(the file tools refuse it: "out" is a symlink/)
  })

  it('bounds the listing and says how many entries were left out', async () => {
    const box = await sandbox()
    await box.files(
      Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`many/f${String(i).padStart(2, '0')}`, ''])),
    )
    const outcome = await listDir(box.root, { path: 'many' }, { maxEntries: 10 })
    expect(outcome.output.split('\n')).toHaveLength(12)
    expect(outcome.output).toMatch(/\[… 20 more entries not shown; list a subdirectory or use search\]$/)
  })

  it('escapes control characters in names so a name cannot fake a row', async () => {
    const box = await sandbox()
    await box.files({ 'odd\nfile  99  fake.ts': '' })
    const outcome = await listDir(box.root, { path: '.' })
    expect(outcome.output.split('\n')).toHaveLength(2)
    expect(outcome.output).toMatch(/odd\\u000afile/)
  })

  it('refuses files, missing directories and directories outside the workspace', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': '' })
    await box.link('out', box.outside)
    expect((await listDir(box.root, { path: 'a.txt' })).output).toBe(
      'a.txt is not a directory; use read_file for a file',
    )
    expect((await listDir(box.root, { path: 'nope' })).output).toBe('nope does not exist')
    const escaping = await listDir(box.root, { path: 'out' })
    expect(escaping.ok).toBe(false)
    expect(escaping.output).not.toMatch(/secret/)
  })

  it('re-resolves at execution time: a directory swapped for an outside symlink is refused', async () => {
    const box = await sandbox()
    await box.files({ 'data/x.txt': '' })
    await rename(path.join(box.root, 'data'), path.join(box.root, 'data-old'))
    await symlink(box.outside, path.join(box.root, 'data'))
    const outcome = await listDir(box.root, { path: 'data' })
    expect(outcome.ok).toBe(false)
    expect(outcome.output).not.toMatch(/secret/)
  })
})

describe('searchFiles', () => {
  it('answers path:line: text, in path order', async () => {
    const box = await sandbox()
    await box.files({
      'src/b.ts': 'const todo = 1\n// TODO: b\n',
      'src/a.ts': '// TODO: a\n',
      'README.md': 'nothing\n',
    })
    const outcome = await searchFiles(box.root, { pattern: 'TODO:' }, everything)
    expect(outcome.ok).toBe(true)
    expect(outcome.output).toBe(
      'src/a.ts:1: // TODO: a\nsrc/b.ts:2: // TODO: b\n[2 matching lines in 2 files; 3 files searched]',
    )
  })

  it('skips .git, node_modules, symlinks and binary files', async () => {
    const box = await sandbox()
    await box.files({
      '.git/config': 'needle',
      'node_modules/pkg/index.js': 'needle',
      'src/needle.bin': Buffer.from([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x00]),
      'src/ok.ts': 'needle\n',
    })
    await box.link('out', box.outside)
    await box.link('src/alias.ts', 'ok.ts')
    const outcome = await searchFiles(box.root, { pattern: 'needle|secret' }, everything)
    expect(outcome.output).toBe(
      'src/ok.ts:1: needle\n[1 matching line in 1 file; 2 files searched (skipped: 1 binary or non-UTF-8)]',
    )
  })

  it('leaves out, without a word, every file the policy would not let the agent read', async () => {
    const box = await sandbox()
    await box.files({
      '.env': 'API_KEY=abc\n',
      'config/.env.local': 'API_KEY=def\n',
      'src/app.ts': 'read(API_KEY)\n',
    })
    const asked: string[] = []
    const canRead = (relPath: string) => {
      asked.push(relPath)
      return !/(^|\/)\.env(\.|$)/.test(relPath)
    }
    const outcome = await searchFiles(box.root, { pattern: 'API_KEY' }, { canRead })
    expect(outcome.output).toBe('src/app.ts:1: read(API_KEY)\n[1 matching line in 1 file; 1 file searched]')
    expect(outcome.output).not.toMatch(/env/)
    expect(asked.sort()).toEqual(['.env', 'config/.env.local', 'src/app.ts'])
  })

  it('filters by glob; a glob without / matches file names at any depth', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': 'x\n', 'src/a.js': 'x\n', 'test/b.ts': 'x\n', '.hidden/c.ts': 'x\n' })
    const names = (output: string) =>
      output
        .split('\n')
        .filter((line) => line.includes(':1:'))
        .map((line) => line.split(':')[0])
    expect(names((await searchFiles(box.root, { pattern: 'x', glob: '*.ts' }, everything)).output)).toEqual([
      '.hidden/c.ts',
      'src/a.ts',
      'test/b.ts',
    ])
    expect(names((await searchFiles(box.root, { pattern: 'x', glob: 'src/**' }, everything)).output)).toEqual(
      ['src/a.js', 'src/a.ts'],
    )
  })

  it('refuses an invalid regular expression with the reason', async () => {
    const box = await sandbox()
    const outcome = await searchFiles(box.root, { pattern: 'foo(' }, everything)
    expect(outcome.ok).toBe(false)
    expect(outcome.output).toMatch(/^invalid regular expression: .*Unterminated group.*escape \( \) \[ \]/)
  })

  it('bounds the matches and says the search was cut', async () => {
    const box = await sandbox()
    await box.files({
      'many.txt': 'hit\n'.repeat(500),
      'long.txt': `${'a'.repeat(1_000)}hit${'b'.repeat(1_000)}\n`,
    })
    const outcome = await searchFiles(box.root, { pattern: 'hit' }, { ...everything, maxMatches: 50 })
    expect(outcome.output).toMatch(/^long.txt:1: …a+hitb+…$/m)
    expect(outcome.output.split('\n').filter((line) => line.includes(': hit'))).toHaveLength(49)
    expect(outcome.output).toMatch(/stopped at 50 matching lines; narrow the pattern or give a glob\]$/)
    const small = await searchFiles(box.root, { pattern: 'hit' }, { ...everything, maxOutputChars: 2_000 })
    expect(small.output.length).toBeLessThanOrEqual(2_000)
    expect(small.output).toMatch(/more characters cut; narrow the pattern or give a glob\]/)
  })

  it('stops a pattern that backtracks without end, in seconds, and says why', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': 'fine\n', 'b.txt': `${'a'.repeat(40)}b\n` })
    const outcome = await searchFiles(box.root, { pattern: '(a+)+$' }, everything)
    expect(outcome.ok).toBe(true)
    expect(outcome.output).toMatch(
      /stopped: the pattern took too long in 2 files \(over 2 s\); nested repetition such as \(a\+\)\+ can take exponential time — simplify the pattern or give a glob\]$/,
    )
  })

  it('matches every file read before the file cap', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': 'hit\n', 'b.txt': 'hit\n', 'c.txt': 'hit\n' })
    const outcome = await searchFiles(box.root, { pattern: 'hit' }, { ...everything, maxSearchFiles: 2 })
    expect(outcome.output).toBe(
      'a.txt:1: hit\nb.txt:1: hit\n[2 matching lines in 2 files; 2 files searched; stopped after 2 files; give a glob to narrow the search]',
    )
  })

  it('says when nothing matched', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': 'abc\n' })
    expect((await searchFiles(box.root, { pattern: 'zzz', glob: '*.txt' }, everything)).output).toBe(
      'no matches for /zzz/ in *.txt\n[0 matching lines in 0 files; 1 file searched]',
    )
  })
})
