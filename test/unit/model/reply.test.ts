import { describe, expect, it } from 'vitest'
import { boundReply, REPLY_LIMITS } from '../../../src/model/index.js'
import type { ToolCall } from '../../../src/tools/schemas.js'

const exec = (id: string, argv: string[]): ToolCall => ({ id, name: 'exec', args: { argv } })
const size = (value: unknown) => JSON.stringify(value).length

describe('boundReply', () => {
  it('stores valid calls exactly as the model made them', () => {
    const calls: ToolCall[] = [
      exec('a', ['npm', 'test']),
      { id: 'b', name: 'write_file', args: { path: 'big.txt', content: 'w'.repeat(1_500_000) } },
    ]
    const bounded = boundReply({ text: 'Working.', toolCalls: calls })
    expect(bounded).toEqual({ text: 'Working.', toolCalls: calls })
  })

  it.each([
    ['200,000 characters', 'x'.repeat(200_000), 'argv[2] is 200,000 bytes'],
    ['3 MB', 'x'.repeat(3_000_000), 'argv[2] is 3,000,000 bytes'],
    ['50 MB', 'x'.repeat(50_000_000), 'argv[2] is 50,000,000 bytes'],
    ['a lone surrogate', 'ab\ud800', 'argv[2] holds an unpaired UTF-16 surrogate'],
  ])('keeps a call with %s as a short, well-formed record of why it was refused', (_, argument, why) => {
    const bounded = boundReply({ text: '', toolCalls: [exec('call-0', ['node', '-e', argument])] })
    const [call] = bounded.toolCalls
    expect(call?.invalid).toContain(`invalid arguments for exec: ${why}`)
    expect(call?.id).toBe('call-0')
    expect(size(bounded)).toBeLessThan(5_000)
    expect(JSON.stringify(bounded)).not.toMatch(/\\ud[89a-f]/i)
  })

  it('replaces ids and names it cannot keep, and bounds the text', () => {
    const bounded = boundReply({
      text: `${'t'.repeat(REPLY_LIMITS.textChars + 10)}\ud800`,
      toolCalls: [
        { id: 'i'.repeat(1_000), name: 'read_file', args: { path: 'a' } },
        { id: 'ok\udc00', name: `x${'n'.repeat(10_000)}`, args: {} },
      ],
    })
    expect(bounded.toolCalls.map((call) => call.id)).toEqual(['tether-call-0', 'tether-call-1'])
    expect(bounded.toolCalls[0]?.invalid).toBeUndefined()
    expect(bounded.toolCalls[1]?.name.length).toBe(REPLY_LIMITS.nameChars)
    expect(bounded.toolCalls[1]?.invalid).toMatch(/^unknown tool `xnnn/)
    expect(bounded.text).toMatch(/… \[11 more characters not kept\]$/)
  })

  it('bounds the arguments a refused call keeps: strings, entries and nesting', () => {
    let deep: unknown = 'bottom'
    for (let i = 0; i < 100; i++) deep = { deeper: deep }
    const args = {
      long: 'q'.repeat(10_000),
      many: Array.from({ length: 1_000 }, (_, i) => i),
      deep,
      [`k${'e'.repeat(500)}`]: 1,
    }
    const [call] = boundReply({ text: '', toolCalls: [{ id: 'c', name: 'exec', args }] }).toolCalls
    expect(call?.invalid).toContain('invalid arguments for exec')
    expect(size(call)).toBeLessThan(8_000)
    expect(JSON.stringify(call?.args)).toContain('[… 950 more elements not kept]')
    expect(JSON.stringify(call?.args)).toContain('[… nested too deep; not kept]')
  })

  it('drops calls past the per-reply count, and says so in the text', () => {
    const calls = Array.from({ length: 1_000 }, (_, i) => exec(`c${i}`, ['true']))
    const bounded = boundReply({ text: 'Many.', toolCalls: calls })
    expect(bounded.toolCalls).toHaveLength(REPLY_LIMITS.calls)
    expect(bounded.text).toBe(
      'Many.\n[tether: 936 more tool calls of this reply were dropped unanswered; a reply may make at most 64]',
    )
  })

  it('refuses commands past the per-reply argv budget, so history holds any reply', () => {
    const argument = 'a'.repeat(30_000)
    const calls = [
      exec('1', ['echo', argument]),
      exec('2', ['echo', argument]),
      exec('3', ['echo', argument]),
    ]
    const bounded = boundReply({ text: '', toolCalls: calls })
    expect(bounded.toolCalls.map((call) => call.invalid === undefined)).toEqual([true, true, false])
    expect(bounded.toolCalls[2]?.invalid).toBe(
      'invalid arguments for exec: the commands before it in this reply already pass 60,012 bytes of ' +
        'arguments, and one reply may pass 65,536 bytes in all: run it in your next turn',
    )
  })

  it('refuses file calls past the per-reply argument budget', () => {
    const content = 'c'.repeat(2_000_000)
    const calls = Array.from({ length: 6 }, (_, i) => ({
      id: `w${i}`,
      name: 'write_file',
      args: { path: `f${i}.txt`, content },
    }))
    const bounded = boundReply({ text: '', toolCalls: calls })
    expect(bounded.toolCalls.map((call) => call.invalid === undefined)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ])
    expect(bounded.toolCalls[4]?.invalid).toContain('one reply may carry 8,388,608 bytes in all')
  })
})
