/**
 * `tether completion bash|zsh|fish`: a completion script for the shell, written from the program's own
 * commands and options, so it never lists a command that is not there. Commands and options complete; an
 * option's value completes as a file name.
 */
import type { Command, Option } from 'commander'
import { CliError } from '../errors.js'

const SHELLS = ['bash', 'zsh', 'fish'] as const
type Shell = (typeof SHELLS)[number]

export function registerCompletion(program: Command): void {
  program
    .command('completion')
    .description('Print a shell completion script: bash, zsh or fish.')
    .argument('<shell>', SHELLS.join(', '))
    .addHelpText(
      'after',
      [
        '',
        'Install:',
        "  bash  echo 'source <(tether completion bash)' >> ~/.bashrc",
        "  zsh   echo 'source <(tether completion zsh)' >> ~/.zshrc",
        '  fish  tether completion fish > ~/.config/fish/completions/tether.fish',
      ].join('\n'),
    )
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) {
        throw new CliError(`no completion for ${shell}: choose ${SHELLS.join(', ')}`, 2)
      }
      process.stdout.write(completionScript(program, shell as Shell))
    })
}

/** One command of the tree: its path from the top, its subcommands and its options. */
interface Node {
  path: string
  description: string
  commands: Array<{ name: string; description: string }>
  options: Array<{ flag: string; description: string; takesValue: boolean }>
}

function nodes(command: Command, path = ''): Node[] {
  const options = [...command.options, helpOption()].map((option: Option) => ({
    flag: option.long ?? option.short ?? '',
    description: option.description,
    takesValue: option.required || option.optional,
  }))
  const children = command.commands.filter((c) => !(c as Command & { _hidden?: boolean })._hidden)
  return [
    {
      path,
      description: command.description(),
      commands: children.map((c) => ({ name: c.name(), description: c.description() })),
      options: options.filter((o) => o.flag),
    },
    ...children.flatMap((child) => nodes(child, path ? `${path} ${child.name()}` : child.name())),
  ]
}

/** `--help`, which commander gives every command without listing it among its options. */
function helpOption(): Option {
  return { long: '--help', description: 'show help', required: false, optional: false } as Option
}

export function completionScript(program: Command, shell: Shell): string {
  const tree = nodes(program)
  switch (shell) {
    case 'bash':
      return bash(tree)
    case 'zsh':
      return zsh(tree)
    case 'fish':
      return fish(tree)
  }
}

/** A word as a POSIX shell's single-quoted string. */
const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`

/** A word as fish's single-quoted string (fish escapes `\` and `'` inside one). */
const fishQuoted = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`

/** The shell function that tells, from the words typed so far, which command they are in. */
function wordsCase(tree: Node[], indent: string): string {
  return tree
    .map(
      (node) =>
        `${indent}${quoted(node.path)}) printf '%s\\n' ${[...node.commands.map((c) => c.name), ...node.options.map((o) => o.flag)].map(quoted).join(' ')} ;;`,
    )
    .join('\n')
}

const valueOptions = (tree: Node[]) =>
  [...new Set(tree.flatMap((node) => node.options.filter((o) => o.takesValue).map((o) => o.flag)))].sort()

function bash(tree: Node[]): string {
  return `# tether completion for bash: source <(tether completion bash)
_tether_words() {
  case "$1" in
${wordsCase(tree, '    ')}
  esac
}
_tether() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" path="" word i
  case " ${valueOptions(tree).join(' ')} " in
    *" $prev "*) COMPREPLY=(); return ;;
  esac
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    [[ $word == -* ]] && continue
    if _tether_words "$path" | grep -qxF -- "$word"; then path="\${path:+$path }$word"; fi
  done
  COMPREPLY=($(compgen -W "$(_tether_words "$path")" -- "$cur"))
}
complete -o default -F _tether tether
`
}

function zsh(tree: Node[]): string {
  return `#compdef tether
# tether completion for zsh: source <(tether completion zsh)
_tether_words() {
  case "$1" in
${wordsCase(tree, '    ')}
  esac
}
_tether() {
  local path="" word
  local -a values
  values=(${valueOptions(tree).join(' ')})
  if (( \${values[(Ie)\${words[CURRENT-1]}]} )); then _files; return; fi
  for word in "\${(@)words[2,CURRENT-1]}"; do
    [[ $word == -* ]] && continue
    if _tether_words "$path" | grep -qxF -- "$word"; then path="\${path:+$path }$word"; fi
  done
  compadd -- \${(f)"$(_tether_words "$path")"}
}
if (( $+functions[compdef] )); then compdef _tether tether; fi
`
}

function fish(tree: Node[]): string {
  const lines = [
    '# tether completion for fish: tether completion fish > ~/.config/fish/completions/tether.fish',
    'function __tether_path',
    '    set -l words (commandline -opc)',
    '    set -l path',
    '    for word in $words[2..-1]',
    '        string match -q -- "-*" $word; and continue',
    '        if contains -- $word (__tether_commands (string join " " $path))',
    '            set path $path $word',
    '        end',
    '    end',
    '    string join " " $path',
    'end',
    'function __tether_at',
    '    set -l path (__tether_path)',
    '    test "$path" = "$argv[1]"',
    'end',
    'function __tether_commands',
    '    switch "$argv[1]"',
    ...tree.map(
      (node) =>
        `        case ${fishQuoted(node.path)}\n            ${node.commands.length ? `printf '%s\\n' ${node.commands.map((c) => fishQuoted(c.name)).join(' ')}` : 'true'}`,
    ),
    '    end',
    'end',
    'complete -c tether -f',
  ]
  for (const node of tree) {
    const when = `-n ${fishQuoted(`__tether_at ${fishQuoted(node.path)}`)}`
    for (const command of node.commands) {
      lines.push(
        `complete -c tether ${when} -a ${fishQuoted(command.name)} -d ${fishQuoted(command.description)}`,
      )
    }
    for (const option of node.options) {
      const flag = option.flag.startsWith('--') ? `-l ${option.flag.slice(2)}` : `-s ${option.flag.slice(1)}`
      lines.push(
        `complete -c tether ${when} ${flag}${option.takesValue ? ' -r -F' : ''} -d ${fishQuoted(firstSentence(option.description))}`,
      )
    }
  }
  return `${lines.join('\n')}\n`
}

function firstSentence(text: string): string {
  return (text.split(/[;(]/)[0] ?? '').trim()
}
