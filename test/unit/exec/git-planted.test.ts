/**
 * Git files written during a run that make git run a program — what a command could plant for the person's
 * own git outside the sandbox — are found in the workspace and its nested repositories; what was there
 * before the run, and configuration that runs nothing, are not.
 */
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { plantedGitFiles } from '../../../src/exec/index.js'

let ws: string

beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), 'tether-planted-'))
})

afterEach(() => {
  rmSync(ws, { recursive: true, force: true })
})

function write(path: string, text: string, mode = 0o644) {
  mkdirSync(join(ws, path, '..'), { recursive: true })
  writeFileSync(join(ws, path), text)
  chmodSync(join(ws, path), mode)
}

/** The run's start, past everything written so far by more than the clocks' slack (2 s). */
async function runStarts(): Promise<Date> {
  await new Promise((resolve) => setTimeout(resolve, 2_200))
  return new Date()
}

describe('plantedGitFiles', () => {
  it('finds a nested repository whose configuration names programs, with each key', () => {
    execFileSync('git', ['init', '-q', ws])
    const since = new Date()
    write(
      'sub/deeper/.git/config',
      [
        '[core]',
        '\trepositoryformatversion = 0',
        '\tfsmonitor = "touch /tmp/pwned; false"',
        '[diff "img"]',
        '\ttextconv = exiftool',
        '[alias]',
        '\tst = status',
        '\tpwn = !sh -c id',
        '[core] pager = less \\',
        '  -R',
        '[protocol "https"]',
        '\tallow = always',
        '[protocol "ext"]',
        '\tallow = always',
      ].join('\n'),
    )
    write('sub/deeper/.git/HEAD', 'ref: refs/heads/main\n')
    expect(plantedGitFiles(ws, since)).toEqual([
      { path: 'sub/deeper/.git/config', what: 'core.fsmonitor = "touch /tmp/pwned; false"' },
      { path: 'sub/deeper/.git/config', what: 'diff.img.textconv = exiftool' },
      { path: 'sub/deeper/.git/config', what: 'alias.pwn = !sh -c id' },
      { path: 'sub/deeper/.git/config', what: 'core.pager = less   -R' },
      { path: 'sub/deeper/.git/config', what: 'protocol.ext.allow = always' },
    ])
  })

  it('finds a bare repository (git run inside it takes it for one), not a folder that only has a HEAD', () => {
    const since = new Date()
    const bare = join(ws, 'vendor/evil.git')
    execFileSync('git', ['init', '-q', '--bare', bare])
    execFileSync('git', ['--git-dir', bare, 'config', 'core.pager', 'touch /tmp/pwned'])
    write('docs/HEAD', 'a file named HEAD\n')
    write('docs/config', '[core]\n\tpager = less\n')
    expect(plantedGitFiles(ws, since)).toEqual([
      { path: 'vendor/evil.git/config', what: 'core.pager = touch /tmp/pwned' },
    ])
  })

  it('finds hooks, a commondir, a .git file or link pointing elsewhere, and configuration it cannot read', () => {
    const since = new Date()
    write('a/.git/hooks/post-checkout', '#!/bin/sh\nid\n', 0o755)
    write('a/.git/hooks/pre-commit.sample', '#!/bin/sh\n', 0o755)
    write('a/.git/hooks/notes.txt', 'not executable\n')
    symlinkSync('/bin/true', join(ws, 'a/.git/hooks/pre-push'))
    mkdirSync(join(ws, 'g/.git'), { recursive: true })
    symlinkSync('/srv/hooks', join(ws, 'g/.git/hooks'))
    write('b/.git/commondir', '../../elsewhere\n')
    // A link is named, never read: what it leads to may be only the worker's to read.
    write('secret', 'SECRET\n')
    mkdirSync(join(ws, 'h/.git'), { recursive: true })
    symlinkSync(join(ws, 'secret'), join(ws, 'h/.git/commondir'))
    write('c/.git', 'gitdir: ../../elsewhere/.git\n')
    mkdirSync(join(ws, 'd'))
    symlinkSync('/srv/other/.git', join(ws, 'd/.git'))
    write('e/.git/config', '[core\n\tfsmonitor = x\n')
    write('f/.git/config', `[core]\n${'#'.repeat(300 * 1024)}\n`)
    const found = plantedGitFiles(ws, since)
    expect(found).toEqual(
      expect.arrayContaining([
        { path: 'a/.git/hooks/post-checkout', what: 'a hook git runs (post-checkout)' },
        { path: 'a/.git/hooks/pre-push', what: 'a hook git runs (pre-push), a link to /bin/true' },
        { path: 'g/.git/hooks', what: 'a link git follows to /srv/hooks, whose hooks it runs' },
        { path: 'b/.git/commondir', what: "points git at another folder's configuration: ../../elsewhere" },
        {
          path: 'h/.git/commondir',
          what: `a link git follows to ${join(ws, 'secret')}, which points it at another folder's configuration`,
        },
        { path: 'c/.git', what: 'points git at gitdir: ../../elsewhere/.git' },
        { path: 'd/.git', what: 'a link git follows to /srv/other/.git' },
        { path: 'e/.git/config', what: 'a section header tether cannot read: [core' },
        {
          path: 'f/.git/config',
          what: `${300 * 1024 + 8} bytes, more than tether reads (262144): check it yourself`,
        },
      ]),
    )
    expect(found).toHaveLength(9)
    expect(JSON.stringify(found)).not.toContain('SECRET')
  })

  it('passes over what was there before the run, and configuration that runs nothing', async () => {
    write('old/.git/config', '[core]\n\tfsmonitor = run-me\n')
    write('old/.git/hooks/pre-push', '#!/bin/sh\n', 0o755)
    const since = await runStarts()
    execFileSync('git', ['init', '-q', join(ws, 'fresh')])
    write(
      'plain/.git/config',
      '[core]\n\tfsmonitor = true\n\tbare = false\n[pager]\n\tlog = false\n[remote "origin"]\n\turl = x\n',
    )
    expect(plantedGitFiles(ws, since)).toEqual([])
  })

  it('says when its walk stopped short of the whole folder, and finds what lies within it', () => {
    const since = new Date()
    write('a/.git/config', '[core]\n\teditor = vim-with-plugins\n')
    // The walk reads the root, then a and b (in whichever order); b's folders are left.
    for (const name of ['c', 'd', 'e']) mkdirSync(join(ws, 'b', name), { recursive: true })
    expect(plantedGitFiles(ws, since, { folders: 3, entries: 1_000 })).toEqual([
      {
        path: '.',
        what: 'only 3 folders (1,000 entries) were looked in: repositories deeper in were not checked',
      },
      { path: 'a/.git/config', what: 'core.editor = vim-with-plugins' },
    ])
    expect(plantedGitFiles(ws, since)).toEqual([
      { path: 'a/.git/config', what: 'core.editor = vim-with-plugins' },
    ])
  })

  it("checks the workspace's own repository too", () => {
    execFileSync('git', ['init', '-q', ws])
    const since = new Date()
    execFileSync('git', ['-C', ws, 'config', 'core.sshCommand', 'ssh -o ProxyCommand=evil'])
    expect(plantedGitFiles(ws, since)).toEqual([
      { path: '.git/config', what: 'core.sshCommand = ssh -o ProxyCommand=evil' },
    ])
  })
})
