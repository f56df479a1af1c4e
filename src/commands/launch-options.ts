/**
 * Options that change what an allowed program does. A command carrying one (an option that runs another
 * program, writes a file it names, deletes, changes the configuration or repository it acts on, or reaches
 * the network) gets a `risk` on its node: an allow rule covers it only when the rule names that option.
 * What such an option launches becomes a node of its own (judged, so a denied launch denies the call);
 * files it writes or reads become `file` nodes.
 *
 * Most programs are read with their table from programs.ts; find, tar, sed and awk need more (git: git.ts).
 */
import { type Analysis, handle, type Risk, type Words, words } from './engine.js'
import type { FoundOption, OptionDef, OptionEffect } from './options.js'
import { type ParsedCommand, parseCommand, programOptions } from './programs.js'
import { sedEffects } from './sed.js'

const WHAT: Readonly<Record<OptionEffect, string | undefined>> = {
  run: 'runs another program',
  sh: 'runs a shell command',
  code: 'runs program text given on the command line',
  source: 'runs code from a file or module it names',
  exec: 'runs other programs',
  write: 'writes a file it names',
  read: undefined,
  delete: 'deletes files',
  config: 'changes the configuration, directory or repository it acts on',
  net: 'reaches the network',
  env: 'prints the environment',
}

export function risk(option: string, effect: OptionEffect, names: readonly string[] = [option]): Risk {
  return { option, names, what: WHAT[effect] ?? 'changes what it does' }
}

function optionRisk(def: OptionDef, given: string): Risk | undefined {
  if (!def.effect || def.effect === 'read') return undefined
  // `--exec-path` alone only prints the path; with a value it moves where git finds its helpers.
  return risk(def.canonical, def.effect, given === def.canonical ? def.names : [...def.names, given])
}

/** How a program's options are judged beyond the table (the handler does the rest itself). */
interface TabledOptions {
  /** Options the caller handles itself (by canonical name). */
  skip?: ReadonlySet<string>
  forms?: readonly string[]
  extraRisks?: readonly Risk[]
  code?: string
  interpreter?: boolean
  /** The command already read with the program's table. */
  parsed?: ParsedCommand
  /** The words the node shows, when the options are read from another view of them (`python -m pytest`). */
  node?: Words
}

/**
 * Judges a command with its program's option table: a command node carrying the risks of its options (and
 * subcommand), then what those options launch, write and read. Returns the parse, or undefined when the
 * program has no table or the node could not be added.
 */
export function tabled(
  a: Analysis,
  w: Words,
  depth: number,
  cap: string | undefined,
  name: string,
  extra: TabledOptions = {},
): ParsedCommand | undefined {
  const program = programOptions(name)
  if (!program) {
    a.command(depth, w, cap, extra)
    return undefined
  }
  const parsed = extra.parsed ?? parseCommand(w.argv, program)
  const risks: Risk[] = extra.extraRisks ? [...extra.extraRisks] : []
  const used: Array<[FoundOption, OptionDef]> = []
  for (const found of parsed.options) {
    for (const def of found.defs) {
      if (!def.effect || extra.skip?.has(def.canonical)) continue
      const r = optionRisk(def, found.given)
      if (r && !(def.canonical === '--exec-path' && found.value === undefined)) risks.push(r)
      used.push([found, def])
    }
  }
  if (parsed.sub !== undefined && parsed.subEffect) risks.push(risk(parsed.sub, parsed.subEffect))
  if (program.assignments) {
    for (const i of parsed.operands) {
      const eq = w.argv[i]!.indexOf('=')
      if (eq > 0 && /^[A-Za-z_.][A-Za-z0-9_.]*$/.test(w.argv[i]!.slice(0, eq))) {
        risks.push({
          option: w.argv[i]!.slice(0, eq + 1),
          names: [w.argv[i]!.slice(0, eq + 1)],
          what: 'overrides a variable, which can change the commands it runs',
        })
      }
    }
  }
  const unclear = w.dynamic && mayBeOption(w, parsed)
  if (unclear) {
    risks.push({
      option: unclear,
      names: [],
      what: 'has a word only known at run time that could be an option changing what it does',
    })
  }
  const added = a.command(depth, extra.node ?? w, cap, {
    forms: extra.forms,
    risks: risks.length > 0 ? risks : undefined,
    code: extra.code,
    interpreter: extra.interpreter,
    // Deny and ask rules that name options read them from here rather than parsing the line again.
    parsed: extra.node ? undefined : parsed,
  })
  if (!added) return undefined
  for (const [found, def] of used) launch(a, w, found, def.effect!, depth + 1, cap)
  return parsed
}

/** A run-time word standing where an option could be, in a program with options that matter. */
function mayBeOption(w: Words, parsed: ParsedCommand): string | undefined {
  const end = w.argv.indexOf('--')
  for (let i = 1; i < w.argv.length && (end === -1 || i < end); i++) {
    if (!w.dynamic?.[i] || parsed.options.some((o) => o.valueIndex === i && o.index !== i)) continue
    const glob = w.globs?.[i] ?? '*'
    if (glob.startsWith('*') || glob.startsWith('-')) return w.argv[i]
  }
  return undefined
}

/** What one option's value does: a program or command line it runs, a file it writes or reads. */
function launch(
  a: Analysis,
  w: Words,
  found: FoundOption,
  effect: OptionEffect,
  depth: number,
  cap: string | undefined,
): void {
  const value = found.value
  if (value === undefined) return
  const dynamic = w.dynamic?.[found.valueIndex] ?? false
  switch (effect) {
    case 'run':
      a.run(words([value], [dynamic]), depth, cap)
      break
    case 'sh':
      if (dynamic) {
        a.opaque(depth, value, `${found.given} runs a command only known at run time`)
        a.probeScript(value, depth + 1)
      } else a.script(value, depth, cap)
      break
    case 'write':
    case 'read':
      a.file(depth, effect, value, dynamic, cap)
      break
  }
}

function handleTabled(names: string): void {
  for (const name of names.split(' ')) {
    handle(name, {
      dynamicArgsOk: true,
      analyse: (a, w, depth, cap) => void tabled(a, w, depth, cap, name),
    })
  }
}

handleTabled(
  'rm cp mv ln chmod chown chgrp rmdir shred grep egrep fgrep rg diff diff3 sdiff date tree xxd base64 file ' +
    'fd fdfind sort rsync man script make gmake cargo pytest py.test zip hostname nc netcat ncat split',
)

// ---- scp and sftp: `-o ProxyCommand=…` runs a command locally

handle('scp sftp', {
  analyse(a, w, depth, cap) {
    const parsed = parseCommand(w.argv, programOptions('scp')!)
    const proxies = sshCommandOptions(parsed.options)
    const risks = proxies.map(([name]) => risk('-o', 'sh', ['-o', name]))
    if (!tabled(a, w, depth, cap, 'scp', { extraRisks: risks, parsed })) return
    for (const [, command] of proxies) a.script(command, depth + 1, cap)
  },
})

/** The `-o Name=command` options of ssh-like tools that run a command locally. */
export function sshCommandOptions(options: readonly FoundOption[]): Array<[string, string]> {
  const out: Array<[string, string]> = []
  for (const found of options) {
    if (found.given !== '-o') continue
    const match = /^\s*(\w+)\s*[= ]\s*(.*)$/s.exec(found.value ?? '')
    if (match && /^(proxycommand|localcommand|knownhostscommand|remotecommand)$/i.test(match[1]!))
      out.push([match[1]!, match[2]!])
  }
  return out
}

// ---- sed: its script is read (`e`, `w`, `r`, `s///e`, `s///w`); `-i` writes the files it edits

handle('sed gsed', {
  analyse(a, w, depth, cap) {
    const parsed = parseCommand(w.argv, programOptions('sed')!)
    const scripts: string[] = []
    let inPlace = false
    let fromFile = false
    for (const found of parsed.options) {
      for (const def of found.defs) {
        if (def.canonical === '-e') scripts.push(found.value ?? '')
        else if (def.canonical === '-i') inPlace = true
        else if (def.canonical === '-f') fromFile = true
      }
    }
    const operands = parsed.operands.map((i) => w.argv[i]!)
    if (scripts.length === 0 && !fromFile && operands.length > 0) scripts.push(operands.shift()!)
    const effects = scripts.map(sedEffects)
    const risks: Risk[] = []
    if (effects.some((e) => e.runs || e.commands.length > 0)) risks.push(risk('e', 'exec', ['e']))
    if (effects.some((e) => e.writes.length > 0)) risks.push(risk('w', 'write', ['w']))
    // The script itself is analysed, so `-e` is no risk; `-f` is (the file's script is not read here).
    if (!tabled(a, w, depth, cap, 'sed', { parsed, extraRisks: risks, skip: new Set(['-e']) })) return
    if (fromFile) a.opaque(depth + 1, w.argv.join(' '), 'sed -f runs a script from a file')
    for (const [n, e] of effects.entries()) {
      const script = scripts[n]!
      if (e.unreadable) a.opaque(depth + 1, script, `the sed script cannot be read: ${e.unreadable}`)
      if (e.runs)
        a.opaque(depth + 1, script, 'the sed script runs the text it edits as a command (s///e or e)')
      for (const command of e.commands) a.script(command, depth + 1, cap)
      for (const file of e.writes) a.file(depth + 1, 'write', file, false, cap)
      for (const file of e.reads) a.file(depth + 1, 'read', file, false, cap)
    }
    if (inPlace) for (const file of operands) a.file(depth + 1, 'write', file, false, cap)
  },
})

// ---- go: single-dash flags, subcommands that run code or reach the network

handle('go', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    // `go test … -args …`: what follows goes to the test binary, not to go.
    const end = w.argv.indexOf('-args')
    if (end === -1) return void tabled(a, w, depth, cap, 'go')
    tabled(a, { ...w, argv: w.argv.slice(0, end) }, depth, cap, 'go')
  },
})

// ---- find: predicates are single-dash words; -exec runs a command on every file found

const FIND_WRITES = /^-(fprint|fprint0|fls|fprintf)$/
const FIND_EXECS = /^-(exec|execdir|ok|okdir)$/

handle('find', {
  analyse(a, w, depth, cap) {
    const argv = w.argv
    const risks: Risk[] = []
    for (const arg of argv) {
      if (arg === '-delete') risks.push(risk('-delete', 'delete'))
      else if (FIND_WRITES.test(arg)) risks.push(risk(arg, 'write'))
      else if (FIND_EXECS.test(arg)) risks.push(risk(arg, 'exec'))
    }
    if (!a.command(depth, w, cap, risks.length > 0 ? { risks } : undefined)) return
    for (let i = 1; i < argv.length; i++) {
      const arg = argv[i]!
      if (FIND_EXECS.test(arg)) {
        let end = i + 1
        while (end < argv.length && argv[end] !== ';' && argv[end] !== '+') end++
        const context = cap ?? `find ${arg} runs it on every file found`
        a.run(words(argv.slice(i + 1, end)), depth + 1, context)
        i = end
      } else if (FIND_WRITES.test(arg)) {
        a.file(depth + 1, 'write', argv[i + 1] ?? '', false, cap)
        i += arg === '-fprintf' ? 2 : 1
      }
    }
  },
})

// ---- tar: `--checkpoint-action=exec=…` and old-style bundles (`tar cIf prog file`)

handle('tar bsdtar gtar', {
  analyse(a, w, depth, cap) {
    const argv = w.argv
    const parsed = parseCommand(argv, programOptions('tar')!)
    const scripts: string[] = []
    const risks: Risk[] = []
    for (const found of parsed.options) {
      // Only the `exec=` action runs a command; `dot`, `echo` and the others print.
      const exec = /^exec=(.*)$/s.exec(found.value ?? '')
      if (!exec || !found.defs.some((d) => d.canonical === '--checkpoint-action')) continue
      scripts.push(exec[1]!)
      risks.push(risk('--checkpoint-action', 'sh', ['--checkpoint-action', found.given]))
    }
    // Old style: letters without a dash take their values from the next words in order.
    const bundle = argv[1]
    if (bundle && /^[A-Za-z]+$/.test(bundle)) {
      let next = 2
      for (const letter of bundle) {
        if (!'bfgCIFKLNTVX'.includes(letter)) continue
        if ('IF'.includes(letter) && argv[next] !== undefined) {
          scripts.push(argv[next]!)
          risks.push(risk(`-${letter}`, 'sh'))
        }
        next++
      }
    }
    const judged = tabled(a, w, depth, cap, 'tar', {
      extraRisks: risks,
      skip: new Set(['--checkpoint-action']),
      parsed,
    })
    if (judged) for (const script of scripts) a.script(script, depth + 1, cap)
  },
})

// ---- programs that can print the environment

/** `jq env`, `jq '$ENV.TOKEN'`: jq programs can read the environment. */
handle('jq', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const parsed = parseCommand(w.argv, programOptions('jq')!)
    const fromFile = parsed.options.some((o) => o.defs[0]?.canonical === '-f')
    const program = fromFile ? undefined : w.argv[parsed.operands[0] ?? -1]
    const env = program !== undefined && /(^|[^\w$])(env|\$ENV|\$__prog_args)\b/.test(program)
    tabled(a, w, depth, cap, 'jq', { parsed, extraRisks: env ? [risk('env', 'env', ['env', '$ENV'])] : [] })
  },
})

/** `ps e`, `ps auxe`: BSD-style `e` prints each process's environment. */
handle('ps', {
  dynamicArgsOk: true,
  analyse(a, w, depth, cap) {
    const env = w.argv.slice(1).some((x) => /^[A-Za-z]*e[A-Za-z]*$/.test(x))
    a.command(depth, w, cap, env ? { risks: [risk('e', 'env', ['e'])] } : undefined)
  },
})
