/**
 * The transcripts a worker keeps between model turns, on a real PostgreSQL: a turn reads only what was stored
 * since the last, yet never hands on a message that was replaced or lost since it was kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { KeptTranscripts } from '../../src/activities/transcript.js'
import type { AuditStore } from '../../src/audit/index.js'
import { newRunId } from '../../src/embed/client.js'
import { openTestAudit } from '../support/agent.js'

let audit: AuditStore
beforeAll(async () => {
  audit = await openTestAudit()
})
afterAll(async () => {
  await audit?.close()
})

async function newRun(messages: number): Promise<string> {
  const runId = newRunId()
  await audit.pool.query(
    `insert into runs (run_id, goal, workspace, contract, policy, started_at) values ($1, 'g', '/w', '{}', '{}', now())`,
    [runId],
  )
  await audit.appendMessages(
    runId,
    0,
    Array.from({ length: messages }, (_, i) => ({ role: 'user', text: `message ${i}` })),
  )
  return runId
}

/** The audit, with each read the transcripts make written down: which messages it asked for. */
function watched() {
  const reads: Array<[from: number, limit: number]> = []
  return {
    reads,
    audit: {
      messageTail: (runId: string, from: number, limit: number) => {
        reads.push([from, limit])
        return audit.messageTail(runId, from, limit)
      },
    },
  }
}

const texts = (messages: readonly { content: unknown }[]) =>
  messages.map((m) => (m.content as { text: string }).text)

describe('kept transcripts', () => {
  it('read only the messages stored since the last read, by this worker or another', async () => {
    const runId = await newRun(3)
    const { reads, audit: observed } = watched()
    const transcripts = new KeptTranscripts(observed)
    expect(texts(await transcripts.read(runId, 2))).toEqual(['message 0', 'message 1'])
    // Another worker stored the next turn's messages.
    await audit.appendMessages(runId, 3, [
      { role: 'assistant', text: 'message 3', toolCalls: [] },
      { role: 'tool', text: 'message 4' },
    ])
    expect(texts(await transcripts.read(runId, 6))).toEqual([
      'message 0',
      'message 1',
      'message 2',
      'message 3',
      'message 4',
    ])
    expect(texts(await transcripts.read(runId, 5))).toHaveLength(5)
    expect(reads).toEqual([
      [0, 2],
      [2, 4],
      [5, 1],
    ])
  })

  it('read the whole transcript again when a kept message was replaced by a later attempt', async () => {
    const runId = await newRun(4)
    const { reads, audit: observed } = watched()
    const transcripts = new KeptTranscripts(observed)
    expect(texts(await transcripts.read(runId, 4))).toContain('message 2')
    // A retried activity's result takes the place of its first attempt's.
    await audit.appendMessages(runId, 2, [{ role: 'tool', text: 'message 2, second attempt' }], {
      attempt: 2,
    })
    expect(texts(await transcripts.read(runId, 4))).toEqual([
      'message 0',
      'message 1',
      'message 2, second attempt',
      'message 3',
    ])
    expect(reads).toEqual([
      [0, 4],
      [4, 1],
      [0, 4],
    ])
  })

  it('read the whole transcript again when kept messages are gone from the audit', async () => {
    const runId = await newRun(3)
    const transcripts = new KeptTranscripts(audit)
    expect(await transcripts.read(runId, 3)).toHaveLength(3)
    // One gone and one replaced: the attempts sum to what they did, the count does not.
    await audit.pool.query('delete from messages where run_id = $1 and seq = 2', [runId])
    await audit.appendMessages(runId, 1, [{ role: 'tool', text: 'message 1, second attempt' }], {
      attempt: 2,
    })
    expect(texts(await transcripts.read(runId, 3))).toEqual(['message 0', 'message 1, second attempt'])
  })

  it('hand out messages no caller can change for the next turn', async () => {
    const runId = await newRun(2)
    const transcripts = new KeptTranscripts(audit)
    const [first] = await transcripts.read(runId, 2)
    expect(() => {
      ;(first?.content as { text: string }).text = 'changed'
    }).toThrow(TypeError)
    expect(texts(await transcripts.read(runId, 2))).toEqual(['message 0', 'message 1'])
  })
})
