/**
 * Property-based tests: a command denied plainly stays denied under any mix of transparent wrappers,
 * shells, quotings and whitespace; what cannot be analysed is never allowed; the precompiled rule index
 * agrees with a rule-by-rule glob match; and what tether shows a human reads back as exactly the argv.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { globMatches } from '../../../src/policy/glob.js'
import { Policy, quoteWord } from '../../../src/policy/index.js'
import { ALL_EFFECTS, RuleIndex } from '../../../src/policy/rules.js'
import { parseScript } from '../../../src/policy/shell/parse.js'

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

describe('properties', () => {
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
