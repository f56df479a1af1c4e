/**
 * Git inside the sandbox, for real (git and bwrap): what a command writes can never become a program git
 * runs later — neither the workspace's own configuration nor a repository made of plain files — while
 * `git add` and `git commit` keep working. Every payload creates a marker file when it runs; each chain is
 * first shown to run its payload without the sandbox, so the fixture is known to work.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runCommand, sandboxEnvironment } from '../../../src/exec/index.js'
import { removeSandboxedFolder } from '../../support/folders.js'

let ws: string
beforeEach(async () => {
  ws = await mkdtemp(join(tmpdir(), 'tether-sandbox-git-'))
  git(ws, 'init', '-q', '-b', 'main')
  // The project's own settings, as a real checkout has them (the sandbox's home is empty).
  git(ws, 'config', 'user.name', 'Project')
  git(ws, 'config', 'user.email', 'project@example.com')
  await writeFile(join(ws, 'a.txt'), 'one\n')
  git(ws, 'add', 'a.txt')
  git(ws, 'commit', '-q', '-m', 'one')
  await writeFile(join(ws, 'a.txt'), 'one\ntwo\n')
  git(ws, 'commit', '-q', '-am', 'two')
})
afterEach(() => removeSandboxedFolder(ws))

/** git on the host, unsandboxed and with none of tether's pins: what a payload does without the sandbox. */
function git(cwd: string, ...args: string[]): string {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: cwd,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'Test',
    GIT_AUTHOR_EMAIL: 'test@example.com',
    GIT_COMMITTER_NAME: 'Test',
    GIT_COMMITTER_EMAIL: 'test@example.com',
  }
  // A root worker's commands own the workspace after their first run, which git as root would refuse.
  const trusted = ['-c', 'safe.directory=*']
  return execFileSync('git', [...trusted, ...args], {
    cwd,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  })
}

function hostGit(cwd: string, ...args: string[]): void {
  try {
    git(cwd, ...args)
  } catch {
    // Whether git itself succeeds does not matter here; whether the payload ran does.
  }
}

function sandboxed(argv: string[], cwd = ws) {
  return runCommand({
    argv,
    cwd,
    timeoutMs: 60_000,
    env: sandboxEnvironment(process.env).env,
    sandbox: { workspace: ws },
  })
}

/** A shell command that leaves `name` in the workspace when it runs. */
const payload = (name: string) => `touch ${join(ws, name)}`

describe("the workspace's own repository", () => {
  it('refuses a command that writes .git/config, so the next git status runs nothing', async () => {
    // Without the sandbox, one allowed-looking command arms the next read-only one.
    git(ws, 'config', 'core.fsmonitor', `${payload('control')}; false`)
    hostGit(ws, 'status')
    expect(existsSync(join(ws, 'control'))).toBe(true)
    git(ws, 'config', '--unset', 'core.fsmonitor')
    const before = await readFile(join(ws, '.git', 'config'), 'utf8')

    // Spelled as the read-only list once took it: options after the first operand are operands.
    for (const argv of [
      ['git', 'config', 'core.fsmonitor', `${payload('pwned')}; false`, '--get'],
      ['git', 'config', 'diff.external', payload('pwned')],
      ['sh', '-c', `printf '[core]\\n\\tfsmonitor = ${payload('pwned')}\\n' >> .git/config`],
      ['sh', '-c', 'cp .git/config c && mv c .git/config'],
      ['sh', '-c', 'rm -f .git/config'],
    ]) {
      const result = await sandboxed(argv)
      expect(result.exitCode, argv.join(' ')).not.toBe(0)
      expect(result.stderr.text, argv.join(' ')).toMatch(
        /Read-only file system|Device or resource busy|could not/,
      )
    }
    expect(await readFile(join(ws, '.git', 'config'), 'utf8')).toBe(before)

    await writeFile(join(ws, 'a.txt'), 'changed\n')
    for (const argv of [
      ['git', 'status'],
      ['git', 'diff'],
      ['git', 'log', '-p'],
    ]) {
      expect((await sandboxed(argv)).exitCode, argv.join(' ')).toBe(0)
    }
    expect(existsSync(join(ws, 'pwned'))).toBe(false)
  })

  it('keeps hooks, info and the git folder itself out of reach', async () => {
    for (const script of [
      `printf '#!/bin/sh\\n${payload('pwned')}\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`,
      `echo '* diff=evil' > .git/info/attributes`,
      'mv .git .git-moved',
      'rm -rf .git/hooks',
    ]) {
      const result = await sandboxed(['sh', '-c', script])
      expect(result.exitCode, script).not.toBe(0)
    }
    expect(existsSync(join(ws, '.git', 'HEAD'))).toBe(true)
    expect(existsSync(join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false)
  })

  it('stops git at a planted commondir instead of reading the configuration it points to', async () => {
    // A copy of the repository whose configuration runs a textconv on every file.
    const planted = `cp -r .git evil && printf '[diff "evil"]\\n\\ttextconv = "${payload('pwned')}; cat"\\n' >> evil/config && echo '* diff=evil' > evil/info/attributes && echo ../evil > .git/commondir`
    expect((await sandboxed(['sh', '-c', planted])).exitCode).toBe(0)
    const control = join(ws, 'pwned')
    hostGit(ws, 'log', '-p', '-1')
    expect(existsSync(control)).toBe(true)
    await rm(control)

    const result = await sandboxed(['git', 'log', '-p', '-1'])
    expect(result.exitCode).not.toBe(0)
    expect(result.stderr.text).toMatch(/commondir/)
    expect(existsSync(control)).toBe(false)
  })

  it('protects nested repositories and submodules the same way', async () => {
    const nested = join(ws, 'vendor', 'nested')
    await mkdir(nested, { recursive: true })
    git(nested, 'init', '-q')
    git(nested, 'commit', '-q', '--allow-empty', '-m', 'nested')
    git(ws, '-c', 'protocol.file.allow=always', 'submodule', '-q', 'add', './vendor/nested', 'sub')
    for (const repository of ['vendor/nested', 'sub']) {
      const result = await sandboxed(['git', '-C', repository, 'config', 'core.fsmonitor', payload('pwned')])
      expect(result.exitCode, repository).not.toBe(0)
      expect(result.stderr.text, repository).toMatch(/could not write config file/)
    }
    for (const config of ['.git/modules/sub/config', 'vendor/nested/.git/config']) {
      expect(await readFile(join(ws, config), 'utf8'), config).not.toContain('fsmonitor')
    }
  })

  // Another user's private folder: the worker (root) can list it, bwrap in its namespace cannot enter it.
  it.skipIf(process.getuid?.() !== 0)(
    'runs beside a repository in a folder the sandbox cannot enter',
    async () => {
      const hidden = join(ws, 'theirs')
      await mkdir(join(hidden, 'repo', '.git'), { recursive: true })
      await chown(hidden, 54321, 54321)
      await chmod(hidden, 0o700)
      const result = await sandboxed(['git', 'log', '-1', '--format=%s'])
      expect(result.stderr.text).toBe('')
      expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
      expect(result.stdout.text).toBe('two\n')
    },
  )

  it('still runs git add and git commit', async () => {
    await writeFile(join(ws, 'b.txt'), 'new file\n')
    const result = await sandboxed([
      'sh',
      '-c',
      'git add b.txt && git commit -q -m "from the sandbox" && git log -1 --format=%s',
    ])
    expect(result.stderr.text).toBe('')
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.stdout.text).toBe('from the sandbox\n')
    expect(git(ws, 'log', '-1', '--format=%s')).toBe('from the sandbox\n')
  })
})

describe('a repository made of plain files', () => {
  /** What write_file could write: text files only, HEAD naming a commit the workspace's objects hold. */
  async function plantBareRepository(): Promise<void> {
    const evil = join(ws, 'src', 'evil')
    const head = git(ws, 'rev-parse', 'HEAD')
    const files: Record<string, string> = {
      HEAD: head,
      'refs/heads/main': head,
      'objects/info/alternates': `${join(ws, '.git', 'objects')}\n`,
      config: [
        '[core]',
        '\trepositoryformatversion = 0',
        '\tbare = true',
        `\tfsmonitor = "${payload('pwned-fsmonitor')}; false"`,
        '[diff]',
        `\texternal = ${payload('pwned-external')}`,
        '[diff "evil"]',
        `\ttextconv = "${payload('pwned-textconv')}; cat"`,
        '',
      ].join('\n'),
      'info/attributes': '* diff=evil\n',
    }
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(evil, path, '..'), { recursive: true })
      await writeFile(join(evil, path), text)
    }
  }

  const markers = () =>
    ['pwned-fsmonitor', 'pwned-external', 'pwned-textconv'].filter((m) => existsSync(join(ws, m)))

  it('is never taken for a repository: git there, or after cd there, runs nothing', async () => {
    await plantBareRepository()
    // Without the sandbox, git takes the folder for a bare repository and runs its programs.
    hostGit(join(ws, 'src', 'evil'), 'log', '-p', '-1')
    hostGit(join(ws, 'src', 'evil'), 'diff', 'HEAD~1', 'HEAD')
    expect(markers()).toEqual(['pwned-external', 'pwned-textconv'])
    for (const marker of markers()) await rm(join(ws, marker))

    const evil = join(ws, 'src', 'evil')
    for (const argv of [
      ['git', '-C', 'src/evil', 'status'],
      ['git', '-C', 'src/evil', 'log', '-p'],
      ['git', '-C', 'src/evil', 'show'],
      ['git', '-C', 'src/evil', 'diff', 'HEAD~1', 'HEAD'],
      ['sh', '-c', 'cd src/evil && git status'],
      ['sh', '-c', 'cd src/evil && git log -p'],
    ]) {
      // git refuses the folder (`git diff` then compares files instead, with no repository's settings).
      const result = await sandboxed(argv)
      expect(result.exitCode, argv.join(' ')).not.toBe(0)
      expect(markers(), argv.join(' ')).toEqual([])
    }
    const inside = await sandboxed(['git', 'log', '-p'], evil)
    expect(inside.stderr.text).toMatch(/cannot use bare repository/)
    expect(markers()).toEqual([])
  })
})
