/**
 * A run's transcript, which has no gaps: messages land in sequence order, and one is only ever replaced by a
 * later attempt of the activity that wrote it.
 */
import type { AuditStore, AuditWrites, StoredMessage } from '../audit/index.js'
import { SizedCache } from './sized-cache.js'

/** Appends `messages` (each at its own seq) in order; a retry that finds them stored is a no-op. */
export async function appendInOrder(
  audit: Pick<AuditWrites, 'appendMessages'>,
  runId: string,
  messages: readonly { seq: number; message: unknown }[],
): Promise<void> {
  // Consecutive messages in one write; after a gap, the next write waits (a message needs its predecessor).
  const spans: { from: number; messages: unknown[] }[] = []
  for (const { seq, message } of [...messages].sort((a, b) => a.seq - b.seq)) {
    const last = spans.at(-1)
    if (last && last.from + last.messages.length === seq) last.messages.push(message)
    else spans.push({ from: seq, messages: [message] })
  }
  for (const { from, messages } of spans) await audit.appendMessages(runId, from, messages)
}

/**
 * What the transcripts this worker keeps may take, by their messages' length as text; the runs read longest ago
 * are forgotten first (and read whole on their next turn).
 */
const KEPT_BYTES = 64 * 1024 * 1024
/** What a kept message takes besides its content (its row, the objects around it), roughly. */
const MESSAGE_OVERHEAD = 100

interface Kept {
  /** Messages 0 … n − 1, frozen: every later turn of the run is handed the same objects. */
  messages: readonly StoredMessage[]
  /** Their attempts summed. */
  attempts: number
  bytes: number
}

/**
 * The transcripts of the runs this worker's model turns read, kept between turns: a turn reads only the
 * messages stored since the run's last turn here (by this worker or another), where it read the whole
 * transcript again — a cost that grew with the run (980 KB and about 10 ms a turn at step 300 of a run whose
 * commands print 2 KB). What is kept is checked in the same round trip that reads the rest: the count of
 * the messages before the new ones and the sum of their attempts must be what was kept, or the whole
 * transcript is read again.
 */
export class KeptTranscripts {
  private readonly kept = new SizedCache<Kept>(KEPT_BYTES, (_, kept) => kept.bytes)

  constructor(private readonly audit: Pick<AuditStore, 'messageTail'>) {}

  /** Messages 0 … `count` − 1 of the run, as stored (fewer when fewer are). */
  async read(runId: string, count: number): Promise<readonly StoredMessage[]> {
    const kept = this.kept.get(runId)
    const from = kept && kept.messages.length <= count ? kept.messages.length : 0
    const tail = await this.audit.messageTail(runId, from, Math.max(1, count - from))
    const held =
      kept && from > 0 && tail.before.count === from && tail.before.attempts === kept.attempts
        ? kept
        : undefined
    if (from > 0 && !held) {
      this.kept.delete(runId)
      return this.read(runId, count)
    }
    // Only what follows on without a gap is kept (the writer leaves none; a reader does not rely on it).
    const fresh = tail.messages.slice(0, count - from)
    const gap = fresh.findIndex((m, i) => m.seq !== from + i)
    if (gap >= 0) fresh.length = gap
    const messages = [
      ...(held?.messages ?? []),
      ...fresh.map(({ seq, role, content }) => deepFreeze({ seq, role, content })),
    ]
    this.kept.set(runId, {
      messages,
      attempts: (held?.attempts ?? 0) + fresh.reduce((sum, m) => sum + m.attempt, 0),
      bytes: (held?.bytes ?? 0) + fresh.reduce((sum, m) => sum + m.bytes + MESSAGE_OVERHEAD, 0),
    })
    return messages
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}
