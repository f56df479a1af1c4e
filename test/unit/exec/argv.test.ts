import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCommand } from '../../../src/exec/index.js'
import { ARGV_JSON_PROBE, ARGV_NUL_PROBE, PROBES_DIR } from '../../fixtures/exec/probes.js'
import { removeSandboxedFolder } from '../../support/folders.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-argv-'))
})
afterAll(() => removeSandboxedFolder(dir))

const TRICKY = [
  'a;b',
  'a && b',
  'x || y',
  '$(id)',
  '`id`',
  'a | wc -l',
  '> out.txt',
  '< /etc/passwd',
  '"double quoted"',
  "'single quoted'",
  'line one\nline two',
  '  spaced  out  ',
  'héllo wörld ✓ 日本語 😀',
  '',
  '-n',
  '--',
  '*',
  '$HOME',
  '\\',
  '\t',
  'carriage\rreturn',
  '%s %d',
  '!!',
  '{a,b}',
  '~',
  '#comment',
]

describe('argv reaches the program byte for byte, never through a shell', () => {
  it.each(['bare', 'sandboxed'])(
    'keeps shell syntax, quotes, whitespace and non-ASCII as data (%s)',
    async (mode) => {
      const result = await runCommand({
        argv: [process.execPath, ARGV_JSON_PROBE, ...TRICKY],
        cwd: dir,
        ...(mode === 'sandboxed' ? { sandbox: { workspace: dir, readOnly: [PROBES_DIR] } } : {}),
      })
      expect(result.status).toBe('exited')
      expect(JSON.parse(result.stdout.text)).toEqual(TRICKY)
      // Had a shell seen '> out.txt', the file would exist now.
      expect(existsSync(join(dir, 'out.txt'))).toBe(false)
    },
  )

  it('finds no difference over 10,000 random argvs', { timeout: 300_000 }, async () => {
    const shellish = fc.constantFrom(
      ';',
      '&&',
      '|',
      '>',
      '<',
      '$(id)',
      '`id`',
      '"',
      "'",
      '\\',
      '\n',
      ' ',
      '\t',
      '*',
      '$1',
      '%s',
    )
    const element = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc
        .array(fc.oneof(shellish, fc.string({ unit: 'grapheme', maxLength: 4 })), { maxLength: 6 })
        .map((parts) => parts.join('')),
    )
    // NUL cannot be passed to a program at all (runCommand refuses it); everything else must arrive intact.
    const argvs = fc.sample(
      fc.array(
        element.map((arg) => arg.replaceAll('\0', '')),
        { minLength: 1, maxLength: 6 },
      ),
      10_000,
    )
    const mismatches: string[] = []
    let next = 0
    // One probe per argv, a few at a time: spawning is the cost, and the machine has two cores.
    const worker = async () => {
      for (let index = next++; index < argvs.length; index = next++) {
        const args = argvs[index]!
        const expected = Buffer.concat(args.map((arg) => Buffer.from(`${arg}\0`)))
        const result = await runCommand({
          argv: ['/bin/sh', ARGV_NUL_PROBE, ...args],
          cwd: dir,
          outputCeiling: 1_000,
        })
        const sha256 = createHash('sha256').update(expected).digest('hex')
        if (
          result.status !== 'exited' ||
          result.stdout.sha256 !== sha256 ||
          result.stdout.bytes !== expected.length
        ) {
          mismatches.push(`${JSON.stringify(args)} → ${result.status}, ${JSON.stringify(result.stdout.text)}`)
        }
      }
    }
    await Promise.all(Array.from({ length: 6 }, worker))
    expect(mismatches.slice(0, 5), `${mismatches.length} of ${argvs.length} argvs arrived altered`).toEqual(
      [],
    )
    expect(next).toBeGreaterThanOrEqual(10_000)
  })
})
