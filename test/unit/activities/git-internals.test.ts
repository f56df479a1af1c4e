/**
 * The file tools never write inside a repository's own folder: its configuration and hooks are what make
 * git run programs, and a later read-only `git status` would run them.
 */
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { judge } from '../../../src/judge/index.js'
import { Policy } from '../../../src/policy/index.js'
import { workspaceView } from '../../../src/workspace/index.js'

let ws: string
beforeAll(async () => {
  ws = await mkdtemp(join(tmpdir(), 'tether-git-internals-'))
  await mkdir(join(ws, '.git'))
  await symlink('.git', join(ws, 'gitlink'))
})
afterAll(() => rm(ws, { recursive: true, force: true }))

describe('writing git’s own files with the file tools', () => {
  // Every write allowed, so only the builtin refusal can say no.
  const policy = Policy.tiered().layer('dev').allowWrite('*')
  const write = (path: string) =>
    judge(policy, workspaceView(ws), { id: 'c', name: 'write_file', args: { path, content: '[core]\n' } }, [])
  const edit = (path: string) =>
    judge(
      policy,
      workspaceView(ws),
      { id: 'c', name: 'edit_file', args: { path, search: 'a', replace: 'b' } },
      [],
    )

  it.each([
    '.git/config',
    '.git/hooks/pre-commit',
    '.git/info/attributes',
    '.git/commondir',
    'src/evil/.git/config',
    'src/evil/.git',
    'src/evil/.GIT/config',
    'gitlink/config',
  ])('refuses %s', (path) => {
    for (const verdict of [write(path), edit(path)]) {
      expect(verdict).toMatchObject({ effect: 'deny', rule: 'git internals', layer: 'builtin' })
      expect(verdict.reason).toMatch(/\.git/)
      expect(verdict.reason).not.toContain('\n')
    }
  })

  it('still writes the files git reads from the work tree, and reads git’s own', () => {
    for (const path of ['.gitignore', '.gitattributes', '.github/workflows/ci.yml', 'src/git/config.ts']) {
      expect(write(path).effect, path).toBe('allow')
    }
    expect(
      judge(policy, workspaceView(ws), { id: 'c', name: 'read_file', args: { path: '.git/config' } }, [])
        .effect,
    ).toBe('allow')
  })
})
