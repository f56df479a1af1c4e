import { mkdir, rename, rm, symlink } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { normaliseWorkspacePath, resolveWorkspacePath } from '../../../src/workspace/index.js'
import { sandbox } from './fixture.js'

describe('normaliseWorkspacePath', () => {
  it.each([
    ['src/index.ts', 'src/index.ts'],
    ['./src//lib/./a.ts', 'src/lib/a.ts'],
    ['src/../README.md', 'README.md'],
    ['src/', 'src'],
    ['.', '.'],
    ['a/b/../..', '.'],
  ])('%j becomes %j', (input, expected) => {
    expect(normaliseWorkspacePath(input)).toEqual({ ok: true, normalised: expected })
  })

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['/etc/passwd', /absolute/],
    ['../x', /leaves the workspace/],
    ['src/../../etc/passwd', /leaves the workspace/],
    ['a\0b', /NUL/],
    ['a\nb', /control character/],
    ['C:/Windows', /Windows/],
    ['src\\index.ts', /backslash/],
    ['~/notes', /not expanded/],
  ])('refuses %j', (input, reason) => {
    const result = normaliseWorkspacePath(input)
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(reason)
  })
})

describe('resolveWorkspacePath', () => {
  it('resolves an existing file, a new file and the root to themselves', async () => {
    const box = await sandbox()
    await box.files({ 'src/a.ts': 'x' })
    expect(resolveWorkspacePath(box.root, 'src/a.ts')).toEqual({
      ok: true,
      normalised: 'src/a.ts',
      resolved: 'src/a.ts',
      absolute: path.join(box.root, 'src/a.ts'),
    })
    expect(resolveWorkspacePath(box.root, 'src/new/deep/b.ts')).toMatchObject({
      ok: true,
      resolved: 'src/new/deep/b.ts',
    })
    expect(resolveWorkspacePath(box.root, '.')).toMatchObject({ ok: true, normalised: '.', resolved: '.' })
  })

  it('reports where a symlink inside the workspace really leads, so the policy judges both paths', async () => {
    const box = await sandbox()
    await box.files({ '.env': 'KEY=1', 'docs/readme.md': 'hi' })
    await box.link('src/link-to-env', '../.env')
    await box.link('alias', 'docs')
    expect(resolveWorkspacePath(box.root, 'src/link-to-env')).toMatchObject({
      ok: true,
      normalised: 'src/link-to-env',
      resolved: '.env',
    })
    expect(resolveWorkspacePath(box.root, 'alias/readme.md')).toMatchObject({
      ok: true,
      resolved: 'docs/readme.md',
    })
    expect(resolveWorkspacePath(box.root, 'alias/new.md')).toMatchObject({
      ok: true,
      resolved: 'docs/new.md',
    })
  })

  it('refuses a symlinked file that points outside the workspace', async () => {
    const box = await sandbox()
    await box.link('leak.txt', path.join(box.outside, 'secret.txt'))
    const result = resolveWorkspacePath(box.root, 'leak.txt')
    expect(result).toMatchObject({ ok: false })
    if (!result.ok) expect(result.reason).toMatch(/"leak.txt" is a symlink that points outside the workspace/)
  })

  it('refuses a file under a symlinked parent directory that points outside', async () => {
    const box = await sandbox()
    await box.link('vendor', box.outside)
    expect(resolveWorkspacePath(box.root, 'vendor/secret.txt').ok).toBe(false)
  })

  it('refuses a NEW file whose parent directory is a symlink pointing outside', async () => {
    const box = await sandbox()
    await box.link('out', box.outside)
    const result = resolveWorkspacePath(box.root, 'out/created-by-agent.txt')
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(/"out" is a symlink/)
    const deeper = resolveWorkspacePath(box.root, 'out/a/b/c.txt')
    expect(deeper.ok).toBe(false)
  })

  it('refuses a dangling symlink whose target would be created outside', async () => {
    const box = await sandbox()
    await box.link('pending.txt', path.join(box.outside, 'not-yet.txt'))
    expect(resolveWorkspacePath(box.root, 'pending.txt').ok).toBe(false)
  })

  it('refuses relative symlinks that climb out, also through a chain of links', async () => {
    const box = await sandbox()
    await box.link('a/up', '../../outside')
    await box.link('b', 'a/up')
    expect(resolveWorkspacePath(box.root, 'a/up/secret.txt').ok).toBe(false)
    expect(resolveWorkspacePath(box.root, 'b/secret.txt').ok).toBe(false)
  })

  it('accepts an absolute symlink that points back inside the workspace', async () => {
    const box = await sandbox()
    await box.files({ 'real/file.txt': 'x' })
    await box.link('abs', path.join(box.root, 'real'))
    expect(resolveWorkspacePath(box.root, 'abs/file.txt')).toMatchObject({
      ok: true,
      resolved: 'real/file.txt',
    })
  })

  it('refuses a symlink loop with a clear reason', async () => {
    const box = await sandbox()
    await box.link('loop1', 'loop2')
    await box.link('loop2', 'loop1')
    const result = resolveWorkspacePath(box.root, 'loop1/x')
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(/too many symlinks/)
  })

  it('works when the workspace root itself is reached through a symlink', async () => {
    const box = await sandbox()
    await box.files({ 'a.txt': 'x' })
    const alias = path.join(box.outside, 'alias-of-root')
    await symlink(box.root, alias)
    expect(resolveWorkspacePath(alias, 'a.txt')).toMatchObject({ ok: true, resolved: 'a.txt' })
  })

  it('sees a directory swapped for a symlink after an earlier check', async () => {
    const box = await sandbox()
    await box.files({ 'data/file.txt': 'inside' })
    expect(resolveWorkspacePath(box.root, 'data/file.txt').ok).toBe(true)
    await rename(path.join(box.root, 'data'), path.join(box.root, 'data-old'))
    await symlink(box.outside, path.join(box.root, 'data'))
    expect(resolveWorkspacePath(box.root, 'data/file.txt').ok).toBe(false)
  })

  it('names a missing workspace root', async () => {
    const box = await sandbox()
    await rm(box.root, { recursive: true })
    const result = resolveWorkspacePath(box.root, 'a.txt')
    expect(result.ok).toBe(false)
    if (!result.ok) expect(result.reason).toMatch(/workspace root .* cannot be opened \(ENOENT\)/)
    await mkdir(box.root)
  })
})
