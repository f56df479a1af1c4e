import { execFileSync } from 'node:child_process'
import { rename, symlink } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { readFile, resolveWorkspacePath } from '../../../src/workspace/index.js'
import { sandbox } from './fixture.js'

const lines = (count: number, make = (i: number) => `line ${i}`) =>
  `${Array.from({ length: count }, (_, i) => make(i + 1)).join('\n')}\n`

describe('readFile', () => {
  it('returns the text with line numbers', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': 'const a = 1\nconst b = 2\n' })
    const outcome = await readFile(box.root, { path: 'src/a.ts' })
    expect(outcome).toMatchObject({ ok: true, path: 'src/a.ts' })
    expect(outcome.output).toBe('     1\tconst a = 1\n     2\tconst b = 2')
    expect(outcome.summary).toBe('read src/a.ts: lines 1–2 of 24 bytes')
  })

  it('pages with offset (0-based) and limit, and says how to continue', async () => {
    const box = await sandbox()
    await box.files({ 'big.txt': lines(50) })
    const page = await readFile(box.root, { path: 'big.txt', offset: 10, limit: 5 })
    expect(page.ok).toBe(true)
    expect(page.output.split('\n').slice(0, 5)).toEqual([
      '    11\tline 11',
      '    12\tline 12',
      '    13\tline 13',
      '    14\tline 14',
      '    15\tline 15',
    ])
    expect(page.output).toMatch(
      /lines 11–15 shown, showing at most 5 lines; the file continues — read_file with offset=15/,
    )
    const last = await readFile(box.root, { path: 'big.txt', offset: 48 })
    expect(last.output).toMatch(
      /49\tline 49\n +50\tline 50\n\[lines 49–50 shown; end of file \(50 lines\)\]$/,
    )
  })

  it('bounds a long file at 2,000 lines by default', async () => {
    const box = await sandbox()
    await box.files({ 'long.txt': lines(5_000) })
    const outcome = await readFile(box.root, { path: 'long.txt' })
    const numbered = outcome.output.split('\n').filter((line) => /^\s+\d+\t/.test(line))
    expect(numbered).toHaveLength(2_000)
    expect(outcome.output).toMatch(/offset=2000 for more/)
  })

  it('bounds the output in characters and cuts very long lines', async () => {
    const box = await sandbox()
    await box.files({
      'wide.txt': lines(100, () => 'x'.repeat(1_500)),
      'minified.js': `${'y'.repeat(10_000)}\n`,
    })
    const wide = await readFile(box.root, { path: 'wide.txt' })
    expect(wide.output.length).toBeLessThanOrEqual(50_000)
    expect(wide.output).toMatch(
      /the output reached 50,000 characters; the file continues — read_file with offset=\d+/,
    )
    const minified = await readFile(box.root, { path: 'minified.js' })
    expect(minified.output).toMatch(/line cut, 8,000 more characters/)
    expect(minified.output).toMatch(/1 long line was cut at 2,000 characters/)
  })

  it('strips carriage returns and a UTF-8 byte order mark from what it shows', async () => {
    const box = await sandbox()
    await box.files({
      'win.txt': Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('a\r\nb\r\n')]),
    })
    expect((await readFile(box.root, { path: 'win.txt' })).output).toBe('     1\ta\n     2\tb')
  })

  it('refuses binary files and names their kind and size', async () => {
    const box = await sandbox()
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.alloc(100),
    ])
    await box.files({ 'logo.png': png, 'blob.bin': Buffer.from([0x41, 0x00, 0x42]) })
    const image = await readFile(box.root, { path: 'logo.png' })
    expect(image).toMatchObject({ ok: false })
    expect(image.output).toBe('logo.png is PNG image, 108 bytes; read_file shows only UTF-8 text')
    expect((await readFile(box.root, { path: 'blob.bin' })).output).toMatch(/binary data, 3 bytes/)
  })

  it('refuses text that is not UTF-8, including UTF-16 and invalid bytes late in the file', async () => {
    const box = await sandbox()
    await box.files({
      'latin1.txt': Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]),
      'utf16.txt': Buffer.from([0xff, 0xfe, 0x61, 0x00]),
      'late.txt': Buffer.concat([Buffer.from('ok\n'.repeat(30_000)), Buffer.from([0xc3, 0x28])]),
    })
    expect((await readFile(box.root, { path: 'latin1.txt' })).output).toMatch(/not UTF-8/)
    expect((await readFile(box.root, { path: 'utf16.txt' })).output).toMatch(/UTF-16 text/)
    // Bytes are checked as they are read: a window that reaches the bad bytes is refused.
    const late = await readFile(box.root, { path: 'late.txt', offset: 29_999 })
    expect(late.ok).toBe(false)
  })

  it('refuses directories, missing files and offsets past the end with clear messages', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': 'one\n', 'empty.txt': '' })
    expect((await readFile(box.root, { path: 'src' })).output).toBe(
      'src is a directory; use list_dir to see its entries',
    )
    expect((await readFile(box.root, { path: 'src/missing.ts' })).output).toBe(
      'src/missing.ts does not exist; list_dir its directory to see what exists',
    )
    expect((await readFile(box.root, { path: 'src/a.ts', offset: 5 })).output).toBe(
      'offset 5 is past the end of src/a.ts, which has 1 line',
    )
    expect(await readFile(box.root, { path: 'empty.txt' })).toMatchObject({
      ok: true,
      output: '(empty file)',
    })
  })

  it('refuses a FIFO instead of blocking on it', async () => {
    const box = await sandbox()
    execFileSync('mkfifo', [path.join(box.root, 'pipe')])
    const outcome = await readFile(box.root, { path: 'pipe' })
    expect(outcome).toMatchObject({
      ok: false,
      output: 'pipe is not a regular file (a device, socket or pipe)',
    })
  })

  it('refuses paths that escape, and reads through links that stay inside', async () => {
    const box = await sandbox()
    await box.files({ 'docs/a.md': 'inside\n' })
    await box.link('leak', path.join(box.outside, 'secret.txt'))
    await box.link('alias.md', 'docs/a.md')
    const leak = await readFile(box.root, { path: 'leak' })
    expect(leak.ok).toBe(false)
    expect(leak.output).toMatch(/^refused: "leak" is a symlink that points outside the workspace/)
    expect(leak.output).not.toMatch(/outside secret/)
    expect((await readFile(box.root, { path: '../outside/secret.txt' })).output).toMatch(
      /leaves the workspace/,
    )
    expect((await readFile(box.root, { path: 'alias.md' })).output).toBe('     1\tinside')
  })

  it('re-resolves at execution time: a directory swapped for a symlink after the policy check is refused', async () => {
    const box = await sandbox()
    await box.files({ 'data/secret.txt': 'inside\n' })
    const checked = resolveWorkspacePath(box.root, 'data/secret.txt')
    expect(checked.ok).toBe(true)
    await rename(path.join(box.root, 'data'), path.join(box.root, 'data-old'))
    await symlink(box.outside, path.join(box.root, 'data'))
    const outcome = await readFile(box.root, { path: 'data/secret.txt' })
    expect(outcome.ok).toBe(false)
    expect(outcome.output).not.toMatch(/outside secret/)
  })

  it('asks `authorize` about the paths as resolved at execution time', async () => {
    const box = await sandbox()
    await box.files({ '.env': 'KEY=1\n', 'notes.txt': 'hello\n' })
    await box.link('innocent.txt', '.env')
    const seen: unknown[] = []
    const authorize = (target: { normalised: string; resolved: string }) => {
      seen.push(target)
      return target.resolved === '.env'
        ? 'read of .env is denied by rule .env in layer builtin-secrets'
        : true
    }
    const denied = await readFile(box.root, { path: 'innocent.txt' }, { authorize })
    expect(denied).toMatchObject({
      ok: false,
      output: 'refused: read of .env is denied by rule .env in layer builtin-secrets',
    })
    expect(seen).toEqual([{ normalised: 'innocent.txt', resolved: '.env' }])
    expect((await readFile(box.root, { path: 'notes.txt' }, { authorize })).ok).toBe(true)
  })
})
