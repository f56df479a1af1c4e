/**
 * Wrappers: programs that run another command given in their arguments (`env`, `nice`, `timeout`, `sudo`,
 * `xargs`, `ssh`, …) and package runners (`npx`, `npm exec`, `uv run`, …). Transparent ones become
 * `wrapper` nodes whose payload is analysed in turn; context-changing ones also cap the payload at ask.
 */

import {
  type Analysis,
  basename,
  from,
  type Handler,
  handle,
  handlePattern,
  handlerName,
  type Words,
  withOptions,
  words,
} from './engine.js'
import { risk, sshCommandOptions, tabled } from './launch-options.js'
import { optionSpec, readArgs, scanOptions } from './options.js'
import { parseCommand, programOptions } from './programs.js'
import type { ShellAssignment } from './shell/parse.js'
import { staticWords } from './shell/parse.js'

/**
 * A wrapper whose payload starts after its options (and `positionals` fixed operands). `context` caps what
 * it runs at ask; `noPayload` options make it a plain command (e.g. `sudo -l` only lists).
 */
function wrapper(options: {
  spec: string
  what: string
  context?: string
  positionals?: number
  noPayload?: string[]
  assignments?: boolean
  /** Unknown `--name=value` options are fine (they cannot move where the command starts). */
  looseLong?: boolean
  /** Without a command it starts an interactive shell (or reads commands from standard input). */
  shellWithoutPayload?: boolean
  /** Where its options start (after a fixed operand such as setarch's architecture). */
  start?: number
}): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      const scan = a.options(w, depth, options.spec, options.start ?? 1, options.looseLong)
      if (!scan) return
      if (scan.options.some((o) => options.noPayload?.includes(o.name))) return void a.command(depth, w, cap)
      const start = scan.index + (options.positionals ?? 0)
      if (w.dynamic?.slice(scan.index, start + 1).some(Boolean)) {
        return a.unclear(
          w,
          depth,
          `${w.argv[0]} is given a word only known at run time where its command starts`,
        )
      }
      const { end, assigned } = options.assignments
        ? leadingAssignments(w, start)
        : { end: start, assigned: [] }
      if (end >= w.argv.length) {
        if (options.shellWithoutPayload)
          return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} without a command starts a shell`)
        return void a.command(depth, w, cap)
      }
      const payloadCap = cap ?? options.context ?? settingContext(w.argv[0]!, assigned)
      if (!a.wrapper(depth, w, payloadCap, options.what)) return
      a.assignments(assigned, depth + 1, payloadCap)
      a.run(from(w, end), depth + 1, payloadCap)
    },
  }
}

handle('nice', wrapper({ spec: '-n= --adjustment=', what: 'runs its command with another priority' }))
handle(
  'timeout gtimeout',
  wrapper({
    spec: '-k= --kill-after= -s= --signal= --preserve-status --foreground -v --verbose',
    what: 'runs its command with a time limit',
    positionals: 1,
  }),
)
handle('nohup', wrapper({ spec: '', what: 'runs its command immune to hangups' }))
handle(
  'setsid',
  wrapper({ spec: '-c -f -w --ctty --fork --wait', what: 'runs its command in a new session' }),
)
handle(
  'stdbuf',
  wrapper({ spec: '-i= -o= -e= --input= --output= --error=', what: 'runs its command with other buffering' }),
)
handle(
  'command',
  wrapper({ spec: '-p -v -V', what: 'runs its command bypassing shell functions', noPayload: ['-v', '-V'] }),
)
handle('builtin', wrapper({ spec: '', what: 'runs a shell builtin' }))
handle('exec', wrapper({ spec: '-c -l -a=', what: 'replaces the shell with its command' }))
handle(
  'ionice',
  wrapper({
    spec: '-c= -n= -p= -P= -u= -t --class= --classdata= --pid= --pgid= --uid= --ignore',
    what: 'runs its command with another I/O priority',
    noPayload: ['-p', '-P', '-u', '--pid', '--pgid', '--uid'],
  }),
)
handle(
  'taskset',
  wrapper({
    spec: '-a -c -p --all-tasks --cpu-list --pid',
    what: 'runs its command on chosen CPUs',
    positionals: 1,
    noPayload: ['-p', '--pid'],
  }),
)
handle(
  'sudo',
  wrapper({
    spec:
      '-A -b -E -H -K -k -n -P -S -i -s -l -v -V -B -N --askpass --background --preserve-env[=] --set-home ' +
      '--login --shell --list --validate --version --non-interactive --stdin --reset-timestamp --remove-timestamp ' +
      '-C= -D= -g= -h= -p= -R= -r= -t= -T= -U= -u= --close-from= --chdir= --group= --prompt= --chroot= --role= ' +
      '--type= --command-timeout= --other-user= --user= --host=',
    what: 'runs its command as another user',
    context: 'sudo runs it as another user',
    noPayload: [
      '-l',
      '-v',
      '-V',
      '-k',
      '-K',
      '--list',
      '--validate',
      '--version',
      '--reset-timestamp',
      '--remove-timestamp',
    ],
    assignments: true,
  }),
)
handle(
  'doas',
  wrapper({
    spec: '-n -s -L -u= -C=',
    what: 'runs its command as another user',
    context: 'doas runs it as another user',
    noPayload: ['-C', '-L'],
  }),
)
handle(
  'pkexec',
  wrapper({
    spec: '--user= --disable-internal-agent --keep-cwd',
    what: 'runs its command as another user',
    context: 'pkexec runs it as another user',
  }),
)
handle(
  'chroot',
  wrapper({
    spec: '--userspec= --groups= --skip-chdir',
    what: 'runs its command under another root directory',
    context: 'chroot runs it under another root directory',
    positionals: 1,
  }),
)
handle(
  'xargs',
  withOptions(
    '-0 -r -t -p -x -o --null --no-run-if-empty --verbose --interactive --exit --open-tty -a= -d= -E= -I= -L= -n= ' +
      '-P= -s= --arg-file= --delimiter= --max-lines= --max-args= --max-procs= --max-chars= --process-slot-var= ' +
      '-e[=] -i[=] -l[=] --eof[=] --replace[=]',
    (a, w, depth, cap, scan) => {
      const context = cap ?? 'xargs adds words read from its input, so the full command is not known here'
      const payload = scan.index < w.argv.length ? from(w, scan.index) : words(['echo'])
      payload.stdin = undefined
      if (!a.wrapper(depth, w, context, 'runs its command with arguments read from its input')) return
      // What the script pipes in says which words xargs adds (`echo x | xargs rm`), in the plain form.
      const input = w.stdin
      const plain = scan.options.length === 0 && input && !payload.dynamic
      const added = plain && !input.dynamic ? staticWords(input.text.replace(/\n/g, ' ')) : undefined
      if (added) return a.run(words([...payload.argv, ...added]), depth + 1, context)
      a.run(payload, depth + 1, context)
      if (input) a.probeScript(`${payload.argv.join(' ')} ${input.text.replace(/\n/g, ' ')}`, depth + 1)
    },
  ),
)
handle('busybox toybox', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const applet = w.argv[1]
    if (applet === undefined || applet.startsWith('-')) return void a.command(depth, w, cap)
    if (w.dynamic?.[1]) return a.unclear(w, depth, 'the applet name is only known at run time')
    if (a.wrapper(depth, w, cap, 'runs one of its built-in applets')) a.run(from(w, 1), depth + 1, cap)
  },
})

/** `env`: options, `-S` splitting, assignments (a changed context), then the payload. */
handle('env', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const spec = optionSpec(
      '-i -0 -v --ignore-environment --null --debug --list-signal-handling -u= -C= -P= --unset= --chdir= ' +
        '--block-signal[=] --default-signal[=] --ignore-signal[=]',
    )
    let argv = [...w.argv]
    let dynamic = w.dynamic ? [...w.dynamic] : undefined
    let chdir = false
    let i = 1
    for (;;) {
      const arg = argv[i]
      if (arg === undefined) break
      if (dynamic?.[i])
        return a.unclear(words(argv, dynamic), depth, 'env is given a word only known at run time', i)
      const split = /^(?:-S|--split-string=?)(.*)$/s.exec(arg)
      if (split && (arg.startsWith('-S') || arg.startsWith('--split-string'))) {
        let text = split[1]!
        let consumed = 1
        if (text === '' && !arg.includes('=')) {
          text = argv[i + 1] ?? ''
          consumed = 2
        }
        const parts = /\\[_c]|\$/.test(text) ? undefined : staticWords(text)
        if (!parts) {
          a.opaque(depth, w.argv.join(' '), 'env -S is given a string tether cannot split statically')
          return a.probeScript(text, depth + 1)
        }
        argv = [...argv.slice(0, i), ...parts, ...argv.slice(i + consumed)]
        dynamic = dynamic
          ? [...dynamic.slice(0, i), ...parts.map(() => false), ...dynamic.slice(i + consumed)]
          : undefined
        continue
      }
      if (arg === '-') {
        i++
        continue
      }
      if (!arg.startsWith('-') || arg === '--') break
      // One option word (and its value) at a time: `-S` strings change the words after it.
      const scan = scanOptions([arg, ...argv.slice(i + 1, i + 2)], 0, spec, undefined, false, 1)
      if (!scan.ok) return a.unclear(words(argv, dynamic), depth, scan.problem, i)
      if (scan.options.some((o) => o.name === '-P')) {
        return a.unclear(words(argv, dynamic), depth, 'env -P searches another path for the command', i)
      }
      if (scan.options.some((o) => o.name === '-C' || o.name === '--chdir')) chdir = true
      i += scan.index
    }
    if (argv[i] === '--') i++
    const outside = a.elsewhere
    if (chdir) a.elsewhere = 'env -C runs it in another directory'
    changedEnvironment(a, words(argv, dynamic), i, depth, cap)
    a.elsewhere = outside
  },
})
handle('cross-env', {
  dynamicArgsOk: true,
  analyse: (a, w, depth, cap) => changedEnvironment(a, w, 1, depth, cap),
})
/** `cross-env-shell NAME=value… 'command line'`: the rest is a command line run by a shell. */
handle('cross-env-shell', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const { end, assigned } = leadingAssignments(w, 1)
    if (end >= w.argv.length) return void a.command(depth, w, cap)
    if (w.dynamic) return a.unclear(w, depth, 'cross-env-shell is given words only known at run time', end)
    const context = cap ?? settingContext(w.argv[0]!, assigned)
    if (!a.wrapper(depth, w, context, 'runs a command line in a changed environment')) return
    a.assignments(assigned, depth + 1, context)
    a.script(w.argv.slice(end).join(' '), depth + 1, context)
  },
})

/** `NAME=value… command…` from `start`: the assignments are judged, and what runs gets a changed context. */
function changedEnvironment(
  a: Analysis,
  w: Words,
  start: number,
  depth: number,
  cap: string | undefined,
): void {
  const { end, assigned } = leadingAssignments(w, start)
  if (end >= w.argv.length) return void a.command(depth, w, cap)
  const context = cap ?? settingContext(w.argv[0]!, assigned)
  if (!a.wrapper(depth, w, context, 'runs its command in a changed environment')) return
  a.assignments(assigned, depth + 1, context)
  a.run(from(w, end), depth + 1, context)
}

/** The `NAME=value` words of `w` from `start` on: where they end, and what they assign. */
function leadingAssignments(w: Words, start: number): { end: number; assigned: ShellAssignment[] } {
  const assigned: ShellAssignment[] = []
  let end = start
  for (; end < w.argv.length; end++) {
    const word = w.argv[end]!
    const eq = word.indexOf('=')
    if (eq < 1 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(word.slice(0, eq))) break
    assigned.push({
      name: word.slice(0, eq),
      value: { text: word.slice(eq + 1), dynamic: w.dynamic?.[end] ?? false },
    })
  }
  return { end, assigned }
}

function settingContext(program: string, assigned: readonly ShellAssignment[]): string | undefined {
  if (assigned.length === 0) return undefined
  return `${basename(program)} sets environment variables (${assigned.map((v) => v.name).join(', ')})`
}

/** `/usr/bin/time`: a wrapper whose `-o FILE` writes. */
handle(
  'time',
  withOptions(
    '-p -v -q -a --portability --verbose --quiet --append -o= -f= --output= --format=',
    (a, w, depth, cap, scan) => {
      if (scan.index >= w.argv.length) return void a.command(depth, w, cap)
      if (!a.wrapper(depth, w, cap, 'runs its command and reports its resource use')) return
      for (const o of scan.options)
        if (o.name === '-o' || o.name === '--output') a.file(depth + 1, 'write', o.value ?? '', false, cap)
      a.run(from(w, scan.index), depth + 1, cap)
    },
  ),
)

handle(
  'watch',
  withOptions(
    '-b -e -g -c -x -p -t -w -C --beep --errexit --chgexit --color --no-color --exec --precise --no-title --no-wrap ' +
      '--no-linewrap -n= -q= --interval= --equexit= -d[=] --differences[=]',
    (a, w, depth, cap, scan) => {
      if (scan.index >= w.argv.length) return void a.command(depth, w, cap)
      if (!a.wrapper(depth, w, cap, 'runs its command repeatedly')) return
      const payload = from(w, scan.index)
      if (scan.options.some((o) => o.name === '-x' || o.name === '--exec')) a.run(payload, depth + 1, cap)
      else if (payload.dynamic) {
        a.opaque(depth + 1, payload.argv.join(' '), 'watch runs a command line only known at run time')
        a.probeScript(payload.argv.join(' '), depth + 2)
      } else a.script(payload.argv.join(' '), depth + 1, cap)
    },
  ),
)

handle(
  'flock',
  withOptions(
    '-s -x -e -u -n -o -F --shared --exclusive --unlock --nonblock --nb --close --no-fork --verbose ' +
      '-w= -E= -c= --timeout= --wait= --conflict-exit-code= --command=',
    (a, w, depth, cap, scan) => {
      const command = scan.options.find((o) => o.name === '-c' || o.name === '--command')
      const rest = scan.index + 1
      if (!command && rest >= w.argv.length) return void a.command(depth, w, cap)
      if (!a.wrapper(depth, w, cap, 'runs its command holding a lock')) return
      if (command) a.script(command.value ?? '', depth + 1, cap)
      else if (w.argv[rest] === '-c' || w.argv[rest] === '--command')
        a.script(w.argv[rest + 1] ?? '', depth + 1, cap)
      else a.run(from(w, rest), depth + 1, cap)
    },
  ),
)

/** `su`/`runuser`: `-c` scripts (or a `-u user -- cmd` payload) as another user. */
handle('su runuser', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const spec = optionSpec(
      '-l -m -p -P -f --login --preserve-environment --pty --fast -c= -C= -g= -G= -s= -u= -w= --command= ' +
        '--session-command= --group= --supp-group= --shell= --user= --whitelist-environment=',
    )
    const argv = w.argv.map((x) => (x === '-' ? '-l' : x))
    const scan = scanOptions(argv, 1, spec, w.dynamic)
    if (!scan.ok) return a.unclear(w, depth, scan.problem)
    const context = cap ?? `${w.argv[0]} runs it as another user`
    const command = scan.options.find((o) => /^(-c|-C|--command|--session-command)$/.test(o.name))
    const user = scan.options.some((o) => o.name === '-u' || o.name === '--user')
    if (!a.wrapper(depth, w, context, 'runs a command as another user')) return
    if (command) return a.script(command.value ?? '', depth + 1, context)
    if (user && scan.index < argv.length) return a.run(from(w, scan.index), depth + 1, context)
    const shellArgs = from(w, scan.index + 1)
    if (shellArgs.argv.length > 0)
      return a.run(
        words(['sh', ...shellArgs.argv], [false, ...(shellArgs.dynamic ?? shellArgs.argv.map(() => false))]),
        depth + 1,
        context,
      )
    a.opaque(depth + 1, w.argv.join(' '), 'it starts an interactive shell')
  },
})

/** `ssh host command…`: the command is a shell script run remotely; `-o ProxyCommand=…` runs locally. */
handle('ssh', {
  analyse(a, w, depth, cap) {
    const parsed = parseCommand(w.argv, programOptions('ssh')!)
    const context = cap ?? 'ssh runs it on another machine'
    const proxies = sshCommandOptions(parsed.options)
    const risks = proxies.map(([name]) => risk('-o', 'sh', ['-o', name]))
    if (!tabled(a, w, depth, cap, 'ssh', { parsed, extraRisks: risks })) return
    if (parsed.options.some((o) => o.given === '-F'))
      a.opaque(depth + 1, w.argv.join(' '), 'ssh -F reads a configuration that can run commands')
    for (const [, command] of proxies) a.script(command, depth + 1, context)
    const remote = parsed.operands.slice(1).map((i) => w.argv[i]!)
    if (remote.length > 0) a.script(remote.join(' '), depth + 1, context)
  },
})

// ---- runners (npx and friends): the payload is a package's program

export function runner(a: Analysis, w: Words, start: number, depth: number, cap: string | undefined): void {
  const scan = a.options(
    w,
    depth,
    '-y -q --yes --no --quiet --no-install --ignore-existing --silent -p= --package= --call= -c= --shell= ' +
      '--prefix= --registry= --cache= --userconfig= -w= --workspace= --python= --with= --from= --spec= --verbose',
    start,
    true,
  )
  if (!scan) return
  const call = scan.options.find((o) => o.name === '-c' || o.name === '--call')
  if (!a.wrapper(depth, w, cap, 'runs a program from a package')) return
  if (call) a.script(call.value ?? '', depth + 1, cap)
  else if (scan.index < w.argv.length) {
    // A rule allowing `npx vitest*` names the tool as it is run here.
    const payload = from(w, scan.index)
    if (!w.dynamic) {
      const named = w.argv.slice(0, scan.index + 1).join(' ').length
      payload.allowAs = { spelling: w.argv.join(' '), named }
    }
    a.run(payload, depth + 1, cap)
  } else a.opaque(depth + 1, w.argv.join(' '), 'the package program to run is not named')
}

handle('npx pnpx bunx uvx', {
  dynamicArgsOk: true,
  analyse: (a, w, depth, cap) => runner(a, w, 1, depth, cap),
})

/** Package managers whose subcommands `exec`, `x`, `dlx`, `run` run another program. */
function packageManager(runners: string[]): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      let i = 1
      // Empty words are skipped too: the tool would reject them, and judging the rest is the safe reading.
      while (i < w.argv.length && (w.argv[i] === '' || w.argv[i]!.startsWith('-'))) {
        if (w.dynamic?.[i]) return a.unclear(w, depth, `${w.argv[0]} is given a word only known at run time`)
        const arg = w.argv[i]!
        if (/^(-C|--dir|--prefix|--cwd|-w|--workspace|--filter|-F)$/.test(arg)) i++
        else if (!arg.includes('=') && runners.includes(w.argv[i + 1] ?? '')) {
          return a.unclear(
            w,
            depth,
            `${arg} may take a value, so which subcommand ${w.argv[0]} runs is unclear`,
          )
        }
        i++
      }
      if (runners.includes(w.argv[i] ?? '') && !w.dynamic?.[i]) return runner(a, w, i + 1, depth, cap)
      if (w.dynamic)
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given words only known at run time`, w)
      tabled(a, w, depth, cap, handlerName(w.argv[0]!))
    },
  }
}

handle('npm', packageManager(['exec', 'x']))
handle('pnpm', packageManager(['exec', 'dlx']))
handle('yarn', packageManager(['exec', 'dlx']))
handle('uv', packageManager(['run']))
handle('pipx poetry pdm hatch rye pixi pipenv', packageManager(['run']))
handle('bundle', packageManager(['exec']))

// ---- launchers: programs that run the rest of their command line in some changed way

handle(
  'ssh-agent',
  wrapper({
    spec: '-c -s -D -d -k -a= -E= -O= -P= -t=',
    what: 'runs its command with an SSH agent',
    noPayload: ['-k'],
  }),
)
handle(
  'dbus-launch',
  wrapper({
    spec: '--sh-syntax --csh-syntax --auto-syntax --binary-syntax --close-stderr --exit-with-session --version --help',
    what: 'runs its command with a D-Bus session',
    looseLong: true,
  }),
)
handle('unbuffer', wrapper({ spec: '-p', what: 'runs its command without output buffering' }))
handle(
  'caffeinate',
  wrapper({ spec: '-d -i -m -s -u -t= -w=', what: 'runs its command keeping the machine awake' }),
)
handle(
  'eatmydata nocache catchsegv',
  wrapper({ spec: '-n=', what: 'runs its command with a library preloaded' }),
)
handle(
  'fakeroot',
  wrapper({
    spec: '-l= --lib= --faked= -s= -i= -u --unknown-is-real -b= -h -v',
    what: 'runs its command as a pretend root',
  }),
)
handle(
  'torsocks',
  wrapper({
    spec: '-u= -p= -a= -P= -i -d -q --user= --pass= --address= --port= --isolate',
    what: 'runs its command through Tor',
    shellWithoutPayload: true,
  }),
)
handle('proxychains proxychains4', wrapper({ spec: '-q -f=', what: 'runs its command through proxies' }))
handle(
  'xvfb-run',
  wrapper({
    spec: '-a --auto-servernum -d --auto-display -e= --error-file= -f= --auth-file= -n= --server-num= -l --listen-tcp -p= --xauth-protocol= -s= --server-args= -w= --wait=',
    what: 'runs its command with a virtual display',
  }),
)
handle(
  'chrt',
  wrapper({
    spec: '-a --all-tasks -b --batch -d --deadline -D --dead -f --fifo -i --idle -m --max -o --other -p --pid -r --rr -R --reset-on-fork -v --verbose -T= --sched-runtime= -P= --sched-period= --sched-deadline=',
    what: 'runs its command with another scheduling policy',
    positionals: 1,
    noPayload: ['-p', '-m'],
  }),
)
handle(
  'numactl',
  wrapper({
    spec: '-a --all -i= --interleave= -p= --preferred= -P= --preferred-many= -m= --membind= -b --balancing -N= --cpunodebind= -C= --physcpubind= -l --localalloc -s --show -H --hardware -S= --shmid= -f= --file= -L= --length= -o= --offset= -M= --shmmode= -T --huge -t --touch',
    what: 'runs its command with a memory placement policy',
    looseLong: true,
    noPayload: ['-s', '--show', '-H', '--hardware'],
  }),
)
handle(
  'cpulimit',
  wrapper({
    spec: '-l= --limit= -p= --pid= -e= --exe= -P= --path= -z --lazy -i --include-children -b --background -c= --cpu= -q --quiet -k --kill -r --restore -v --verbose -h --help',
    what: 'runs its command with a CPU limit',
    noPayload: ['-p', '--pid', '-e', '--exe', '-P', '--path'],
  }),
)
handle(
  'prlimit',
  wrapper({
    spec: '-p= --pid= -o= --output= --noheadings --raw --verbose -c[=] -d[=] -e[=] -f[=] -i[=] -l[=] -m[=] -n[=] -q[=] -r[=] -s[=] -t[=] -u[=] -v[=] -x[=] -y[=]',
    what: 'runs its command with resource limits',
    looseLong: true,
    noPayload: ['-p', '--pid'],
  }),
)
handle(
  'strace',
  wrapper({
    spec: '-c -C -d -D -f -F -h -i -k -n -q -r -t -T -v -V -w -x -y -z -Z -a= -b= -e= -E= -I= -o= -O= -p= -P= -s= -S= -u= -X= -U=',
    what: 'runs its command and traces its system calls',
    looseLong: true,
    noPayload: ['-p'],
  }),
)
handle(
  'ltrace',
  wrapper({
    spec: '-a= -A= -b -c -C -D= -e= -f -F= -h -i -l= -L -n= -o= -p= -r -s= -S -t -T -u= -V -w= -x= --demangle --library= --output= --version --help',
    what: 'runs its command and traces its library calls',
    noPayload: ['-p'],
  }),
)
handle(
  'valgrind',
  wrapper({ spec: '-v -q -h -d --help --version', what: 'runs its command under valgrind', looseLong: true }),
)
handle(
  'dotenv',
  wrapper({
    spec: '-e= -v= -p= -c[=] --debug -o --override --no-expand',
    what: 'runs its command with variables loaded from files',
    context: 'dotenv sets environment variables from files',
  }),
)
handle(
  'unshare',
  wrapper({
    spec: '-m --mount[=] -u --uts[=] -i --ipc[=] -n --net[=] -p --pid[=] -U --user[=] -C --cgroup[=] -T --time[=] -f --fork --kill-child[=] --mount-proc[=] --map-user= --map-users= --map-group= --map-groups= --map-auto -r --map-root-user -c --map-current-user -S= --setuid= -G= --setgid= -R= --root= -w= --wd= --propagation= --setgroups= --keep-caps --monotonic= --boottime=',
    what: 'runs its command in new namespaces',
    context: 'unshare runs it in new namespaces',
    shellWithoutPayload: true,
  }),
)
handle(
  'nsenter',
  wrapper({
    spec: '-a --all -t= --target= -m[=] --mount[=] -u[=] --uts[=] -i[=] --ipc[=] -n[=] --net[=] -p[=] --pid[=] -U[=] --user[=] -C[=] --cgroup[=] -T[=] --time[=] -S= --setuid= -G= --setgid= --preserve-credentials -r[=] --root[=] -w[=] --wd[=] -W= --wdns= -F --no-fork -Z --follow-context',
    what: "runs its command in another process's namespaces",
    context: 'nsenter runs it in other namespaces',
    shellWithoutPayload: true,
  }),
)
handle(
  'systemd-run',
  wrapper({
    spec: '-u= -p= -E= -H= -M= -t -P -G -q -d -S -r --user --system --scope --wait --collect --pipe --pty --quiet --same-dir --no-block --no-ask-password --remain-after-exit --send-sighup --shell',
    what: 'runs its command as a systemd unit',
    context: 'systemd-run runs it as a service, outside this run',
    looseLong: true,
  }),
)
handle(
  'setpriv runcon chpst',
  wrapper({
    spec: '-d --dump -v --verbose --nnp --no-new-privs --clear-groups --keep-groups --init-groups --reset-env -c -u= -r= -t= -l= -U= -b= -e= -n= -m= -o= -p= -f= -P -0 -1 -2',
    what: 'runs its command with other credentials or security context',
    context: 'it runs with other credentials',
    looseLong: true,
  }),
)

/** `setarch ARCH [options] [program…]`, also spelled as the architecture (`linux64`, `i386`, …). */
const SETARCH_OPTIONS =
  '-R --addr-no-randomize -F --fdpic-funcptrs -Z --mmap-page-zero -L --addr-compat-layout -X --read-implies-exec ' +
  '-B --32bit -I --short-inode -S --whole-seconds -T --sticky-timeouts -3 --3gb -v --verbose --4gb --uname-2.6 --list'
handle(
  'setarch',
  wrapper({
    spec: SETARCH_OPTIONS,
    what: 'runs its command with another architecture personality',
    start: 2,
    shellWithoutPayload: true,
  }),
)
handle(
  'linux32 linux64 i386 x86_64 arm64 aarch64 ppc ppc32 ppc64 s390 s390x uname26',
  wrapper({
    spec: SETARCH_OPTIONS,
    what: 'runs its command with another architecture personality',
    shellWithoutPayload: true,
  }),
)

/** The dynamic loader run directly: `/lib64/ld-linux-x86-64.so.2 [options] program…`. */
handlePattern(
  /^(ld(-linux[\w.-]*|-musl[\w.-]*|-[\d.]+)?\.so(\.[\d]+)*|ld-linux[\w.-]*\.so[\w.]*)$/,
  wrapper({
    spec: '--list --verify --inhibit-cache --list-tunables --list-diagnostics --help --version --library-path= --inhibit-rpath= --audit= --preload= --argv0= --glibc-hwcaps-prefix= --glibc-hwcaps-mask=',
    what: 'loads and runs its command',
    noPayload: ['--list', '--verify'],
  }),
)

/** `dbus-run-session [--dbus-daemon=PROGRAM] program…`: the daemon it starts is a program too. */
handle('dbus-run-session', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const scan = a.options(w, depth, '--config-file= --dbus-daemon= --help --version')
    if (!scan) return
    if (!a.wrapper(depth, w, cap, 'runs its command with a D-Bus session')) return
    const daemon = scan.options.find((o) => o.name === '--dbus-daemon')
    if (daemon?.value) a.run(words([daemon.value]), depth + 1, cap)
    if (scan.index < w.argv.length) a.run(from(w, scan.index), depth + 1, cap)
  },
})

/** `sg GROUP [-c] COMMAND`: the command is a shell command line, run with another group. */
handle('sg', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const args = w.argv.slice(1).filter((x) => x !== '-')
    const context = cap ?? 'sg runs it with another group'
    if (args.length < 2) return a.opaque(depth, w.argv.join(' '), 'sg without a command starts a shell')
    if (w.dynamic) return a.unclear(w, depth, 'sg is given words only known at run time')
    const command = args[1] === '-c' ? args.slice(2).join(' ') : args.slice(1).join(' ')
    if (a.wrapper(depth, w, context, 'runs a command with another group'))
      a.script(command, depth + 1, context)
  },
})

/** `direnv exec DIR command…`: the command runs with the directory's `.envrc` loaded. */
handle('direnv', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    if (w.argv[1] !== 'exec') return void a.command(depth, w, cap)
    if (w.dynamic) return a.unclear(w, depth, 'direnv is given words only known at run time', 2)
    const context = cap ?? "direnv loads the directory's .envrc first"
    if (w.argv.length > 3 && a.wrapper(depth, w, context, 'runs its command with a directory environment'))
      a.run(from(w, 3), depth + 1, context)
    else a.command(depth, w, cap)
  },
})

/** `nix-shell --run CMD` / `--command CMD`: a command line run inside a nix environment. */
handle('nix-shell', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const at = w.argv.findIndex((x) => x === '--run' || x === '--command')
    const command = at === -1 ? undefined : w.argv[at + 1]
    if (command === undefined || w.dynamic?.[at + 1])
      return a.unclear(w, depth, 'nix-shell without --run starts an interactive shell')
    const context = cap ?? 'nix-shell runs it inside a nix environment, after its shell hooks'
    if (a.wrapper(depth, w, context, 'runs a command inside a nix environment'))
      a.script(command, depth + 1, context)
  },
})

/** `mise exec [tool@version…] -- command…` (also `mise x`, `rtx`, `asdf exec`). */
handle('mise rtx asdf', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    if (!['exec', 'x'].includes(w.argv[1] ?? '')) return void a.command(depth, w, cap)
    const dashes = w.argv.indexOf('--')
    if (dashes === -1)
      return a.unclear(
        w,
        depth,
        `${w.argv[0]} ${w.argv[1]} without -- does not say where the command starts`,
        2,
      )
    if (a.wrapper(depth, w, cap, 'runs its command with chosen tool versions'))
      a.run(from(w, dashes + 1), depth + 1, cap)
  },
})

/** `concurrently "cmd one" "npm:script"`: each operand is a command line (`npm:x` is `npm run x`). */
const CONCURRENTLY =
  '-n= --names= -c= --prefix-colors= -p= --prefix= -s= --success= --max-processes= -m= --kill-signal= ' +
  '--restart-tries= --restart-after= --timestamp-format= -t= --handle-input= --default-input-target= --cwd= ' +
  '--prefix-length= -l= -k --kill-others --kill-others-on-fail -r --raw --no-color --hide= -g --group -i ' +
  '--passthrough-arguments -P --timings --names-separator='
handle('concurrently', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const read = readArgs(w.argv, 1, optionSpec(CONCURRENTLY))
    if (w.dynamic) return a.unclear(w, depth, 'concurrently is given words only known at run time')
    if (!a.wrapper(depth, w, cap, 'runs several command lines at once')) return
    for (const i of read.operands) {
      const operand = w.argv[i]!
      const shorthand = /^(npm|pnpm|yarn|bun):(.+)$/.exec(operand)
      if (shorthand) a.run(words([shorthand[1]!, 'run', shorthand[2]!]), depth + 1, cap)
      else a.script(operand, depth + 1, cap)
    }
  },
})

/** `npm-run-all`, `run-p`, `run-s`: each operand names package scripts (`build:*`), run with `npm run`. */
handle('npm-run-all run-p run-s', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const read = readArgs(
      w.argv,
      1,
      optionSpec(
        '-p --parallel -s --sequential -c --continue-on-error -l --print-label -n --print-name -r --race --silent --aggregate-output --max-parallel= --npm-path=:run',
      ),
    )
    if (w.dynamic) return a.unclear(w, depth, `${w.argv[0]} is given words only known at run time`)
    if (!a.wrapper(depth, w, cap, 'runs package scripts')) return
    for (const found of read.options) {
      if (found.defs[0]?.canonical === '--npm-path' && found.value)
        a.run(words([found.value]), depth + 1, cap)
    }
    for (const i of read.operands) a.run(words(['npm', 'run', w.argv[i]!]), depth + 1, cap)
  },
})

/** `nodemon [--exec CMD] [script.js] [args]`: runs CMD, or `node script.js`, again on every change. */
handle('nodemon', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const read = readArgs(
      w.argv,
      1,
      optionSpec(
        '-x|--exec= -e|--ext= -w|--watch= -i|--ignore= -d|--delay= --signal= --config= -V|--verbose -q|--quiet -L|--legacy-watch -C|--on-change-only --spawn --no-stdin --no-update-notifier --no-colors -I|--no-stdin',
      ),
      true,
    )
    if (w.dynamic) return a.unclear(w, depth, 'nodemon is given words only known at run time')
    if (!a.wrapper(depth, w, cap, 'runs its command again on every change')) return
    const exec = read.options.find((o) => o.defs[0]?.canonical === '-x')
    const rest = w.argv.slice(read.end)
    if (exec?.value) a.script([exec.value, ...rest].join(' '), depth + 1, cap)
    else if (rest.length > 0) a.run(words(['node', ...rest]), depth + 1, cap)
  },
})

/** `entr [-s] utility…`: runs the utility (or, with -s, a shell command line) when files change. */
handle('entr', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const scan = a.options(w, depth, '-a -c -d -n -p -r -s -z')
    if (!scan) return
    if (scan.index >= w.argv.length) return void a.command(depth, w, cap)
    if (!a.wrapper(depth, w, cap, 'runs its command when files change')) return
    if (scan.options.some((o) => o.name === '-s')) a.script(w.argv[scan.index]!, depth + 1, cap)
    else a.run(from(w, scan.index), depth + 1, cap)
  },
})

/** `socat … EXEC:cmd` / `SYSTEM:cmd`: an address that runs a program. */
handle('socat', {
  analyse(a, w, depth, cap) {
    const runs = w.argv.slice(1).flatMap((x) => {
      const match = /^(exec|system):(.*)$/is.exec(x)
      return match ? [[match[1]!.toLowerCase(), match[2]!.split(',')[0]!]] : []
    })
    const risks = runs.map(([kind]) =>
      risk(kind!.toUpperCase(), 'sh', [`${kind!.toUpperCase()}:`, `${kind}:`]),
    )
    if (!a.command(depth, w, cap, risks.length > 0 ? { risks } : undefined)) return
    for (const [, command] of runs) a.script(command!, depth + 1, cap)
  },
})

/** A git subcommand's own program (`/usr/lib/git-core/git-push`): judged as `git push`, asked about. */
handlePattern(/^git-[a-z][a-z0-9-]*$/, {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const sub = basename(w.argv[0]!).slice(4)
    const context = cap ?? `it runs git ${sub} through ${w.argv[0]} rather than git`
    if (!a.wrapper(depth, w, context, `is git's ${sub} command`)) return
    const dynamic = w.dynamic ? [false, false, ...w.dynamic.slice(1)] : undefined
    a.run(words(['git', sub, ...w.argv.slice(1)], dynamic), depth + 1, context)
  },
})

/** Tools that run other programs in ways tether does not follow: what they might run is judged for deny. */
handle(
  'firejail bwrap proot fakechroot parallel gdb lldb perf tmux screen at batch crontab newgrp watchexec ' +
    'schroot systemd-nspawn flatpak-spawn',
  {
    dynamicArgsOk: true,
    analyse: (a, w, depth) =>
      a.unclear(w, depth, `${w.argv[0]} runs other programs in ways tether does not analyse`),
  },
)
