import { describe, expect, it } from 'vitest'
import { CALL_LIMITS, utf8Length, wellFormed } from '../../../src/tools/limits.js'
import { type ToolCall, validateToolCall } from '../../../src/tools/schemas.js'

const exec = (argv: unknown): ToolCall => ({ id: 'c1', name: 'exec', args: { argv } })
const errorOf = (call: ToolCall): string => {
  const result = validateToolCall(call)
  if (result.ok) throw new Error(`expected ${JSON.stringify(call).slice(0, 200)} to be refused`)
  return result.error
}

describe('tool-call limits', () => {
  it('accepts ordinary calls, and arguments exactly at a limit', () => {
    expect(validateToolCall(exec(['npm', 'test'])).ok).toBe(true)
    expect(validateToolCall(exec(['echo', 'x'.repeat(CALL_LIMITS.argumentBytes)])).ok).toBe(true)
    const content = 'é'.repeat(CALL_LIMITS.contentBytes / 2)
    expect(validateToolCall({ id: 'c', name: 'write_file', args: { path: 'src/a.txt', content } }).ok).toBe(
      true,
    )
    // A surrogate pair is valid text (one emoji, four UTF-8 bytes).
    expect(validateToolCall(exec(['echo', 'ok 😀'])).ok).toBe(true)
  })

  it('names the argument, its size, the limit and what to do instead', () => {
    expect(errorOf(exec(['node', '-e', 'x'.repeat(200_000)]))).toBe(
      'invalid arguments for exec: argv[2] is 200,000 bytes; the limit is 32,768 bytes per argument: ' +
        'write the text to a file with write_file and pass its path instead',
    )
  })

  it('counts UTF-8 bytes, not characters', () => {
    // 20,000 three-byte characters: under the limit in characters, over it in bytes.
    expect(errorOf(exec(['echo', '€'.repeat(20_000)]))).toContain('argv[1] is 60,000 bytes')
    expect(utf8Length('a€😀')).toBe(1 + 3 + 4)
    expect(utf8Length('\ud800')).toBe(3)
  })

  it('bounds the whole argv and the number of arguments', () => {
    const parts = Array.from({ length: 3 }, () => 'y'.repeat(30_000))
    expect(errorOf(exec(['echo', ...parts]))).toContain(
      'argv is 90,008 bytes; the limit is 65,536 bytes for all arguments together',
    )
    expect(errorOf(exec(['echo', ...Array.from({ length: 5_000 }, () => 'a')]))).toBe(
      'invalid arguments for exec: argv: 5,001 arguments; the limit is 4,096: pass long lists through a ' +
        'file (many tools read one, e.g. `xargs -a FILE`)',
    )
    // Counted before the elements are checked: millions of wrong ones are refused at once.
    expect(errorOf(exec(Array.from({ length: 5_000_000 }, (_, i) => i)))).toContain(
      'argv: 5,000,000 arguments; the limit is 4,096',
    )
  })

  it('refuses text that cannot reach the OS intact: unpaired surrogates and NUL', () => {
    expect(errorOf(exec(['echo', 'ab\ud800cd']))).toBe(
      'invalid arguments for exec: argv[1] holds an unpaired UTF-16 surrogate (at character 2), which is not ' +
        'valid Unicode and has no UTF-8 form; send valid text',
    )
    expect(errorOf(exec(['echo', '\udc00']))).toContain('argv[1] holds an unpaired UTF-16 surrogate')
    expect(errorOf(exec(['printf', 'a\0b']))).toContain('argv[1] holds a NUL character (at character 1)')
  })

  it('bounds paths, names, file contents, patterns and globs', () => {
    const long = Array.from({ length: 30 }, () => 'd'.repeat(200)).join('/')
    expect(errorOf({ id: 'c', name: 'read_file', args: { path: long } })).toContain(
      'path is 6,029 bytes; the limit is 4,096 bytes for a path',
    )
    expect(errorOf({ id: 'c', name: 'list_dir', args: { path: `src/${'n'.repeat(300)}` } })).toContain(
      'the limit is 255 bytes per file or folder name',
    )
    const big = 'z'.repeat(3_000_000)
    expect(errorOf({ id: 'c', name: 'write_file', args: { path: 'a.txt', content: big } })).toBe(
      'invalid arguments for write_file: content is 3,000,000 bytes; the limit is 2,097,152 bytes for what ' +
        'one call writes: split it into smaller files, or generate it with a command',
    )
    expect(
      errorOf({ id: 'c', name: 'edit_file', args: { path: 'a.txt', search: 'a', replace: big } }),
    ).toContain('replace is 3,000,000 bytes')
    expect(errorOf({ id: 'c', name: 'write_file', args: { path: 'a.txt', content: '\ud83d' } })).toContain(
      'content holds an unpaired UTF-16 surrogate',
    )
    expect(errorOf({ id: 'c', name: 'search', args: { pattern: 'p'.repeat(5_000) } })).toContain(
      'pattern is 5,000 bytes; the limit is 4,096 bytes for a pattern',
    )
    expect(errorOf({ id: 'c', name: 'search', args: { pattern: 'a', glob: 'g'.repeat(5_000) } })).toContain(
      'glob is 5,000 bytes',
    )
  })

  it('keeps every error short, whatever the model sent', () => {
    expect(errorOf({ id: 'c', name: 'n'.repeat(1_000_000), args: {} }).length).toBeLessThanOrEqual(1_000)
    const manyBad = exec(Array.from({ length: 10_000 }, (_, i) => i))
    expect(errorOf(manyBad).length).toBeLessThanOrEqual(1_000)
    const oddKey = { id: 'c', name: 'read_file', args: { path: 'a', ['k'.repeat(100_000)]: 1 } }
    expect(errorOf(oddKey).length).toBeLessThanOrEqual(1_000)
  })

  it('honours a verdict the model activity recorded on the full arguments', () => {
    const call = { ...exec(['echo', 'short… [marker]']), invalid: 'argv[1] is 3,000,000 bytes; …' }
    expect(validateToolCall(call)).toEqual({ ok: false, error: 'argv[1] is 3,000,000 bytes; …' })
  })

  it('makes any text well-formed for storage', () => {
    expect(wellFormed('a\ud800b\udc00c😀')).toBe('a\ufffdb\ufffdc😀')
    const text = 'plain'
    expect(wellFormed(text)).toBe(text)
  })
})
