/**
 * Workspace changes for an approver: status and diff of a git workspace, and never a program the run
 * could have planted in the repository's config.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { unsafeSetting, workspaceChanges } from '../../../src/inbox/changes.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-changes-'))
})
afterAll(() => rm(dir, { recursive: true, force: true }))

async function repo(name: string): Promise<{ path: string; git: (...args: string[]) => void }> {
  const path = join(dir, name)
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@x',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@x',
  }
  const git = (...args: string[]) => {
    execFileSync('git', args, { cwd: path, env, stdio: 'ignore' })
  }
  execFileSync('mkdir', ['-p', path])
  git('init', '-q')
  await writeFile(join(path, 'a.txt'), 'one\n')
  git('add', '-A')
  git('commit', '-qm', 'first')
  return { path, git }
}

describe('workspace changes', () => {
  it('shows the status and the diff against HEAD of a git workspace', async () => {
    const { path } = await repo('plain')
    await writeFile(join(path, 'a.txt'), 'two\n')
    await writeFile(join(path, 'new.txt'), 'x\n')
    const changes = await workspaceChanges(path)
    expect(changes).toMatchObject({ kind: 'git', elided: 0 })
    expect(changes.kind === 'git' && changes.status).toBe(' M a.txt\n?? new.txt\n')
    expect(changes.kind === 'git' && changes.diff).toMatch(/-one\n\+two\n/)
  })

  it.runIf(process.getuid?.() === 0)(
    "shows the changes of a workspace that its commands' identity owns, as a root worker's does",
    async () => {
      const { path } = await repo('taken-over')
      await writeFile(join(path, 'a.txt'), 'two\n')
      execFileSync('chown', ['-R', '1879048199:1879048199', path])
      const changes = await workspaceChanges(path)
      expect(changes).toMatchObject({ kind: 'git' })
      expect(changes.kind === 'git' && changes.status).toBe(' M a.txt\n')
    },
  )

  it('shows no diff when the repository config could make git run a program, and runs none', async () => {
    const planted = join(dir, 'planted')
    for (const [name, setting] of [
      ['filter', ['filter.evil.clean', `touch ${planted}-filter`]],
      ['fsmonitor', ['core.fsmonitor', `touch ${planted}-fsmonitor`]],
      ['textconv', ['diff.evil.textconv', `touch ${planted}-textconv`]],
      ['include', ['include.path', '/tmp/elsewhere']],
    ] as const) {
      const { path, git } = await repo(name)
      git('config', ...setting)
      await writeFile(join(path, '.gitattributes'), '* filter=evil diff=evil\n')
      await writeFile(join(path, 'a.txt'), 'changed\n')
      const changes = await workspaceChanges(path)
      expect(changes, name).toMatchObject({
        kind: 'unavailable',
        why: `the repository's own config sets ${setting[0].toLowerCase()}, which can make git run a program; the diff is not shown (read it with git yourself)`,
      })
    }
    for (const kind of ['filter', 'fsmonitor', 'textconv'])
      expect(existsSync(`${planted}-${kind}`)).toBe(false)
  })

  it('runs nothing a submodule’s own config names', async () => {
    const { path, git } = await repo('with-submodule')
    const sub = await repo('with-submodule/sub')
    git('add', 'sub')
    git('commit', '-qm', 'sub')
    const planted = join(dir, 'planted-submodule-filter')
    sub.git('config', 'filter.evil.clean', `touch ${planted}; cat`)
    await writeFile(join(sub.path, '.git', 'info', 'attributes'), '* filter=evil\n')
    // Same size, newer time: git must read the file (through the filter) to know whether it changed.
    const later = new Date(Date.now() + 5_000)
    await utimes(join(sub.path, 'a.txt'), later, later)
    expect(await workspaceChanges(path)).toMatchObject({ kind: 'git' })
    expect(existsSync(planted)).toBe(false)
  })

  it('says why when there is nothing to show', async () => {
    expect(await workspaceChanges(join(dir, 'nowhere'))).toMatchObject({
      kind: 'unavailable',
      why: expect.stringMatching(/is not on this machine$/),
    })
    const plain = join(dir, 'not-git')
    execFileSync('mkdir', ['-p', plain])
    expect(await workspaceChanges(plain)).toMatchObject({
      kind: 'unavailable',
      why: expect.stringMatching(/not a git repository/),
    })
  })

  it('reads the scope of each setting from git config --null output', () => {
    expect(unsafeSetting('system\0core.pager\nless\0local\0core.bare\nfalse\0')).toBeUndefined()
    expect(unsafeSetting('local\0core.bare\nfalse\0worktree\0core.sshCommand\nx\0')).toBe('core.sshcommand')
    expect(unsafeSetting('local\0remote.origin.url\nhttps://x\0local\0user.name\nme\0')).toBeUndefined()
  })
})
