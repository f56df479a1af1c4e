/** The scripted model: stateless turn choice, deterministic ids, script validation, transcript checks. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import {
  estimateTokens,
  loadModelScript,
  ModelConfigError,
  ModelError,
  type ModelScript,
  parseModelScript,
  SCRIPT_FINISHED_TEXT,
  scriptedProvider,
  type TranscriptMessage,
} from '../../../src/model/index.js'

const script: ModelScript = {
  turns: [
    {
      text: 'Looking around.',
      toolCalls: [
        { name: 'list_dir', args: { path: '.' } },
        { name: 'read_file', args: { path: 'package.json' } },
      ],
    },
    {
      toolCalls: [{ name: 'exec', args: { argv: ['npm', 'test'] } }],
      usage: { inputTokens: 1234, outputTokens: 56 },
    },
    { text: 'Done.' },
  ],
}

const user: TranscriptMessage = { role: 'user', content: 'make the tests pass' }

/** The transcript after `turns` scripted turns, each call answered. */
async function transcriptAfter(turns: number): Promise<TranscriptMessage[]> {
  const provider = scriptedProvider(script)
  const messages: TranscriptMessage[] = [user]
  for (let turn = 0; turn < turns; turn++) {
    const reply = await provider.generate({ system: 's', messages })
    messages.push({ role: 'assistant', text: reply.text, toolCalls: reply.toolCalls })
    if (reply.toolCalls.length > 0) {
      messages.push({
        role: 'tool',
        results: reply.toolCalls.map((call) => ({
          callId: call.id,
          name: call.name,
          output: `ran ${call.name}`,
        })),
      })
    }
  }
  return messages
}

describe('scriptedProvider', () => {
  it('plays the turn given by the number of assistant messages, with deterministic call ids', async () => {
    const provider = scriptedProvider(script)
    const first = await provider.generate({ system: 's', messages: [user] })
    expect(first.text).toBe('Looking around.')
    expect(first.toolCalls).toEqual([
      { id: 'call-0-0', name: 'list_dir', args: { path: '.' } },
      { id: 'call-0-1', name: 'read_file', args: { path: 'package.json' } },
    ])
    expect(first.finishReason).toBe('tool-calls')
    const second = await provider.generate({ system: 's', messages: await transcriptAfter(1) })
    expect(second.toolCalls).toEqual([{ id: 'call-1-0', name: 'exec', args: { argv: ['npm', 'test'] } }])
    expect(second.text).toBe('')
  })

  it('is stateless: a retry or a fresh provider plays the same turn again', async () => {
    const messages = await transcriptAfter(1)
    const answers = await Promise.all([
      scriptedProvider(script).generate({ system: 's', messages }),
      scriptedProvider(script).generate({ system: 's', messages }),
    ])
    expect(answers[0]).toEqual(answers[1])
  })

  it('ends with a final text turn once the script runs out', async () => {
    const messages = await transcriptAfter(3)
    expect(messages.at(-1)).toEqual({ role: 'assistant', text: 'Done.', toolCalls: [] })
    const past = await scriptedProvider(script).generate({ system: 's', messages })
    expect(past).toMatchObject({ text: SCRIPT_FINISHED_TEXT, toolCalls: [], finishReason: 'stop' })
  })

  it('reports the scripted usage, or an estimate from the sizes of the request and the reply', async () => {
    const messages = await transcriptAfter(1)
    const scripted = await scriptedProvider(script).generate({ system: 's', messages })
    expect(scripted.usage).toEqual({ inputTokens: 1234, outputTokens: 56 })
    const small = await scriptedProvider(script).generate({ system: 's', messages: [user] })
    const large = await scriptedProvider(script).generate({ system: 's'.repeat(30_000), messages: [user] })
    expect(small.usage.inputTokens).toBeGreaterThan(estimateTokens([user]))
    expect(large.usage.inputTokens - small.usage.inputTokens).toBe(10_000 - 1)
    expect(small.usage.outputTokens).toBeGreaterThan(0)
  })

  it('refuses a transcript whose tool calls are not answered, as a real provider would', async () => {
    const provider = scriptedProvider(script)
    const unanswered: TranscriptMessage[] = [
      user,
      { role: 'assistant', text: '', toolCalls: [{ id: 'call-0-0', name: 'list_dir', args: {} }] },
    ]
    await expect(provider.generate({ system: 's', messages: unanswered })).rejects.toMatchObject({
      kind: 'bad-request',
      retryable: false,
      message: expect.stringContaining('call-0-0 has no result'),
    })
    const stray: TranscriptMessage[] = [
      user,
      { role: 'tool', results: [{ callId: 'x', name: 'exec', output: '' }] },
    ]
    await expect(provider.generate({ system: 's', messages: stray })).rejects.toBeInstanceOf(ModelError)
  })

  it('stops at once when the caller has already aborted', async () => {
    const controller = new AbortController()
    controller.abort(new Error('run cancelled'))
    await expect(
      scriptedProvider(script).generate({ system: 's', messages: [user], signal: controller.signal }),
    ).rejects.toThrow('run cancelled')
  })

  it('uses the script’s context window', () => {
    expect(scriptedProvider(script).contextTokens).toBe(200_000)
    expect(scriptedProvider({ ...script, contextTokens: 4096 }, { id: 'scripted:x' })).toMatchObject({
      id: 'scripted:x',
      contextTokens: 4096,
    })
  })
})

describe('model scripts', () => {
  it('fills in what a turn leaves out', () => {
    expect(parseModelScript({ turns: [{ toolCalls: [{ name: 'list_dir' }] }, {}] }).turns).toEqual([
      { toolCalls: [{ name: 'list_dir', args: {} }] },
      { toolCalls: [] },
    ])
  })

  it.each([
    [{ turns: [{ text: 'ok' }, { toolCalls: [{ args: {} }] }] }, 'turn 1, toolCalls[0].name'],
    [{ turns: [{ text: 3 }] }, 'turn 0, text'],
    [{ turns: [{ toolcalls: [] }] }, 'turn 0'],
    [{ turns: [{ usage: { inputTokens: -1 } }] }, 'turn 0, usage.inputTokens'],
    [{ turn: [] }, 'turns'],
    [[], '(script)'],
  ])('names the turn and the field of a mistake: %j', (value, where) => {
    expect(() => parseModelScript(value, 'model script demo.json')).toThrow(ModelConfigError)
    expect(() => parseModelScript(value, 'model script demo.json')).toThrow(
      `model script demo.json is invalid: ${where}`,
    )
  })

  it('expands a repeat anywhere in the arguments, so a small script can send a huge argument', async () => {
    const provider = scriptedProvider({
      turns: [
        {
          toolCalls: [
            {
              name: 'exec',
              args: {
                argv: ['node', '-e', { $repeat: 'ab', times: 3 }],
                nested: [{ x: { $repeat: '', times: 5 } }],
              },
            },
          ],
          usage: { inputTokens: 1, outputTokens: 1 },
        },
      ],
    })
    const reply = await provider.generate({ system: 's', messages: [user] })
    expect(reply.toolCalls[0]?.args).toEqual({ argv: ['node', '-e', 'ababab'], nested: [{ x: '' }] })
  })

  it.each([
    [{ $repeat: 'x', times: -1 }, 'toolCalls[0].args.argv[1]'],
    [{ $repeat: 'x', times: 1.5 }, 'toolCalls[0].args.argv[1]'],
    [{ $repeat: 7, times: 2 }, 'toolCalls[0].args.argv[1]'],
    [{ $repeat: 'x', times: 2, extra: true }, 'toolCalls[0].args.argv[1]'],
    [{ $repeat: 'xx', times: 300_000_000 }, 'toolCalls[0].args.argv[1]'],
  ])('names a malformed repeat: %j', (repeat, where) => {
    const value = { turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['echo', repeat] } }] }] }
    expect(() => parseModelScript(value, 'model script r.json')).toThrow(
      `model script r.json is invalid: turn 0, ${where}: a repeat is { "$repeat": "<text>", "times": <whole number> }`,
    )
  })

  it('loads a script file, and names the file when it is missing or not JSON', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-script-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const good = join(dir, 'good.json')
    await writeFile(good, JSON.stringify(script))
    expect(loadModelScript(good).turns).toHaveLength(3)
    const bad = join(dir, 'bad.json')
    await writeFile(bad, '{ "turns": [')
    expect(() => loadModelScript(bad)).toThrow(`model script ${bad} is not valid JSON`)
    expect(() => loadModelScript(join(dir, 'none.json'))).toThrow(
      `cannot read the model script ${join(dir, 'none.json')}`,
    )
  })
})
