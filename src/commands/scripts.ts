/**
 * Shells, interpreters and shell builtins: `sh -c` scripts are parsed and judged command by command;
 * program text given to interpreters (`python -c`, `node -e`, awk programs that run commands) and builtins
 * that run code tether cannot see (`eval`, `source`, `trap`, …) become opaque nodes.
 */

import { clip } from '../present/index.js'
import {
  type Analysis,
  from,
  type Handler,
  handle,
  handlePattern,
  handlerName,
  type Words,
  words,
} from './engine.js'
import { risk, tabled } from './launch-options.js'
import { optionSpec, readArgs } from './options.js'
import { parseCommand, programOptions } from './programs.js'
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
    let interactive = false
    let stdin = false
    let i = 1
    for (; i < w.argv.length; i++) {
      const arg = w.argv[i]!
      if (w.dynamic?.[i]) return a.unclear(w, depth, 'the shell is given a word only known at run time', i)
      if (arg === '--' || arg === '-') {
        i++
        break
      }
      if (arg.startsWith('--')) {
        if (arg === '--login') login = true
        else if (arg === '--rcfile' || arg === '--init-file') {
          // Read by interactive shells only; what it runs is unknown here, so the call is asked about.
          a.opaque(depth, w.argv.join(' '), `${arg} makes the shell run another file`)
          i++
        }
        continue
      }
      if (!/^[-+]/.test(arg)) break
      for (const flag of arg.slice(1)) {
        if (flag === 'c') command = true
        else if (flag === 'l') login = true
        else if (flag === 'i') interactive = true
        else if (flag === 's') stdin = true
        else if (flag === 'o' || flag === 'O') i++
      }
    }
    const context =
      cap ??
      (login
        ? 'a login shell runs the profile scripts first'
        : interactive
          ? 'an interactive shell runs its startup files (~/.bashrc) first'
          : undefined)
    if (command) {
      const script = w.argv[i]
      if (script === undefined)
        return a.opaque(depth, w.argv.join(' '), 'the shell is told to run a script but given none')
      if (w.dynamic?.[i]) {
        a.opaque(depth, w.argv.join(' '), 'the script is only known at run time')
        return a.probeScript(script, depth + 1)
      }
      if (a.wrapper(depth, words(w.argv.slice(0, i + 1)), context, 'runs a shell script'))
        a.script(script, depth + 1, context)
      return
    }
    if (stdin || interactive || i >= w.argv.length) return readsStandardInput(a, w, depth, context)
    // `sh file args`: the same as running the file itself.
    if (a.wrapper(depth, w, context, 'runs a script file')) a.run(from(w, i), depth + 1, context)
  },
})

/** A shell reading its script from standard input: judged when the script says what that is. */
function readsStandardInput(a: Analysis, w: Words, depth: number, cap: string | undefined): void {
  const input = w.stdin
  if (input && !input.dynamic) {
    if (a.wrapper(depth, w, cap, 'runs the script it reads on standard input'))
      a.script(input.text, depth + 1, cap)
    return
  }
  a.opaque(
    depth,
    w.argv.join(' '),
    'the shell reads its commands from standard input',
    undefined,
    input?.text,
  )
  if (input) a.probeScript(input.text, depth + 1)
}

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
  /** Flags that run something other than a program from standard input (`node --test`). */
  standalone?: string[]
  /** `-m MODULE` runs a module as a program (python). */
  modules?: boolean
}

/** The module `-m MODULE` runs, and where its name is. */
function moduleRun(argv: readonly string[]): { name: string; index: number } | undefined {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '-m') return argv[i + 1] === undefined ? undefined : { name: argv[i + 1]!, index: i + 1 }
    if (!arg.startsWith('-')) return undefined
    if (/^-[WXQ]$/.test(arg)) i++
  }
  return undefined
}

/**
 * Interpreters. Program text on the command line (`python3 -c …`) is code tether does not reduce: the
 * command carries the code option as a risk (an allow rule must name it) and the code for whoever
 * approves it, and string literals in it that read as commands are judged for deny rules.
 */
function interpreter(spec: InterpreterSpec): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      const inline = inlineCode(w.argv, spec)
      if (inline) {
        const risks = [risk(inline.option, 'code')]
        if (a.command(depth, w, cap, { interpreter: true, risks, code: inline.code, unreduced: true }))
          probeCode(a, inline.code, depth + 1)
        return
      }
      if (spec.readsStdin && readsProgramFromStdin(w.argv, spec)) {
        const input = w.stdin
        if (input && !input.dynamic) {
          const risks = [risk('-', 'code', ['-'])]
          if (a.command(depth, w, cap, { interpreter: true, risks, code: input.text, unreduced: true }))
            probeCode(a, input.text, depth + 1)
          return
        }
        a.opaque(
          depth,
          w.argv.join(' '),
          `${w.argv[0]} reads its program from standard input`,
          undefined,
          input?.text,
        )
        if (input) probeCode(a, input.text, depth + 1)
        return
      }
      if (w.dynamic)
        return a.opaque(depth, w.argv.join(' '), `${w.argv[0]} is given words only known at run time`, w)
      // `python -m pytest …` is pytest: its options are read as pytest's.
      const module = spec.modules ? moduleRun(w.argv) : undefined
      if (module && programOptions(module.name)) {
        const view = words([module.name, ...w.argv.slice(module.index + 1)])
        return void tabled(a, view, depth, cap, module.name, { node: w, interpreter: true })
      }
      a.command(depth, w, cap, { interpreter: true })
    },
  }
}

/** String literals in program text that read as commands or argv lists, judged for deny rules. */
function probeCode(a: Analysis, code: string, depth: number): void {
  let tried = 0
  for (const list of code.matchAll(/\[\s*((?:(['"])(?:[^'"\\\n]|\\.)*\2\s*,?\s*)+)\]/g)) {
    if (tried++ >= 8) return
    const items = [...list[1]!.matchAll(/(['"])((?:[^'"\\\n]|\\.)*)\1/g)].map((m) => m[2]!)
    if (items.length > 1) a.probeWords(words(['argv', ...items]), 1, depth)
  }
  for (const literal of code.matchAll(/(['"`])((?:(?!\1)[^\\\n]|\\.)*)\1/g)) {
    if (tried++ >= 8) return
    const text = literal[2]!
    if (/[A-Za-z]/.test(text)) a.probeScript(text, depth)
  }
  // Editor and debugger commands run shell commands with `!` (`vim +'!rm x'`, `:!make`).
  for (const bang of code.matchAll(/(?:^|[\n|:])\s*!(.+)/g)) {
    if (tried++ >= 8) return
    a.probeScript(bang[1]!, depth)
  }
}

/** No program file among the operands (option values skipped) and no informational flag: stdin is the program. */
function readsProgramFromStdin(argv: readonly string[], spec: InterpreterSpec): boolean {
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '-') return true
    if (/^(-V|-v|-h|--version|--help)$/.test(arg) || spec.standalone?.includes(arg.split('=')[0]!))
      return false
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

/** The option that carries program text, and the text. */
function inlineCode(
  argv: readonly string[],
  spec: InterpreterSpec,
): { option: string; code: string } | undefined {
  const sub = argv[1] ?? ''
  if (spec.inlineSubcommands?.includes(sub)) return { option: sub, code: argv.slice(2).join(' ') }
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') break
    if (spec.plusCommands && arg.startsWith('+')) return { option: '+', code: arg.slice(1) }
    const eq = arg.indexOf('=')
    const long = (eq === -1 ? arg : arg.slice(0, eq)).toLowerCase()
    if (spec.inlineLong?.includes(long))
      return { option: long, code: eq === -1 ? (argv[i + 1] ?? '') : arg.slice(eq + 1) }
    if (!/^-[A-Za-z]/.test(arg) || arg.startsWith('--')) continue
    for (let j = 1; j < arg.length; j++) {
      const letter = arg[j]!
      if (spec.inline.includes(letter))
        return { option: `-${letter}`, code: arg.slice(j + 1) || (argv[i + 1] ?? '') }
      if (spec.valued?.includes(letter)) break
      if (!/[A-Za-z0-9]/.test(letter)) break
    }
  }
  return undefined
}

handle(
  'node nodejs',
  interpreter({
    inline: 'ep',
    inlineLong: ['--eval', '--print'],
    valued: 'rC',
    readsStdin: true,
    standalone: ['--test', '--run', '--check', '-c', '--v8-options', '--completion-bash', '--watch'],
  }),
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

handlePattern(
  /^(python|pypy)[0-9.]*$/,
  interpreter({ inline: 'c', valued: 'WXQm', readsStdin: true, standalone: ['-m'], modules: true }),
)

/**
 * awk: the program is read. Programs that run commands (`system`, pipes), write files (`print > f`) or
 * read the environment (`ENVIRON`) carry that as a risk and are asked about; what they run, where it can
 * be read, is judged for deny rules.
 */
handlePattern(/^((g|m|n)?awk|busybox-awk)$/, {
  analyse(a, w, depth, cap) {
    const parsed = parseCommand(w.argv, programOptions('awk')!)
    const sources: string[] = []
    let fromFile = false
    for (const found of parsed.options) {
      for (const def of found.defs) {
        if (def.canonical === '-e' && found.value !== undefined) sources.push(found.value)
        else if (def.effect === 'source') fromFile = true
      }
    }
    const operands = parsed.operands.map((i) => w.argv[i]!)
    if (sources.length === 0 && !fromFile && operands[0] !== undefined) sources.push(operands[0])
    const text = sources.join('\n')
    const risks = []
    const runs = /\bsystem\s*\(|@load|@include/.test(text) || /(^|[^|])\|(?!\|)/.test(text)
    if (runs) risks.push(risk('system', 'exec', ['system', '|']))
    if (/\bprintf?\b[^;{}\n]*>/.test(text)) risks.push(risk('>', 'write', ['>']))
    if (/\bENVIRON\b/.test(text)) risks.push(risk('ENVIRON', 'env', ['ENVIRON']))
    const judged = tabled(a, w, depth, cap, 'awk', {
      parsed,
      extraRisks: risks,
      skip: new Set(['-e']),
      code: text,
    })
    if (!judged) return
    if (fromFile) a.opaque(depth + 1, w.argv.join(' '), `${w.argv[0]} runs a program from a file`)
    if (runs) {
      a.opaque(depth + 1, clip(text, 80), `the ${w.argv[0]} program runs commands`, undefined, text)
      probeCode(a, text, depth + 1)
    }
  },
})

// ---- shell builtins that run code

/** `eval WORDS`: the words joined are a script; judged exactly when static, for deny rules otherwise. */
handle('eval', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const text = w.argv.slice(1).join(' ')
    if (!w.dynamic) {
      if (a.wrapper(depth, w, cap, 'runs its words as a script')) a.script(text, depth + 1, cap)
      return
    }
    a.opaque(
      depth,
      w.argv.join(' '),
      'eval runs a string only known at run time as a script',
      undefined,
      text,
    )
    a.probeScript(text, depth + 1)
  },
})

/** `trap BODY SIGNALS`: the body runs later, so it is judged as if it ran. */
handle('trap', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const args = w.argv.slice(1)
    if (args[0] === '--') args.shift()
    if (args.length < 2 || /^-[lp]?$/.test(args[0]!)) return void a.command(depth, w, cap)
    if (!a.wrapper(depth, w, cap, 'runs its body when a signal arrives')) return
    if (w.dynamic?.[w.argv.indexOf(args[0]!)]) {
      a.opaque(depth + 1, args[0]!, 'the trap body is only known at run time')
      a.probeScript(args[0]!, depth + 1)
    } else a.script(args[0]!, depth + 1, cap)
  },
})

/** `source FILE`: a command like any other (rules apply), never read-only: it runs a file's commands. */
handle('source .', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    // `. /dev/stdin <<< '…'`: the file is the script's own standard input.
    if (STDIN_FILES.has(w.argv[1] ?? '') && w.stdin) return readsStandardInput(a, w, depth, cap)
    a.command(depth, w, cap, {
      interpreter: true,
      unreduced: true,
      note: 'runs the commands of another file',
      code: `(the commands in ${w.argv[1] ?? 'a file'})`,
    })
  },
})
const STDIN_FILES = new Set(['/dev/stdin', '/dev/fd/0', '/proc/self/fd/0'])

/** `compgen`/`complete`: `-C` runs a command, `-F` a function, `-W` expands its word list. */
handle('compgen complete', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const parsed = readArgs(w.argv, 1, optionSpec(COMPGEN))
    const risks = []
    for (const found of parsed.options) {
      if (found.given === '-C') risks.push(risk('-C', 'sh'))
      if (found.given === '-F') risks.push(risk('-F', 'exec'))
      if (found.given === '-W' && /[$`]/.test(found.value ?? '')) risks.push(risk('-W', 'sh'))
    }
    if (!a.command(depth, w, cap, { risks: risks.length > 0 ? risks : undefined })) return
    for (const found of parsed.options) {
      const value = found.value ?? ''
      const dynamic = w.dynamic?.[found.valueIndex] ?? false
      if (found.given === '-C') {
        if (dynamic) a.opaque(depth + 1, value, 'compgen -C runs a command only known at run time')
        else a.script(value, depth + 1, cap)
      } else if (found.given === '-F') {
        a.opaque(
          depth + 1,
          value,
          'compgen -F calls a shell function, which tether judges where it is defined',
        )
      } else if (found.given === '-W' && /[$`]/.test(value)) {
        // The word list is expanded again when compgen runs: its substitutions run then.
        if (dynamic) a.opaque(depth + 1, value, 'compgen -W expands a word list only known at run time')
        else a.script(`: ${value}`, depth + 1, cap)
      }
    }
  },
})
const COMPGEN = '-o= -A= -G= -W= -F= -C= -X= -P= -S= -a -b -c -d -e -f -g -j -k -s -u -v -D -E -I -p -r'

/** `let EXPR…`: arithmetic; only expressions without variables are analysed. */
handle('let', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    if (w.dynamic || w.argv.slice(1).some((x) => /[A-Za-z_$`[]/.test(x)))
      return a.opaque(
        depth,
        w.argv.join(' '),
        'let evaluates arithmetic on variables, which can run commands through array subscripts',
      )
    a.command(depth, w, cap)
  },
})

function opaqueBuiltin(note: string, when?: (argv: readonly string[]) => boolean): Handler {
  return {
    dynamicArgsOk: true,
    analyse(a, w, depth, cap) {
      if (when && !when(w.argv)) return void a.command(depth, w, cap)
      a.opaque(depth, w.argv.join(' '), note)
    },
  }
}

/** `alias NAME=TEXT`: later uses of NAME run TEXT (when aliases are expanded), so TEXT is judged. */
handle('alias', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const definitions = w.argv.slice(1).filter((x) => x.includes('='))
    if (definitions.length === 0) return void a.command(depth, w, cap)
    a.opaque(depth, w.argv.join(' '), 'an alias changes what later command names run')
    for (const definition of definitions)
      a.probeScript(definition.slice(definition.indexOf('=') + 1), depth + 1)
  },
})
/** `hash -p FILE NAME`: later uses of NAME run FILE, which is judged for deny rules. */
handle('hash', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const at = w.argv.findIndex((x) => /^-\w*p/.test(x))
    if (at === -1) return void a.command(depth, w, cap)
    a.opaque(depth, w.argv.join(' '), 'hash -p changes which file a command name runs')
    const file = w.argv[at]!.length > 2 ? w.argv[at]!.slice(2) : w.argv[at + 1]
    if (file) a.probeWords(words([file], [w.dynamic?.[at + 1] ?? false]), 0, depth + 1)
  },
})
handle('enable', opaqueBuiltin('enable loads or switches shell builtins'))
handle('fc', opaqueBuiltin('fc re-runs commands from the shell history'))
handle('bind', opaqueBuiltin('bind can attach commands to keys'))
handle(
  'mapfile readarray',
  opaqueBuiltin('mapfile -C runs a callback', (argv) => argv.some((x) => /^-\w*C/.test(x))),
)
