/**
 * Programs whose options launch other programs or read and write files: git (`-c core.pager=…`,
 * `rebase --exec`, …), find (`-exec`, `-fprint`), tar, rg, sort, sed, man, rsync, scp, zip. The launched
 * commands become nodes of their own; written files become `file` nodes.
 */
import { type Analysis, type Handler, handle, words } from './analysis.js'
import { longOptionValues, shortOptionValues } from './options.js'
import { sedEffects } from './sed.js'

// ---- programs whose options launch other programs

const GIT_LAUNCH_KEYS =
  /^(core\.(pager|editor|sshcommand|askpass|fsmonitor|gitproxy|alternaterefscommand)|sequence\.editor|diff\.external|pager\..+|credential\.(.+\.)?helper|gpg\.(.+\.)?program|.+\.(textconv|command|cmd|driver|clean|smudge|process|uploadpack|receivepack)|uploadpack\.packobjectshook|interactive\.difffilter)$/
const GIT_REDIRECT_KEYS =
  /^(core\.hookspath|core\.worktree|init\.templatedir|include\.path|includeif\..+|protocol\..+|url\..+|safe\..+)$/

/** One `-c key=value` of git: a value that names a program is a launch. */
function gitConfig(a: Analysis, pair: string, depth: number, cap: string | undefined): void {
  const eq = pair.indexOf('=')
  const key = (eq === -1 ? pair : pair.slice(0, eq)).toLowerCase()
  const value = eq === -1 ? '' : pair.slice(eq + 1)
  if (key.startsWith('alias.')) {
    if (value.startsWith('!')) a.script(value.slice(1), depth, cap)
    else a.script(`git ${value}`, depth, cap)
  } else if (GIT_REDIRECT_KEYS.test(key)) {
    a.opaque(depth, pair, `git -c ${key} changes where git finds hooks, configuration or transports`)
  } else if (GIT_LAUNCH_KEYS.test(key) && !(key === 'core.fsmonitor' && /^(true|false)$/i.test(value))) {
    if (value) a.script(value, depth, cap)
  }
}

handle('git', {
  analyse(a, w, depth, cap) {
    const argv = w.argv
    const launches: Array<() => void> = []
    let i = 1
    for (; i < argv.length; i++) {
      const arg = argv[i]!
      if (arg === '-c' || arg === '--config') {
        const pair = argv[++i] ?? ''
        launches.push(() => gitConfig(a, pair, depth + 1, cap))
      } else if (arg.startsWith('-c') && arg.length > 2) {
        launches.push(() => gitConfig(a, arg.slice(2), depth + 1, cap))
      } else if (/^--config-env(=|$)/.test(arg)) {
        const pair = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : (argv[++i] ?? '')
        launches.push(() =>
          a.opaque(depth + 1, pair, 'git --config-env takes a configuration value from the environment'),
        )
      } else if (/^--exec-path=/.test(arg)) {
        launches.push(() =>
          a.opaque(depth + 1, arg, 'git --exec-path runs git helpers from another directory'),
        )
      } else if (
        /^(-C|--git-dir|--work-tree|--namespace|--super-prefix|--list-cmds|--attr-source)$/.test(arg)
      ) {
        i++
      } else if (arg !== '' && !arg.startsWith('-')) break
    }
    const sub = argv[i]
    const rest = argv.slice(i + 1)
    const forms = i > 1 && sub !== undefined ? [['git', sub, ...rest].join(' ')] : undefined
    if (!a.command(depth, w, cap, forms ? { forms } : {})) return
    for (const launch of launches) launch()
    const scripts: string[] = []
    switch (sub) {
      case 'rebase':
        scripts.push(...longOptionValues(rest, '--exec'), ...shortOptionValues(rest, 'x', 'xsSXCo'))
        break
      case 'bisect':
        if (rest[0] === 'run') scripts.push(rest.slice(1).join(' '))
        break
      case 'submodule': {
        const at = rest.indexOf('foreach')
        if (at !== -1)
          scripts.push(
            rest
              .slice(at + 1)
              .filter((x) => !/^(--recursive|-q|--quiet)$/.test(x))
              .join(' '),
          )
        break
      }
      case 'difftool':
      case 'mergetool':
        scripts.push(...longOptionValues(rest, '--extcmd'), ...shortOptionValues(rest, 'x', 'xty'))
        break
      case 'filter-branch':
        for (const filter of ['env', 'tree', 'index', 'parent', 'msg', 'commit', 'tag-name']) {
          scripts.push(...longOptionValues(rest, `--${filter}-filter`))
        }
        scripts.push(...longOptionValues(rest, '--setup'))
        break
      case 'grep':
        scripts.push(...longOptionValues(rest, '--open-files-in-pager'))
        for (const arg of rest) if (/^-O./.test(arg)) scripts.push(arg.slice(2))
        break
      case 'clone':
        for (const pair of [
          ...longOptionValues(rest, '--config'),
          ...shortOptionValues(rest, 'c', 'cbojuC'),
        ]) {
          gitConfig(a, pair, depth + 1, cap)
        }
        if (longOptionValues(rest, '--template').length > 0)
          a.opaque(depth + 1, sub, 'git clone --template installs hooks from another directory')
        break
    }
    if (sub && /^(fetch|pull|clone|ls-remote|archive|push|send-pack|fetch-pack|remote)$/.test(sub)) {
      scripts.push(
        ...longOptionValues(rest, '--upload-pack'),
        ...longOptionValues(rest, '--receive-pack'),
        ...longOptionValues(rest, '--exec'),
      )
      if (sub === 'ls-remote' || sub === 'clone' || sub === 'fetch')
        scripts.push(...shortOptionValues(rest, 'u', 'uobjc'))
    }
    for (const script of scripts) a.script(script, depth + 1, cap)
  },
})

handle('find', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv
    for (let i = 1; i < argv.length; i++) {
      const arg = argv[i]!
      if (/^-(exec|execdir|ok|okdir)$/.test(arg)) {
        let end = i + 1
        while (end < argv.length && argv[end] !== ';' && argv[end] !== '+') end++
        const context = cap ?? `find ${arg} runs it on every file found`
        a.run(words(argv.slice(i + 1, end)), depth + 1, context)
        i = end
      } else if (/^-(fprint|fprint0|fls|fprintf)$/.test(arg)) {
        a.file(depth + 1, 'write', argv[i + 1] ?? '', false, cap)
        i += arg === '-fprintf' ? 2 : 1
      }
    }
  },
})

handle('tar bsdtar gtar', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    const scripts = [
      ...longOptionValues(argv, '--to-command'),
      ...longOptionValues(argv, '--use-compress-program'),
      ...longOptionValues(argv, '--rsh-command'),
      ...longOptionValues(argv, '--info-script'),
      ...longOptionValues(argv, '--new-volume-script'),
      ...shortOptionValues(argv, 'I', 'bfgCIFKLNTVX'),
      ...shortOptionValues(argv, 'F', 'bfgCIFKLNTVX'),
    ]
    for (const action of longOptionValues(argv, '--checkpoint-action')) {
      const exec = /^exec=(.*)$/s.exec(action)
      if (exec) scripts.push(exec[1]!)
    }
    // Old-style `tar cIf prog file`: letters without a dash take their values from the next words in order.
    const bundle = argv[0]
    if (bundle && /^[A-Za-z]+$/.test(bundle)) {
      let next = 1
      for (const letter of bundle) {
        if (!'bfgCIFKLNTVX'.includes(letter)) continue
        if ('IF'.includes(letter) && argv[next] !== undefined) scripts.push(argv[next]!)
        next++
      }
    }
    for (const script of scripts) a.script(script, depth + 1, cap)
  },
})

handle('rg', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    for (const program of [...longOptionValues(argv, '--pre'), ...longOptionValues(argv, '--hostname-bin')]) {
      a.run(words([program]), depth + 1, cap)
    }
  },
})

handle('sort', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    for (const program of longOptionValues(argv, '--compress-program'))
      a.run(words([program]), depth + 1, cap)
    for (const file of [...longOptionValues(argv, '--output'), ...shortOptionValues(argv, 'o', 'ktoST')]) {
      a.file(depth + 1, 'write', file, false, cap)
    }
  },
})

handle('sed gsed', {
  analyse(a, w, depth, cap) {
    const argv = w.argv
    const scripts: string[] = []
    const operands: string[] = []
    let inPlace = false
    for (let i = 1; i < argv.length; i++) {
      const arg = argv[i]!
      if (arg === '--') {
        operands.push(...argv.slice(i + 1))
        break
      }
      if (/^--(expression)(=|$)/.test(arg))
        scripts.push(arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : (argv[++i] ?? ''))
      else if (/^--(file)(=|$)/.test(arg))
        return a.opaque(depth, argv.join(' '), 'sed -f runs a script from a file')
      else if (/^--in-place/.test(arg)) inPlace = true
      else if (/^--line-length$/.test(arg)) i++
      else if (arg.startsWith('--')) continue
      else if (arg.startsWith('-') && arg.length > 1) {
        for (let j = 1; j < arg.length; j++) {
          const letter = arg[j]!
          if (letter === 'e' || letter === 'l') {
            const value = arg.slice(j + 1) || argv[++i] || ''
            if (letter === 'e') scripts.push(value)
            break
          }
          if (letter === 'f') return a.opaque(depth, argv.join(' '), 'sed -f runs a script from a file')
          if (letter === 'i') {
            inPlace = true
            break
          }
        }
      } else operands.push(arg)
    }
    if (scripts.length === 0 && operands.length > 0) scripts.push(operands.shift()!)
    if (!a.command(depth, w, cap)) return
    for (const script of scripts) {
      const effects = sedEffects(script)
      if (effects.unreadable)
        a.opaque(depth + 1, script, `the sed script cannot be read: ${effects.unreadable}`)
      if (effects.runs) a.opaque(depth + 1, script, 'the sed script runs commands (the e command or flag)')
      for (const file of effects.writes) a.file(depth + 1, 'write', file, false, cap)
      for (const file of effects.reads) a.file(depth + 1, 'read', file, false, cap)
    }
    if (inPlace) for (const file of operands) a.file(depth + 1, 'write', file, false, cap)
  },
})

/**
 * A program judged as it stands, whose options name shell commands it runs: each `[long, letter]` is one
 * option (`--pager=CMD`, `-P CMD`); `valued` lists the option letters that take a value.
 */
function runsScriptsFrom(options: ReadonlyArray<readonly [string, string]>, valued: string): Handler {
  return {
    analyse(a, w, depth, cap) {
      if (!a.command(depth, w, cap)) return
      const argv = w.argv.slice(1)
      for (const [long, letter] of options) {
        for (const command of [...longOptionValues(argv, long), ...shortOptionValues(argv, letter, valued)]) {
          a.script(command, depth + 1, cap)
        }
      }
    },
  }
}

handle(
  'man',
  runsScriptsFrom(
    [
      ['--pager', 'P'],
      ['--html', 'H'],
    ],
    'PHCLMmSsER',
  ),
)
handle('rsync', runsScriptsFrom([['--rsh', 'e']], 'eBfTM'))
handle('script', runsScriptsFrom([['--command', 'c']], 'cEIOBTmot'))

handle('scp sftp', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    for (const program of shortOptionValues(argv, 'S', 'SFicDJloPpRsX'))
      a.run(words([program]), depth + 1, cap)
    for (const option of shortOptionValues(argv, 'o', 'SFicDJloPpRsX')) {
      const match = /^\s*(\w+)\s*[= ]\s*(.*)$/s.exec(option)
      if (match && /^(proxycommand|localcommand|knownhostscommand)$/i.test(match[1]!))
        a.script(match[2]!, depth + 1, cap)
    }
    if (shortOptionValues(argv, 'F', 'SFicDJloPpRsX').length > 0)
      a.opaque(depth + 1, w.argv.join(' '), `${w.argv[0]} -F reads a configuration that can run commands`)
  },
})

handle('zip', {
  analyse(a, w, depth, cap) {
    if (!a.command(depth, w, cap)) return
    const argv = w.argv.slice(1)
    const commands = [...longOptionValues(argv, '--unzip-command')]
    const tt = argv.indexOf('-TT')
    if (tt !== -1 && argv[tt + 1] !== undefined) commands.push(argv[tt + 1]!)
    for (const command of commands) a.script(command, depth + 1, cap)
  },
})
