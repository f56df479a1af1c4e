/**
 * Read-only git is read-only only when git itself would read it so: `git config`'s action comes from the
 * options before its first operand, and git acting on another repository than the workspace's own (which
 * runs what that repository's configuration names) is judged like any other command.
 */
import { describe, expect, it } from 'vitest'
import { Policy } from '../../../src/policy/index.js'

const readOnly = Policy.tiered().withReadOnlyCommands()
const effect = (argv: string[], workspace?: string) =>
  readOnly.checkExec(argv, workspace === undefined ? undefined : { workspace }).effect

describe('git config', () => {
  it.each(
    [
      // git takes options only before the first operand: each of these sets (or adds) the key.
      ['git', 'config', 'core.fsmonitor', 'touch /tmp/pwned', '--get'],
      ['git', 'config', 'core.fsmonitor', 'touch /tmp/pwned', '--get-all'],
      ['git', 'config', 'core.pager', 'less', '--list'],
      ['git', 'config', 'user.name', '--get'],
      ['git', 'config', '--file', '.git/config', 'core.fsmonitor', 'x'],
      ['git', 'config', 'set', 'core.fsmonitor', 'x'],
      ['git', 'config', '--add', 'core.fsmonitor', 'x'],
      ['git', 'config', '--replace-all', 'core.fsmonitor', 'x'],
      ['git', 'config', '--unset', 'core.fsmonitor'],
      ['git', 'config', '--rename-section', 'core', 'x'],
      ['git', 'config', '--remove-section', 'core'],
      ['git', 'config', '--list', '--add', 'a.b', 'c'],
      ['git', 'config', '--get', '--edit'],
      ['git', 'config', 'get', '--add', 'core.fsmonitor', 'x'],
      ['git', 'config', 'list', '--edit'],
      // git 2.46 drops a leading `--` before reading the old-style options again: this adds.
      ['git', 'config', '--', '--add', 'core.fsmonitor', 'x'],
      // Spellings git would take that tether does not guess at: a cluster, an abbreviation, a value on a flag.
      ['git', 'config', '-le'],
      ['git', 'config', '--get-r', 'x'],
      ['git', 'config', '--get=core.fsmonitor'],
    ].map((argv) => [argv.join(' '), argv] as const),
  )('%s may set, unset, edit or rename: not read-only', (_, argv) => {
    expect(effect(argv)).not.toBe('allow')
  })

  it.each(
    [
      ['git', 'config', '--get', 'core.fsmonitor'],
      ['git', 'config', '--get-all', 'remote.origin.url'],
      ['git', 'config', '--get-regexp', '^user\\.'],
      ['git', 'config', '--list', '--show-origin'],
      ['git', 'config', '-l', '-z'],
      ['git', 'config', '--local', '--type=bool', '--get', 'core.bare'],
      ['git', 'config', 'get', 'user.name'],
      ['git', 'config', 'get', '--all', '--show-origin', 'remote.origin.fetch'],
      ['git', 'config', 'list', '--show-scope', '--name-only'],
      // After the operand, `--unset` is the value pattern `--get` matches, as git reads it.
      ['git', 'config', '--get', 'user.name', '--unset'],
    ].map((argv) => [argv.join(' '), argv] as const),
  )('%s only reads: read-only', (_, argv) => {
    expect(effect(argv)).toBe('allow')
  })

  it('judges the value a write installs, read the way git reads it', () => {
    const denying = Policy.tiered().layer('ops').denyExec('rm*').layer('dev').allowExec('git config*')
    expect(denying.checkExec(['git', 'config', 'core.pager', 'rm -rf /', '--get']).effect).toBe('deny')
    expect(denying.checkExec(['git', 'config', '--add', 'core.fsmonitor', 'rm -rf /']).effect).toBe('deny')
    expect(denying.checkExec(['git', 'config', 'set', 'diff.x.textconv', 'rm -rf /']).effect).toBe('deny')
  })
})

describe('git in another repository than the workspace’s own', () => {
  it.each(
    [
      ['git', '-C', 'src/evil', 'status'],
      ['git', '-C', 'src/evil', 'log', '-p'],
      ['git', '-C', '.', '-C', 'src/evil', 'diff', 'A', 'B'],
      ['git', '-C', '/work/other', 'show'],
      ['git', '--git-dir=src/evil', 'log'],
      ['git', '--git-dir', 'src/evil', 'log'],
      ['git', '--work-tree=src/evil', 'status'],
      ['git', '--bare', 'log', '-p'],
      ['git', '--namespace=x', 'log'],
      ['sh', '-c', 'GIT_DIR=src/evil git log'],
      ['sh', '-c', 'export GIT_WORK_TREE=src/evil; git status'],
      ['env', 'GIT_DIR=x', 'git', 'status'],
      ['env', '-C', 'src/evil', 'git', 'status'],
      ['env', '--chdir=src/evil', 'git', 'log', '-p'],
      ['sh', '-c', 'cd src/evil && git status'],
      ['sh', '-c', 'cd src/evil; git -C . status'],
      ['sh', '-c', '(cd src/evil && git show)'],
      ['sh', '-c', 'pushd src/evil && git diff A B'],
      ['sh', '-c', 'builtin cd src/evil && git log -p'],
      ['sh', '-c', 'eval "cd src/evil"; git status'],
      ['sh', '-c', 'cd src/evil && sh -c "git status"'],
      // A loop runs git again after the cd.
      ['sh', '-c', 'for d in src/evil x; do git log -p; cd "$d"; done'],
    ].map((argv) => [argv.join(' '), argv] as const),
  )('%s is not read-only', (_, argv) => {
    expect(effect(argv, '/work/ws')).toBe('ask')
  })

  it('stays read-only where it is provably the workspace’s own repository', () => {
    expect(effect(['git', 'status'])).toBe('allow')
    expect(effect(['git', '-C', '.', 'status'])).toBe('allow')
    expect(effect(['git', '--no-pager', '-C', '.', 'log', '-p'])).toBe('allow')
    expect(effect(['sh', '-c', 'git status && git log -p'])).toBe('allow')
    // The workspace root by name counts only when the caller says which it is.
    expect(effect(['git', '-C', '/work/ws', 'status'], '/work/ws')).toBe('allow')
    expect(effect(['git', '-C', '/work/ws/', 'status'], '/work/ws')).toBe('allow')
    expect(effect(['git', '-C', '/work/ws', 'status'])).toBe('ask')
    expect(effect(['git', '-C', '/work/ws/src', 'status'], '/work/ws')).toBe('ask')
    // Other commands after a cd are not affected.
    expect(effect(['sh', '-c', 'cd src && ls'])).toBe('allow')
  })

  it('is judged by rules like any other command', () => {
    const rules = Policy.tiered()
      .withReadOnlyCommands()
      .layer('dev')
      .allowExec('git status*')
      .allowExec('git -C *')
    expect(rules.checkExec(['sh', '-c', 'cd src/evil && git status']).effect).toBe('allow')
    expect(rules.checkExec(['git', '-C', 'src/evil', 'log']).effect).toBe('allow')
    const denying = Policy.tiered().withReadOnlyCommands().layer('ops').denyExec('git log*')
    expect(denying.checkExec(['sh', '-c', 'cd src/evil && git log -p']).effect).toBe('deny')
  })
})
