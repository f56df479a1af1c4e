/**
 * Wrappers: programs that run another command given in their arguments (`env`, `nice`, `timeout`, `sudo`,
 * `xargs`, `ssh`, …) and package runners (`npx`, `npm exec`, `uv run`, …). Transparent ones become
 * `wrapper` nodes whose payload is analysed in turn; context-changing ones also cap the payload at ask.
 */
import type { ShellAssignment } from '../shell/parse.js'
import { staticWords } from '../shell/parse.js'
import {
  type Analysis,
  basename,
  from,
  type Handler,
  handle,
  type Words,
  withOptions,
  words,
} from './analysis.js'
import { optionSpec, scanOptions } from './options.js'

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
}): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      const scan = a.options(w, depth, options.spec)
      if (!scan) return
      if (scan.options.some((o) => options.noPayload?.includes(o.name))) return void a.command(depth, w, cap)
      const start = scan.index + (options.positionals ?? 0)
      if (w.dynamic?.slice(scan.index, start + 1).some(Boolean)) {
        return a.opaque(
          depth,
          w.argv.join(' '),
          `${w.argv[0]} is given a word only known at run time where its command starts`,
        )
      }
      const { end, assigned } = options.assignments
        ? leadingAssignments(w, start)
        : { end: start, assigned: [] }
      if (end >= w.argv.length) return void a.command(depth, w, cap)
      const payloadCap = cap ?? options.context ?? settingContext(w.argv[0]!, assigned)
      if (!a.wrapper(depth, w, payloadCap, options.what)) return
      a.assignments(assigned, depth + 1, payloadCap)
      a.run(from(w, end), depth + 1, payloadCap)
    },
  }
}

handle('nice', wrapper({ spec: '-n= --adjustment=', what: 'runs its command with another priority' }))
handle(
  'timeout',
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
      if (a.wrapper(depth, w, context, 'runs its command with arguments read from its input'))
        a.run(payload, depth + 1, context)
    },
  ),
)
handle('busybox toybox', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const applet = w.argv[1]
    if (applet === undefined || applet.startsWith('-')) return void a.command(depth, w, cap)
    if (w.dynamic?.[1]) return a.opaque(depth, w.argv.join(' '), 'the applet name is only known at run time')
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
    let i = 1
    for (;;) {
      const arg = argv[i]
      if (arg === undefined) break
      if (dynamic?.[i]) return a.opaque(depth, w.argv.join(' '), 'env is given a word only known at run time')
      const split = /^(?:-S|--split-string=?)(.*)$/s.exec(arg)
      if (split && (arg.startsWith('-S') || arg.startsWith('--split-string'))) {
        let text = split[1]!
        let consumed = 1
        if (text === '' && !arg.includes('=')) {
          text = argv[i + 1] ?? ''
          consumed = 2
        }
        const parts = /\\[_c]|\$/.test(text) ? undefined : staticWords(text)
        if (!parts)
          return a.opaque(depth, w.argv.join(' '), 'env -S is given a string tether cannot split statically')
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
      const scan = scanOptions([arg, ...argv.slice(i + 1, i + 2)], 0, spec)
      if (!scan.ok) return a.opaque(depth, w.argv.join(' '), scan.problem)
      if (scan.options.some((o) => o.name === '-P')) {
        return a.opaque(depth, w.argv.join(' '), 'env -P searches another path for the command')
      }
      i += scan.index
    }
    if (argv[i] === '--') i++
    changedEnvironment(a, words(argv, dynamic), i, depth, cap)
  },
})
handle('cross-env', {
  dynamicArgsOk: true,
  analyse: (a, w, depth, cap) => changedEnvironment(a, w, 1, depth, cap),
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
      else if (payload.dynamic)
        a.opaque(depth + 1, payload.argv.join(' '), 'watch runs a command line only known at run time')
      else a.script(payload.argv.join(' '), depth + 1, cap)
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
    if (!scan.ok) return a.opaque(depth, w.argv.join(' '), scan.problem)
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
    const scan = a.options(
      w,
      depth,
      '-4 -6 -A -a -C -f -G -g -K -k -M -N -n -q -s -T -t -V -v -X -x -Y -y ' +
        '-B= -b= -c= -D= -E= -e= -F= -I= -i= -J= -L= -l= -m= -O= -o= -p= -Q= -R= -S= -W= -w=',
    )
    if (!scan) return
    const context = cap ?? 'ssh runs it on another machine'
    if (!a.wrapper(depth, w, context, 'runs a command on another machine')) return
    if (scan.options.some((o) => o.name === '-F'))
      return a.opaque(depth + 1, w.argv.join(' '), 'ssh -F reads a configuration that can run commands')
    for (const o of scan.options) {
      if (o.name !== '-o') continue
      const match = /^\s*(\w+)\s*[= ]\s*(.*)$/s.exec(o.value ?? '')
      if (match && /^(proxycommand|localcommand|knownhostscommand|remotecommand)$/i.test(match[1]!))
        a.script(match[2]!, depth + 1, context)
    }
    const remote = w.argv.slice(scan.index + 1)
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
  else if (scan.index < w.argv.length) a.run(from(w, scan.index), depth + 1, cap)
  else a.opaque(depth + 1, w.argv.join(' '), 'the package program to run is not named')
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
        if (w.dynamic?.[i])
          return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given a word only known at run time`)
        const arg = w.argv[i]!
        if (/^(-C|--dir|--prefix|--cwd|-w|--workspace|--filter|-F)$/.test(arg)) i++
        else if (!arg.includes('=') && runners.includes(w.argv[i + 1] ?? '')) {
          return a.opaque(
            depth,
            w.argv.join(' '),
            `${arg} may take a value, so which subcommand ${w.argv[0]} runs is unclear`,
          )
        }
        i++
      }
      if (runners.includes(w.argv[i] ?? '') && !w.dynamic?.[i]) return runner(a, w, i + 1, depth, cap)
      if (w.dynamic)
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given words only known at run time`)
      a.command(depth, w, cap)
    },
  }
}

handle('npm', packageManager(['exec', 'x']))
handle('pnpm', packageManager(['exec', 'dlx']))
handle('yarn', packageManager(['exec', 'dlx']))
handle('uv', packageManager(['run']))
handle('pipx poetry pdm hatch rye pixi', packageManager(['run']))
handle('bundle', packageManager(['exec']))
