/**
 * Shells, interpreters and shell builtins: `sh -c` scripts are parsed and judged command by command;
 * program text given to interpreters (`python -c`, `node -e`, awk programs that run commands) and builtins
 * that run code tether cannot see (`eval`, `source`, `trap`, …) become opaque nodes.
 */
import { from, type Handler, handle, handlePattern, handlerName, words } from './analysis.js'
import { runner } from './wrappers.js'

// ---- shells and interpreters

const SHELL_NAMES = 'sh bash zsh dash ksh mksh ash yash posh lksh rbash'
const SHELL_SET = new Set(SHELL_NAMES.split(' '))

export function isShell(name: string): boolean {
  return SHELL_SET.has(handlerName(name))
}

handle(SHELL_NAMES, {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    let command = false
    let login = false
    let stdin = false
    let i = 1
    for (; i < w.argv.length; i++) {
      const arg = w.argv[i]!
      if (w.dynamic?.[i])
        return a.opaque(depth, w.argv.join(' '), 'the shell is given a word only known at run time')
      if (arg === '--' || arg === '-') {
        i++
        break
      }
      if (arg.startsWith('--')) {
        if (arg === '--login') login = true
        else if (arg === '--rcfile' || arg === '--init-file')
          return a.opaque(depth, w.argv.join(' '), `${arg} makes the shell run another file`)
        continue
      }
      if (!/^[-+]/.test(arg)) break
      for (const flag of arg.slice(1)) {
        if (flag === 'c') command = true
        else if (flag === 'l') login = true
        else if (flag === 's' || flag === 'i') stdin = true
        else if (flag === 'o' || flag === 'O') i++
      }
    }
    const context = cap ?? (login ? 'a login shell runs the profile scripts first' : undefined)
    if (command) {
      const script = w.argv[i]
      if (script === undefined)
        return a.opaque(depth, w.argv.join(' '), 'the shell is told to run a script but given none')
      if (w.dynamic?.[i]) return a.opaque(depth, w.argv.join(' '), 'the script is only known at run time')
      if (a.wrapper(depth, words(w.argv.slice(0, i + 1)), context, 'runs a shell script'))
        a.script(script, depth + 1, context)
      return
    }
    if (stdin || i >= w.argv.length)
      return a.opaque(depth, w.argv.join(' '), 'the shell reads its commands from standard input')
    // `sh file args`: the same as running the file itself.
    if (a.wrapper(depth, w, context, 'runs a script file')) a.run(from(w, i), depth + 1, context)
  },
})

interface InterpreterSpec {
  /** Short option letters whose value is program text (`c` for python). */
  inline: string
  /** Long (or single-dash word) options whose value is program text. */
  inlineLong?: string[]
  /** Short option letters that take a value (so the letters after them are not options). */
  valued?: string
  /** Subcommands that take program text (`deno eval`). */
  inlineSubcommands?: string[]
  /** Program text in an argument starting with `+` (vim `+cmd`). */
  plusCommands?: boolean
  /** Whether the interpreter reads a program from standard input when given no file. */
  readsStdin?: boolean
}

function interpreter(spec: InterpreterSpec): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      const inline = inlineCode(w.argv, spec)
      if (inline) return a.opaque(depth, w.argv.join(' '), inline)
      if (spec.readsStdin && readsProgramFromStdin(w.argv, spec)) {
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} reads its program from standard input`)
      }
      if (w.dynamic)
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given words only known at run time`)
      a.command(depth, w, cap, { interpreter: true })
    },
  }
}

/** No program file among the operands (option values skipped) and no informational flag: stdin is the program. */
function readsProgramFromStdin(argv: readonly string[], spec: InterpreterSpec): boolean {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '-') return true
    if (/^(-V|-v|-h|--version|--help)$/.test(arg)) return false
    if (!arg.startsWith('-')) return false
    if (arg.startsWith('--')) continue
    const letters = arg.slice(1)
    for (let j = 0; j < letters.length; j++) {
      if (!spec.valued?.includes(letters[j]!)) continue
      // `-m module` and friends: the value is an operand of sorts (a module to run), so not stdin.
      if (letters[j] === 'm') return false
      if (j === letters.length - 1) i++
      break
    }
  }
  return true
}

function inlineCode(argv: readonly string[], spec: InterpreterSpec): string | undefined {
  const name = argv[0]
  if (spec.inlineSubcommands?.includes(argv[1] ?? ''))
    return `${name} ${argv[1]} runs program text given on the command line`
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') break
    if (spec.plusCommands && arg.startsWith('+')) return `${name} runs the editor commands in ${arg}`
    const long = arg.split('=')[0]!.toLowerCase()
    if (spec.inlineLong?.includes(long)) return `${name} ${long} runs program text given on the command line`
    if (!/^-[A-Za-z]/.test(arg) || arg.startsWith('--')) continue
    for (const letter of arg.slice(1)) {
      if (spec.inline.includes(letter))
        return `${name} -${letter} runs program text given on the command line`
      if (spec.valued?.includes(letter)) break
      if (!/[A-Za-z0-9]/.test(letter)) break
    }
  }
  return undefined
}

handle(
  'node nodejs',
  interpreter({ inline: 'ep', inlineLong: ['--eval', '--print'], valued: 'rC', readsStdin: true }),
)
handle('deno', interpreter({ inline: '', inlineLong: ['--eval'], inlineSubcommands: ['eval', 'repl'] }))
handle('bun', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    if (w.argv[1] === 'x') return runner(a, w, 2, depth, cap)
    BUN.analyse(a, w, depth, cap)
  },
})
const BUN = interpreter({ inline: 'ep', inlineLong: ['--eval', '--print'], valued: 'r' })
handle('ruby irb jruby', interpreter({ inline: 'e', valued: 'IrCEFKTWx', readsStdin: true }))
handle('perl', interpreter({ inline: 'eE', valued: 'IMmdDxil0F', readsStdin: true }))
handle('php', interpreter({ inline: 'rBREF', valued: 'cdztS', readsStdin: true }))
handle('lua luajit', interpreter({ inline: 'e', valued: 'l', readsStdin: true }))
handle('rscript', interpreter({ inline: 'e', inlineLong: ['--expr'] }))
handle('r', interpreter({ inline: 'e', inlineLong: ['--file'] }))
handle(
  'julia',
  interpreter({ inline: 'eE', inlineLong: ['--eval', '--print'], valued: 'JLCtp', readsStdin: true }),
)
handle('osascript', interpreter({ inline: 'e' }))
handle('tclsh wish expect', interpreter({ inline: 'c', readsStdin: true }))
handle(
  'pwsh powershell',
  interpreter({
    inline: 'ce',
    inlineLong: ['-command', '-encodedcommand', '-commandwithargs', '-cwa', '-ec', '--command'],
  }),
)
handle(
  'fish csh tcsh nu xonsh elvish',
  interpreter({ inline: 'c', inlineLong: ['--command'], readsStdin: true }),
)
handle('vi vim nvim view ex gvim', interpreter({ inline: 'cS', inlineLong: ['--cmd'], plusCommands: true }))
handle(
  'emacs',
  interpreter({ inline: 'lf', inlineLong: ['--eval', '--load', '--funcall', '--batch', '--script'] }),
)
handle('ed', interpreter({ inline: '', readsStdin: true }))
handle('less more most', interpreter({ inline: '', plusCommands: true }))

handlePattern(/^(python|pypy)[0-9.]*$/, interpreter({ inline: 'c', valued: 'WXQm', readsStdin: true }))

/** awk programs are data unless they can run commands (`system`, pipes) or write files (`print > f`). */
handlePattern(/^((g|m|n)?awk|busybox-awk)$/, {
  analyse(a, w, depth, cap) {
    let program: string | undefined
    const sources: string[] = []
    let i = 1
    for (; i < w.argv.length; i++) {
      const arg = w.argv[i]!
      if (arg === '--') {
        i++
        break
      }
      if (/^(-f|--file|-i|--include|-l|--load|-E|--exec)(=|$)/.test(arg) || /^-[fil]./.test(arg)) {
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} runs a program from a file`)
      }
      if (arg === '-e' || arg === '--source') {
        sources.push(w.argv[++i] ?? '')
        continue
      }
      if (/^(-v|-F)$/.test(arg)) {
        i++
        continue
      }
      if (!arg.startsWith('-') || arg === '-') break
    }
    if (sources.length === 0) program = w.argv[i]
    const text = [...sources, program ?? ''].join('\n')
    if (
      /\bsystem\s*\(|@load|@include/.test(text) ||
      /(^|[^|])\|(?!\|)/.test(text) ||
      /\bprintf?\b[^;{}\n]*>/.test(text)
    ) {
      return a.opaque(depth, w.argv.join(' '), `the ${w.argv[0]} program can run commands or write files`)
    }
    a.command(depth, w, cap)
  },
})

// ---- shell builtins that run code tether cannot see

function opaqueBuiltin(note: string, when?: (argv: readonly string[]) => boolean): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      if (when && !when(w.argv)) return void a.command(depth, w, cap)
      a.opaque(depth, w.argv.join(' '), note)
    },
  }
}

handle('eval', opaqueBuiltin('eval runs a string as a script, which is only known at run time'))
handle('source .', opaqueBuiltin('it runs the commands of another file'))
handle(
  'trap',
  opaqueBuiltin(
    'trap runs its body later, on a signal',
    (argv) => argv.length > 2 && argv[1] !== '-' && argv[1] !== '-p' && argv[1] !== '-l',
  ),
)
handle(
  'alias',
  opaqueBuiltin('an alias changes what later command names run', (argv) =>
    argv.slice(1).some((x) => x.includes('=')),
  ),
)
handle(
  'hash',
  opaqueBuiltin('hash -p changes which file a command name runs', (argv) =>
    argv.some((x) => /^-\w*p/.test(x)),
  ),
)
handle('enable', opaqueBuiltin('enable loads or switches shell builtins'))
handle('fc', opaqueBuiltin('fc re-runs commands from the shell history'))
handle('bind', opaqueBuiltin('bind can attach commands to keys'))
handle('let', opaqueBuiltin('let evaluates arithmetic, which can run commands through array subscripts'))
handle(
  'mapfile readarray',
  opaqueBuiltin('mapfile -C runs a callback', (argv) => argv.some((x) => /^-\w*C/.test(x))),
)
handle(
  'unshare nsenter firejail bwrap systemd-run parallel strace ltrace gdb valgrind perf lldb proot fakeroot ' +
    'fakechroot torsocks proxychains proxychains4 tmux screen at batch crontab numactl cpulimit prlimit setpriv ' +
    'runcon dbus-launch unbuffer caffeinate chrt sg newgrp xvfb-run entr nodemon concurrently npm-run-all ' +
    'run-p run-s dotenv direnv nix-shell',
  opaqueBuiltin('it runs other programs in ways tether does not analyse'),
)
