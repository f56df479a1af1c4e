/**
 * Property-based tests: a command denied plainly stays denied under any mix of transparent wrappers,
 * shells, quotings and whitespace; what cannot be analysed is never allowed; the precompiled rule index
 * agrees with a rule-by-rule glob match; and what tether shows a human reads back as exactly the argv.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { globMatches } from '../../../src/commands/glob.js'
import { parseScript } from '../../../src/commands/shell/parse.js'
import { Policy, quoteWord } from '../../../src/policy/index.js'
import { ALL_EFFECTS, RuleIndex } from '../../../src/policy/rules.js'

const policy = Policy.tiered()
  .withReadOnlyCommands()
  .layer('ops')
  .denyExec('rm*')
  .denyExec('git push*')
  .denyExec('curl*')
  .denyExec('dd*')
  .layer('dev')
  .allowExec('echo*')

type Argv = string[]

const argWord = fc.constantFrom(
  '-rf',
  '/',
  'x',
  '--force',
  'origin',
  'main',
  'a b',
  '$HOME',
  "it's",
  '*',
  '"q"',
  ';',
  '-',
  'é',
)

const denied: fc.Arbitrary<Argv> = fc
  .tuple(fc.constantFrom(['rm'], ['git', 'push'], ['curl'], ['dd']), fc.array(argWord, { maxLength: 3 }))
  .map(([program, args]) => [...program, ...args])

/** A word spelled in bash so that it reads back as exactly itself, with a random style of quoting. */
const quoted = (word: string, style: number): string => {
  if (word === '') return "''"
  switch (style % 5) {
    case 0:
      return `'${word.replace(/'/g, `'\\''`)}'`
    case 1:
      return `"${word.replace(/[\\"$`]/g, '\\$&')}"`
    case 2:
      // A backslash before a newline would continue the line instead, so a newline is quoted.
      return [...word].map((c) => (c === '\n' ? "'\n'" : `\\${c}`)).join('')
    case 3:
      return `$'${[...word].map((c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('')}'`.replace(
        /\\x([0-9a-f]{3,})/g,
        (_, hex: string) => `\\u${hex.padStart(4, '0')}`,
      )
    default:
      // Split the word into two differently quoted halves.
      return word.length < 2 ? quoted(word, 0) : quoted(word.slice(0, 1), 0) + quoted(word.slice(1), 1)
  }
}

const space = fc.constantFrom(' ', '  ', '\t', ' \\\n ')

/** A script that runs `argv`, with random quoting, spacing and surrounding structure. */
function script(argv: Argv, styles: number[], spaces: string[], shape: number): string {
  const line = argv.map((w, i) => quoted(w, styles[i % styles.length]!)).join(spaces[0] ?? ' ')
  switch (shape % 8) {
    case 0:
      return line
    case 1:
      return `true;${spaces[1] ?? ' '}${line}`
    case 2:
      return `cd . && ${line}`
    case 3:
      return `( ${line} )`
    case 4:
      return `{ ${line}; }`
    case 5:
      return `echo "$(${line})"`
    case 6:
      return `echo x |${spaces[1] ?? ' '}${line}`
    default:
      return `if true; then\n${line}\nfi`
  }
}

const wrap = fc.oneof(
  fc.constant((a: Argv) => ['env', ...a]),
  fc.constant((a: Argv) => ['env', '-i', 'A=1', ...a]),
  fc.constant((a: Argv) => ['nice', '-n', '5', ...a]),
  fc.constant((a: Argv) => ['timeout', '-k', '1', '5', ...a]),
  fc.constant((a: Argv) => ['nohup', ...a]),
  fc.constant((a: Argv) => ['setsid', ...a]),
  fc.constant((a: Argv) => ['stdbuf', '-oL', ...a]),
  fc.constant((a: Argv) => ['command', ...a]),
  fc.constant((a: Argv) => ['time', '-p', ...a]),
  fc.constant((a: Argv) => ['sudo', '-u', 'root', ...a]),
  fc.constant((a: Argv) => ['doas', ...a]),
  fc.constant((a: Argv) => ['xargs', '-0', ...a]),
  fc.constant((a: Argv) => ['busybox', ...a]),
  fc.constant((a: Argv) => ['npx', '--yes', ...a]),
  fc.constant((a: Argv) => ['npm', 'exec', '--', ...a]),
  fc.constant((a: Argv) => ['find', '.', '-exec', ...a, ';']),
  fc.constant((a: Argv) => [`/usr/bin/${a[0]}`, ...a.slice(1)]),
  fc.constant((a: Argv) => [`./${a[0]}`, ...a.slice(1)]),
  fc.constant((a: Argv) => [a[0]!.toUpperCase(), ...a.slice(1)]),
  fc.constant((a: Argv) => [a[0]!, '', ...a.slice(1)]),
  fc.constant((a: Argv) =>
    a[0] === 'git' ? ['git', '-C', '.', '--no-pager', '-c', 'color.ui=never', ...a.slice(1)] : a,
  ),
  fc
    .tuple(
      fc.constantFrom('sh', 'bash', 'dash', 'zsh', '/bin/sh'),
      fc.constantFrom('-c', '-ec', '-xc', '-lc'),
      fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
      fc.array(space, { minLength: 2, maxLength: 2 }),
      fc.nat(),
    )
    .map(([shell, flag, styles, spaces, shape]) => (a: Argv) => [
      shell,
      flag,
      script(a, styles, spaces, shape),
    ]),
  fc.tuple(fc.array(fc.nat(), { minLength: 1, maxLength: 3 })).map(([styles]) => (a: Argv) => [
    'env',
    '-S',
    a.map((w, i) => quoted(w, styles[i % styles.length]! % 2)).join(' '),
  ]),
)

/**
 * Allowed commands and options from the list that change what they do, each spelled as the program
 * accepts it (clustered, abbreviated, attached or separate values). Options go between `at` and `until`:
 * after the program, after its subcommand, or (git's global options) before it.
 */
const RISKY: Array<{ rule: string; base: string[]; at: number; until?: number; options: string[][] }> = [
  {
    rule: 'find*',
    base: ['find', '.', '-name', '*.ts'],
    at: 4,
    options: [
      ['-delete'],
      ['-fprint', 'x'],
      ['-fprint0', 'x'],
      ['-fprintf', 'x', '%p'],
      ['-fls', 'x'],
      ['-exec', 'ls', ';'],
      ['-execdir', 'ls', '+'],
      ['-ok', 'ls', ';'],
    ],
  },
  {
    rule: 'git log*',
    base: ['git', 'log', '--oneline'],
    at: 2,
    options: [
      ['--output=x'],
      ['--output', 'x'],
      ['--out=x'],
      ['--ext-diff'],
      ['--ext'],
      ['--textconv'],
      ['--textc'],
    ],
  },
  {
    rule: 'git*',
    base: ['git', 'status'],
    at: 1,
    until: 1,
    options: [
      ['-c', 'core.pager=cat'],
      ['-ccore.pager=cat'],
      ['--config-env=core.pager=P'],
      ['--exec-path=/x'],
      ['--git-dir=/x'],
      ['--git-d=/x'],
      ['--work-tree=/'],
      ['-p'],
      ['--paginate'],
    ],
  },
  {
    rule: 'git grep*',
    base: ['git', 'grep', 'x'],
    at: 2,
    options: [
      ['-O'],
      ['-Ocat'],
      ['-iO'],
      ['-niOcat'],
      ['--open-files-in-pager'],
      ['--open-files-in-pager=cat'],
      ['--open=cat'],
    ],
  },
  {
    rule: 'go test*',
    base: ['go', 'test', './...'],
    at: 2,
    options: [
      ['-exec', 'x'],
      ['-exec=x'],
      ['--exec=x'],
      ['-toolexec', 'x'],
      ['-toolexec=x'],
      ['-o', 'x'],
      ['-coverprofile=x'],
    ],
  },
  {
    rule: 'make test*',
    base: ['make', 'test'],
    at: 1,
    options: [
      ['-f', 'x.mk'],
      ['-fx.mk'],
      ['--file=x.mk'],
      ['--makefile', 'x.mk'],
      ['--eval=x:'],
      ['--ev', 'x:'],
      ['-E', 'x:'],
      ['-e'],
      ['-C', '..'],
      ['--dir=..'],
      ['SHELL=/x'],
    ],
  },
  {
    rule: 'pytest*',
    base: ['pytest', '-x', 'tests'],
    at: 1,
    options: [
      ['-p', 'plugin'],
      ['-pplugin'],
      ['--basetemp=/x'],
      ['--basetemp', '/x'],
      ['-c', 'x.ini'],
      ['--rootdir=/'],
      ['--confcutdir=/'],
      ['--confcut=/'],
    ],
  },
  {
    rule: 'cargo test*',
    base: ['cargo', 'test'],
    at: 2,
    options: [['--config', 'x=1'], ['--config=x=1'], ['-Z', 'x'], ['-Zx']],
  },
  {
    rule: 'npm test*',
    base: ['npm', 'test'],
    at: 2,
    options: [
      ['--script-shell=/x'],
      ['--script-shell', '/x'],
      ['--prefix', '/x'],
      ['--prefix=/x'],
      ['--registry=http://x'],
      ['--reg=http://x'],
    ],
  },
  {
    rule: 'sort*',
    base: ['sort', 'a.txt'],
    at: 1,
    options: [
      ['-o', 'x'],
      ['-ox'],
      ['-ro', 'x'],
      ['--output=x'],
      ['--out', 'x'],
      ['--compress-program=gzip'],
      ['--compress-prog', 'gzip'],
    ],
  },
  {
    rule: 'tar*',
    base: ['tar', '-c', '-z', 'dist'],
    at: 1,
    options: [
      ['--to-command=cat'],
      ['--to-command', 'cat'],
      ['--use-compress-program=gzip'],
      ['-I', 'gzip'],
      ['-Igzip'],
      ['--checkpoint-action=exec=ls'],
      ['--checkpoint-act=exec=ls'],
    ],
  },
  {
    rule: 'rsync*',
    base: ['rsync', '-a', 'a/', 'b/'],
    at: 1,
    options: [['-e', 'ssh'], ['-essh'], ['-ze', 'ssh'], ['--rsh=ssh'], ['--rsh', 'ssh'], ['--delete']],
  },
  {
    rule: 'zip*',
    base: ['zip', 'a.zip', 'f'],
    at: 1,
    options: [['-TT', 'x'], ['--unzip-command=x'], ['-m']],
  },
  {
    rule: 'sed*',
    base: ['sed', '-n', 's/a/b/p', 'f'],
    at: 1,
    options: [
      ['-i'],
      ['-i.bak'],
      ['--in-place'],
      ['--in'],
      ['--i'],
      ['-f', 's.sed'],
      ['--file=s.sed'],
      ['--fi=s.sed'],
    ],
  },
  {
    rule: 'gawk*',
    base: ['gawk', '{print}', 'f'],
    at: 1,
    options: [
      ['-f', 'p.awk'],
      ['--file=p.awk'],
      ['-E', 'p.awk'],
      ['-l', 'x'],
      ['--load=x'],
      ['-i', 'x'],
      ['--incl=x'],
      ['--sourc=BEGIN{system("ls")}'],
    ],
  },
  { rule: 'diff*', base: ['diff', 'a', 'b'], at: 1, options: [['--to-program=x'], ['--diff-program=x']] },
  {
    rule: 'date*',
    base: ['date', '-u'],
    at: 1,
    options: [['-s', 'now'], ['--set=now'], ['--s', 'now'], ['--se=now']],
  },
  {
    rule: 'python3*',
    base: ['python3', 'x.py'],
    at: 1,
    options: [
      ['-c', 'print(1)'],
      ['-Sc', 'print(1)'],
    ],
  },
]

describe('properties', () => {
  it('adding an option from the list to an allowed command never stays allow', () => {
    const risky = fc
      .constantFrom(...RISKY)
      .chain((entry) =>
        fc.tuple(
          fc.constant(entry),
          fc.constantFrom(...entry.options),
          fc.integer({ min: entry.at, max: entry.until ?? entry.base.length }),
          fc.boolean(),
        ),
      )
    fc.assert(
      fc.property(risky, ([entry, option, at, readOnly]) => {
        let allowing = Policy.tiered().layer('dev').allowExec(entry.rule).allowWrite('*')
        if (readOnly) allowing = allowing.withReadOnlyCommands()
        expect(allowing.checkExec(entry.base).effect, entry.base.join(' ')).toBe('allow')
        const argv = [...entry.base.slice(0, at), ...option, ...entry.base.slice(at)]
        expect(allowing.checkExec(argv).effect, JSON.stringify(argv)).not.toBe('allow')
      }),
      { numRuns: 2000 },
    )
  })

  it('denied stays denied under any spelling of its options', () => {
    const deniers = Policy.permissive()
      .layer('ops')
      .denyExec('rm -rf*')
      .denyExec('git push --force*')
      .denyExec('git reset --hard*')
      .denyExec('git clean -fd*')
      .denyExec('chmod -R 777*')
    // Each option as the program accepts it: short, long, abbreviated.
    const spell: Record<string, string[]> = {
      r: ['-r', '-R', '--recursive', '--recur', '--r'],
      f: ['-f', '--force', '--forc', '--fo'],
      force: ['--force', '-f', '--force-with-lease', '--force-if-includes', '--forc'],
      hard: ['--hard', '--ha', '--har'],
      d: ['-d'],
      R: ['-R', '--recursive', '--recu'],
    }
    const commands: Array<{ prefix: string[]; options: string[]; operands: string[][]; extra: string[] }> = [
      {
        prefix: ['rm'],
        options: ['r', 'f'],
        operands: [['x'], ['/tmp/a', 'b'], ['dist']],
        extra: ['-v', '-i', '--verbose', '-d'],
      },
      {
        prefix: ['git', 'push'],
        options: ['force'],
        operands: [['origin', 'main'], ['origin'], []],
        extra: ['-u', '--tags', '-q', '--atomic'],
      },
      {
        prefix: ['git', 'reset'],
        options: ['hard'],
        operands: [['HEAD~1'], []],
        extra: ['-q', '--no-recurse-submodules'],
      },
      { prefix: ['git', 'clean'], options: ['f', 'd'], operands: [[], ['src']], extra: ['-x', '-q'] },
      {
        prefix: ['chmod'],
        options: ['R'],
        operands: [
          ['777', 'dir'],
          ['777', 'a', 'b'],
        ],
        extra: ['-v', '-c'],
      },
    ]
    const spelled = fc.constantFrom(...commands).chain((command) =>
      fc.record({
        command: fc.constant(command),
        spellings: fc.tuple(...command.options.map((o) => fc.constantFrom(...spell[o]!))),
        operands: fc.constantFrom(...command.operands),
        extra: fc.subarray(command.extra),
        cluster: fc.boolean(),
        order: fc.array(fc.nat(), { minLength: 8, maxLength: 8 }),
        wrappers: fc.array(wrap, { maxLength: 1 }),
        global: fc.boolean(),
      }),
    )
    fc.assert(
      fc.property(spelled, ({ command, spellings, operands, extra, cluster, order, wrappers, global }) => {
        let options: string[] = [...spellings, ...extra]
        // Short options may share one word, in any order.
        const short = options.filter((o) => /^-[A-Za-z]$/.test(o))
        if (cluster && short.length > 1) {
          options = [...options.filter((o) => !short.includes(o)), `-${short.map((o) => o[1]).join('')}`]
        }
        // Options and operands in any order (GNU programs and git read options after operands).
        const words = [...options, ...operands]
        const shuffled = words
          .map((word, i) => ({ word, key: order[i % order.length]! * 31 + i }))
          .sort((a, b) => a.key - b.key)
          .map((x) => x.word)
        // A chmod mode must stay its first operand; it is only data to the rule otherwise.
        const body =
          command.prefix[0] === 'chmod'
            ? [...options, ...operands].sort((a, b) => Number(b.startsWith('-')) - Number(a.startsWith('-')))
            : shuffled
        const prefix =
          global && command.prefix[0] === 'git'
            ? ['git', '-C', '.', '--no-pager', ...command.prefix.slice(1)]
            : command.prefix
        const argv = wrappers.reduce((a, w) => w(a), [...prefix, ...body])
        expect(deniers.checkExec(argv).effect, JSON.stringify(argv)).toBe('deny')
      }),
      { numRuns: 2000 },
    )
  })

  it('a command denied plainly stays denied under random wrappings, quotings and whitespace', () => {
    fc.assert(
      fc.property(denied, fc.array(wrap, { minLength: 1, maxLength: 3 }), (argv, wrappers) => {
        expect(policy.checkExec(argv).effect).toBe('deny')
        const wrapped = wrappers.reduce((a, w) => w(a), argv)
        const verdict = policy.checkExec(wrapped)
        expect(verdict.effect, JSON.stringify(wrapped)).toBe('deny')
      }),
      { numRuns: 2000 },
    )
  })

  it('nothing the analyser gives up on is allowed, even by a permissive policy', () => {
    const opaque = fc.constantFrom(
      'eval "$x"',
      '$CMD',
      'source f',
      '. ./f',
      'trap "$x" EXIT',
      'echo "$x" | sh',
      'python3 -c 1',
      'echo $((a+1))',
      'echo "open',
      'sed e f',
      'x=$(eval "$y")',
    )
    fc.assert(
      fc.property(
        opaque,
        fc.constantFrom('', 'ls; ', 'cd . && ', 'echo ok | '),
        fc.constantFrom('sh', 'bash'),
        (construct, prefix, shell) => {
          const verdict = Policy.permissive().checkExec([shell, '-c', `${prefix}${construct}`])
          expect(verdict.effect).not.toBe('allow')
        },
      ),
    )
  })

  it('the precompiled rule index finds the same first rule as matching every rule in turn', () => {
    // Every character a RegExp treats specially is in the alphabet: patterns must stay literal.
    const special = ['-', '\\', '[', ']', '(', ')', '|', '{', '}', '^', '$', '+', 'é', '\u{1f600}']
    const glob = fc
      .array(fc.constantFrom('a', 'b', '/', ' ', '*', '?', '.', ...special), { maxLength: 6 })
      .map((c) => c.join('') || '*')
    const target = fc
      .array(fc.constantFrom('a', 'b', '/', ' ', '.', '\n', ...special), { maxLength: 8 })
      .map((c) => c.join(''))
    fc.assert(
      fc.property(fc.array(glob, { minLength: 1, maxLength: 12 }), target, (patterns, t) => {
        const index = new RuleIndex()
        const effects = ['deny', 'ask', 'allow'] as const
        for (const [i, p] of patterns.entries()) index.add(p, effects[i % 3]!, i)
        const found = [Infinity, Infinity, Infinity]
        index.scan(t, ALL_EFFECTS, found)
        const naive = effects.map((_, slot) => {
          const i = patterns.findIndex((p, k) => k % 3 === slot && globMatches(p, t))
          return i === -1 ? Infinity : i
        })
        expect(found).toEqual(naive)
      }),
      { numRuns: 3000 },
    )
  })

  it('a word as shown to a human reads back, in bash, as exactly that word', () => {
    const char = fc.oneof(
      fc.constantFrom(
        "'",
        '"',
        '\\',
        '$',
        '`',
        ' ',
        '\n',
        '\t',
        '\x1b',
        '\u200b',
        'é',
        '*',
        '{',
        '}',
        '#',
        '!',
      ),
      fc.string({ maxLength: 2 }),
    )
    fc.assert(
      fc.property(
        fc.array(char, { maxLength: 6 }).map((c) => c.join('').replace(/\0/g, '')),
        (word) => {
          const shown = quoteWord(word)
          expect(shown).toMatch(/^[\x20-\x7e]*$/)
          const [item] = parseScript(`echo ${shown}`).items
          const read = item?.type === 'command' ? item.words[1] : undefined
          expect(read && { text: read.text, dynamic: read.dynamic }).toEqual({ text: word, dynamic: false })
        },
      ),
      { numRuns: 2000 },
    )
  })
})
