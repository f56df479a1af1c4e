/**
 * Options that change what an allowed program does, exact allow rules, and deny rules that see options
 * normalised: one block per class, with the clustered and abbreviated spellings programs accept.
 */
import { describe, expect, it } from 'vitest'
import { Policy } from '../../../src/policy/index.js'

/** An allow rule for the plain command, and deny rules for what options might launch. */
function allowing(pattern: string): Policy {
  return Policy.tiered()
    .layer('ops')
    .denyExec('rm*')
    .denyExec('curl*')
    .layer('dev')
    .allowExec(pattern)
    .allowWrite('*')
}

describe('an allow rule does not cover an option that changes what the program does', () => {
  // [allow rule, the plain command it allows, the same command with such an option]
  const cases: Array<[string, string[], string[]]> = [
    ['find*', ['find', '.', '-name', '*.o'], ['find', '.', '-name', '*.o', '-delete']],
    ['find*', ['find', '.'], ['find', '.', '-fprint', 'list.txt']],
    ['find*', ['find', '.'], ['find', '.', '-fprint0', 'list.txt']],
    ['find*', ['find', '.'], ['find', '.', '-fprintf', 'list.txt', '%p']],
    ['find*', ['find', '.'], ['find', '.', '-fls', 'list.txt']],
    ['find*', ['find', '.'], ['find', '.', '-exec', 'ls', '{}', ';']],
    ['git log*', ['git', 'log'], ['git', 'log', '--output=log.txt']],
    ['git log*', ['git', 'log'], ['git', 'log', '--output', 'log.txt']],
    ['git log*', ['git', 'log'], ['git', 'log', '--outp=log.txt']],
    ['git log*', ['git', 'log'], ['git', 'log', '-p', '--ext-diff']],
    ['git log*', ['git', 'log'], ['git', 'log', '--textconv']],
    ['git*', ['git', 'log'], ['git', '-c', 'core.pager=less', 'log']],
    ['git*', ['git', 'log'], ['git', '--config-env=core.pager=PAGER', 'log']],
    ['git*', ['git', 'log'], ['git', '--git-dir=/elsewhere/.git', 'log']],
    ['git*', ['git', 'log'], ['git', '--work-tree=/', 'status']],
    ['git*', ['git', 'log'], ['git', '--exec-path=/tmp/x', 'log']],
    ['git*', ['git', 'log'], ['git', '-p', 'log']],
    ['git*', ['git', 'log'], ['git', 'fetch', '--upload-pack=x', 'origin']],
    ['git*', ['git', 'log'], ['git', 'push', '--receive-pack=x', 'origin']],
    ['git grep*', ['git', 'grep', 'x'], ['git', 'grep', '-O', 'x']],
    ['git grep*', ['git', 'grep', 'x'], ['git', 'grep', '-Ovim', 'x']],
    ['git grep*', ['git', 'grep', 'x'], ['git', 'grep', '-iO', 'x']],
    ['git grep*', ['git', 'grep', 'x'], ['git', 'grep', '-niOvim', 'x']],
    ['git grep*', ['git', 'grep', 'x'], ['git', 'grep', '--open-files-in-pager=vim', 'x']],
    ['git grep*', ['git', 'grep', 'x'], ['git', 'grep', '--open', 'x']],
    ['git config*', ['git', 'config', '--get', 'user.name'], ['git', 'config', 'user.name', 'x']],
    [
      'git config*',
      ['git', 'config', '--get', 'user.name'],
      ['git', 'config', '--get', 'a.b', '--add', 'c', 'd'],
    ],
    ['git config*', ['git', 'config', '--list'], ['git', 'config', '--list', '--edit']],
    ['git config*', ['git', 'config', '--list'], ['git', 'config', '--get', 'x', '--unset', 'y']],
    ['go test*', ['go', 'test', './...'], ['go', 'test', '-exec', 'xprog', './...']],
    ['go test*', ['go', 'test', './...'], ['go', 'test', '-toolexec=xprog', './...']],
    ['go test*', ['go', 'test', './...'], ['go', 'test', './...', '--exec=xprog']],
    ['go*', ['go', 'vet', './...'], ['go', 'run', '.']],
    ['make test*', ['make', 'test'], ['make', 'test', '-f', 'other.mk']],
    ['make test*', ['make', 'test'], ['make', 'test', '--file=other.mk']],
    ['make test*', ['make', 'test'], ['make', 'test', '--eval=x:']],
    ['make test*', ['make', 'test'], ['make', 'test', '-e']],
    ['make test*', ['make', 'test'], ['make', 'test', '-C', '/elsewhere']],
    ['make test*', ['make', 'test'], ['make', 'test', 'SHELL=/tmp/sh']],
    ['pytest*', ['pytest', '-x'], ['pytest', '-x', '-p', 'evil_plugin']],
    ['pytest*', ['pytest', '-x'], ['pytest', '-x', '--basetemp=/home']],
    ['pytest*', ['pytest', '-x'], ['pytest', '-x', '-c', '/tmp/pytest.ini']],
    ['pytest*', ['pytest', '-x'], ['pytest', '-x', '--rootdir=/']],
    ['pytest*', ['pytest', '-x'], ['pytest', '-x', '--confcutdir=/']],
    ['cargo test*', ['cargo', 'test'], ['cargo', 'test', '--config', 'build.rustc-wrapper="x"']],
    ['cargo test*', ['cargo', 'test'], ['cargo', 'test', '-Zunstable-options']],
    ['npm test*', ['npm', 'test'], ['npm', 'test', '--script-shell=/tmp/sh']],
    ['npm test*', ['npm', 'test'], ['npm', 'test', '--prefix', '/elsewhere']],
    ['npm test*', ['npm', 'test'], ['npm', 'test', '--registry=https://x.test']],
    ['npm test*', ['npm', 'test'], ['npm', 'test', '--scr=/tmp/sh']],
    ['npm*', ['npm', 'test'], ['npm', 'view', 'react']],
    ['npm*', ['npm', 'test'], ['npm', 'outdated']],
    ['npm*', ['npm', 'test'], ['npm', 'exec', 'x']],
    ['sort*', ['sort', 'a.txt'], ['sort', '-o', 'out.txt', 'a.txt']],
    ['sort*', ['sort', 'a.txt'], ['sort', '-ro', 'out.txt', 'a.txt']],
    ['sort*', ['sort', 'a.txt'], ['sort', '--out=out.txt', 'a.txt']],
    ['tar*', ['tar', '-czf', 'a.tgz', 'dist'], ['tar', '--to-command=cat', '-xf', 'a.tgz']],
    [
      'tar*',
      ['tar', '-czf', 'a.tgz', 'dist'],
      ['tar', '--use-compress-program=gzip', '-cf', 'a.tgz', 'dist'],
    ],
    ['tar*', ['tar', '-czf', 'a.tgz', 'dist'], ['tar', '--use-comp=gzip', '-cf', 'a.tgz', 'dist']],
    [
      'tar*',
      ['tar', '-czf', 'a.tgz', 'dist'],
      ['tar', '--checkpoint-action=exec=ls', '-cf', 'a.tgz', 'dist'],
    ],
    ['rsync*', ['rsync', '-a', 'a/', 'b/'], ['rsync', '-e', 'ssh', '-a', 'a/', 'b/']],
    ['rsync*', ['rsync', '-a', 'a/', 'b/'], ['rsync', '-ae', 'ssh', 'a/', 'b/']],
    ['rsync*', ['rsync', '-a', 'a/', 'b/'], ['rsync', '-a', '--delete', 'a/', 'b/']],
    ['ssh*', ['ssh', 'host'], ['ssh', '-o', 'ProxyCommand=nc %h %p', 'host']],
    ['zip*', ['zip', 'a.zip', 'f'], ['zip', '-T', '-TT', 'unzip -t', 'a.zip', 'f']],
    ['diff*', ['diff', 'a', 'b'], ['diff', '--to-program=cmp', 'a', 'b']],
    ['sed*', ['sed', 's/a/b/', 'f'], ['sed', '--expr=s/a/b/w out', 'f']],
    ['sed*', ['sed', 's/a/b/', 'f'], ['sed', '--i', 's/a/b/', 'f']],
    ['sed*', ['sed', 's/a/b/', 'f'], ['sed', '-ni', 's/a/b/p', 'f']],
    ['sed*', ['sed', 's/a/b/', 'f'], ['sed', '1e ls', 'f']],
    ['gawk*', ['gawk', '{print}', 'f'], ['gawk', '--sourc=BEGIN { system("ls") }']],
    ['gawk*', ['gawk', '{print}', 'f'], ['gawk', '-f', 'prog.awk', 'f']],
    ['python3*', ['python3', 'x.py'], ['python3', '-c', 'print(1)']],
    ['node*', ['node', 'x.js'], ['node', '-pe', '1']],
  ]

  it.each(cases)('%s allows %j but asks about %j', (pattern, plain, risky) => {
    const policy = allowing(pattern)
    expect(policy.checkExec(plain).effect).toBe('allow')
    expect(policy.checkExec(risky).effect).toBe('ask')
  })

  it('unless the rule names that option', () => {
    expect(allowing('find * -delete').checkExec(['find', '.', '-delete']).effect).toBe('allow')
    expect(allowing('sort -o *').checkExec(['sort', '-o', 'x', 'y']).effect).toBe('allow')
    expect(allowing('git grep -O*').allowExec('vim').checkExec(['git', 'grep', '-Ovim', 'x']).effect).toBe(
      'allow',
    )
    expect(allowing('make test -f *').checkExec(['make', 'test', '-f', 'ci.mk']).effect).toBe('allow')
    expect(allowing('npm view*').checkExec(['npm', 'view', 'react']).effect).toBe('allow')
    expect(allowing('python3 -c*').checkExec(['python3', '-c', 'print(1)']).effect).toBe('allow')
  })

  it('denies when what the option launches is denied', () => {
    for (const argv of [
      ['find', '.', '-exec', 'rm', '{}', ';'],
      ['git', '-c', 'core.pager=rm -rf /', 'log'],
      ['git', 'grep', '-Orm', 'x'],
      ['go', 'test', '-exec', 'rm', './...'],
      ['go', 'test', '-toolexec=curl x.test', './...'],
      ['tar', '--to-com=rm x', '-xf', 'a.tgz'],
      ['rsync', '-e', 'rm -rf /', 'a', 'b'],
      ['ssh', '-o', 'ProxyCommand=curl x.test', 'host'],
      ['zip', '-TT', 'rm x', 'a.zip', 'f'],
      ['sort', '--compress-prog=rm', 'f'],
      ['sed', '--expression=1e rm x', 'f'],
      ['npm', 'test', '--script-shell', 'rm'],
      ['git', 'config', 'core.pager', 'rm -rf /'],
      ['scp', '-S', 'rm', 'a', 'h:b'],
      ['diff', '--diff-program=rm', 'a', 'b'],
    ]) {
      expect(allowing('*').checkExec(argv).effect, argv.join(' ')).toBe('deny')
    }
  })

  it('resolves GNU long-option abbreviations the way the program does: an exact name wins', () => {
    const tar = allowing('tar*')
    expect(tar.checkExec(['tar', '--checkpoint=10', '-cf', 'a.tar', '.']).effect).toBe('allow')
    expect(tar.checkExec(['tar', '--checkpoint-a=exec=ls', '-cf', 'a.tar', '.']).effect).toBe('ask')
    expect(allowing('git diff*').checkExec(['git', 'diff', '--text']).effect).toBe('allow')
    expect(allowing('git diff*').checkExec(['git', 'diff', '--textc']).effect).toBe('ask')
    expect(allowing('sed*').checkExec(['sed', '--quiet', 's/a/b/p', 'f']).effect).toBe('allow')
  })
})

describe('exact allow rules', () => {
  const policy = Policy.tiered().layer('dev').allowExec('rustc').allowExec('cargo build*')

  it('a pattern without * allows only the whole command it spells', () => {
    expect(policy.checkExec(['rustc']).effect).toBe('allow')
    expect(policy.checkExec(['rustc', '--version']).effect).toBe('ask')
    expect(policy.checkExec(['sh', '-c', 'rustc']).effect).toBe('allow')
  })

  it('a prefix rule says *', () => {
    expect(policy.checkExec(['cargo', 'build']).effect).toBe('allow')
    expect(policy.checkExec(['cargo', 'build', '--release']).effect).toBe('allow')
  })

  it('deny and ask rules naming a program still cover every use of it', () => {
    const denied = Policy.permissive().layer('ops').denyExec('curl')
    expect(denied.checkExec(['curl', 'https://x.test']).effect).toBe('deny')
  })
})

describe('deny rules see the options of well-known programs normalised', () => {
  const policy = Policy.permissive()
    .layer('ops')
    .denyExec('rm -rf*')
    .denyExec('git push --force*')
    .denyExec('git reset --hard*')
    .denyExec('chmod -R 777*')

  it.each([
    ['rm', '-rf', 'x'],
    ['rm', '-fr', 'x'],
    ['rm', '-r', '-f', 'x'],
    ['rm', '-f', '-r', 'x'],
    ['rm', '-R', '-f', 'x'],
    ['rm', '--recursive', '--force', 'x'],
    ['rm', '--rec', '--f', 'x'],
    ['rm', '-v', '-rvf', 'x'],
    ['rm', 'x', '-r', '--force'],
    ['/bin/rm', '-Rf', 'x'],
    ['git', 'push', '--force'],
    ['git', 'push', '-f', 'origin', 'main'],
    ['git', 'push', 'origin', 'main', '--force'],
    ['git', 'push', 'origin', '--force-with-lease'],
    ['git', 'push', '--forc', 'origin'],
    ['git', '-C', '.', 'push', '-fu', 'origin', 'main'],
    ['git', 'reset', '--ha', 'HEAD~1'],
    ['git', 'reset', 'HEAD~1', '--hard'],
    ['chmod', '777', '-R', 'dir'],
    ['chmod', '--recursive', '777', 'dir'],
  ])('%s %s %s… is denied', (...argv) => {
    expect(policy.checkExec(argv).effect).toBe('deny')
  })

  it.each([
    ['rm', '-r', 'x'],
    ['rm', '-f', 'x'],
    ['rm', '--', '-rf'],
    ['git', 'push', 'origin', 'main'],
    ['git', 'reset', '--soft', 'HEAD~1'],
    ['chmod', '-R', '755', 'dir'],
  ])('%s %s %s… is not', (...argv) => {
    expect(policy.checkExec(argv).effect).toBe('allow')
  })

  it('reach git subcommands run through their own programs, and launchers', () => {
    const denied = Policy.permissive().layer('ops').denyExec('git push*').denyExec('rm*')
    for (const argv of [
      ['/usr/lib/git-core/git-push', 'origin', 'main'],
      ['git-push', '--force'],
      ['setarch', 'x86_64', '-R', 'rm', '-rf', '/'],
      ['linux64', 'rm', 'x'],
      ['i386', 'git', 'push'],
      ['/lib64/ld-linux-x86-64.so.2', '/bin/rm', 'x'],
      ['/lib/ld-musl-x86_64.so.1', '--library-path', '/lib', 'rm', 'x'],
      ['ssh-agent', 'rm', 'x'],
      ['ssh-agent', '-s', 'git', 'push'],
      ['dbus-run-session', '--', 'rm', 'x'],
      ['dbus-run-session', '--dbus-daemon=rm', 'ls'],
      ['dbus-launch', '--exit-with-session', 'rm', 'x'],
      ['strace', '-f', '-o', 'trace.txt', 'rm', 'x'],
      ['valgrind', '--tool=memcheck', 'rm', 'x'],
      ['unbuffer', 'rm', 'x'],
      ['fakeroot', 'rm', 'x'],
      ['chrt', '-f', '10', 'rm', 'x'],
      ['numactl', '--interleave=all', 'rm', 'x'],
      ['unshare', '-r', 'rm', 'x'],
      ['proxychains4', '-q', 'git', 'push'],
      ['xvfb-run', '-a', 'rm', 'x'],
      ['sg', 'wheel', '-c', 'rm x'],
      ['nix-shell', '--run', 'git push'],
      ['gdb', '-batch', '-ex', 'run', '--args', 'rm', 'x'],
      ['parallel', 'rm', ':::', 'a', 'b'],
      ['tmux', 'new-session', '-d', 'rm x'],
      ['concurrently', 'rm x', 'ls'],
      ['socat', '-', 'EXEC:rm x'],
    ]) {
      expect(denied.checkExec(argv).effect, argv.join(' ')).toBe('deny')
    }
  })
})
