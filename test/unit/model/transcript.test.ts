/** The stored transcript: its schema, and how it is replayed in the AI SDK's message shape. */
import { describe, expect, it } from 'vitest'
import { type TranscriptMessage, toModelMessages, transcriptMessageSchema } from '../../../src/model/index.js'

const transcript: TranscriptMessage[] = [
  { role: 'user', content: 'go' },
  { role: 'assistant', text: '', toolCalls: [] },
  {
    role: 'assistant',
    text: 'Trying.',
    toolCalls: [
      { id: 'c1', name: 'read_file', args: { path: 'a.ts' } },
      { id: 'c2', name: 'exec', args: '{"argv": [' },
    ],
  },
  {
    role: 'tool',
    results: [
      { callId: 'c1', name: 'read_file', output: 'text' },
      { callId: 'c2', name: 'exec', output: 'invalid arguments for exec' },
    ],
  },
]

describe('transcriptMessageSchema', () => {
  it('accepts stored messages and rejects anything else', () => {
    for (const message of transcript) expect(transcriptMessageSchema.parse(message)).toEqual(message)
    expect(transcriptMessageSchema.safeParse({ role: 'system', content: 'x' }).success).toBe(false)
    expect(transcriptMessageSchema.safeParse({ role: 'assistant', text: 'x' }).success).toBe(false)
    expect(transcriptMessageSchema.safeParse({ role: 'tool', results: [{ callId: 'c' }] }).success).toBe(
      false,
    )
  })
})

describe('toModelMessages', () => {
  it('drops empty assistant turns and replays unparsable arguments as an empty object', () => {
    expect(toModelMessages(transcript)).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Trying.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'a.ts' } },
          { type: 'tool-call', toolCallId: 'c2', toolName: 'exec', input: {} },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'c1',
            toolName: 'read_file',
            output: { type: 'text', value: 'text' },
          },
          {
            type: 'tool-result',
            toolCallId: 'c2',
            toolName: 'exec',
            output: { type: 'text', value: 'invalid arguments for exec' },
          },
        ],
      },
    ])
  })
})
