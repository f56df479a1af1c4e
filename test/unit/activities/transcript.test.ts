/**
 * appendInOrder: the observations a workflow made and a turn's reply are written in as few writes as their
 * sequence numbers allow, so a transaction can send them with its other rows in one round trip.
 */
import { describe, expect, it } from 'vitest'
import { appendInOrder } from '../../../src/activities/transcript.js'

function recorder() {
  const calls: Array<{ from: number; messages: unknown[] }> = []
  return {
    calls,
    writes: {
      appendMessages: async (_runId: string, from: number, messages: readonly unknown[]) => {
        calls.push({ from, messages: [...messages] })
        return messages.length
      },
    },
  }
}

describe('appendInOrder', () => {
  it('writes consecutive messages in one write, in sequence order whatever order they came in', async () => {
    const { calls, writes } = recorder()
    await appendInOrder(writes, 'r', [
      { seq: 6, message: 'reply' },
      { seq: 4, message: 'first' },
      { seq: 5, message: 'second' },
    ])
    expect(calls).toEqual([{ from: 4, messages: ['first', 'second', 'reply'] }])
  })

  it('starts a new write after a gap once the one before it is done (a message needs its predecessor)', async () => {
    const calls: number[] = []
    let finishFirst: () => void = () => {}
    const writes = {
      appendMessages: (_runId: string, from: number, messages: readonly unknown[]) => {
        calls.push(from)
        return from === 2
          ? new Promise<number>((resolve) => {
              finishFirst = () => resolve(messages.length)
            })
          : Promise.resolve(messages.length)
      },
    }
    const writing = appendInOrder(writes, 'r', [
      { seq: 9, message: 'c' },
      { seq: 2, message: 'a' },
      { seq: 3, message: 'b' },
    ])
    await new Promise((resolve) => setImmediate(resolve))
    expect(calls).toEqual([2])
    finishFirst()
    await writing
    expect(calls).toEqual([2, 9])
  })

  it('writes nothing for no messages', async () => {
    const { calls, writes } = recorder()
    await appendInOrder(writes, 'r', [])
    expect(calls).toEqual([])
  })
})
