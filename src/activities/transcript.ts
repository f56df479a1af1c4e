/** Writing to a run's transcript, which has no gaps: messages land in sequence order. */
import type { AuditWrites } from '../audit/index.js'
import type { InlineMessage } from '../run/index.js'

/** Appends `messages` (each at its own seq) in order; a retry that finds them stored is a no-op. */
export async function appendInOrder(
  audit: Pick<AuditWrites, 'appendMessages'>,
  runId: string,
  messages: readonly InlineMessage[],
): Promise<void> {
  for (const { seq, message } of [...messages].sort((a, b) => a.seq - b.seq)) {
    await audit.appendMessages(runId, seq, [message])
  }
}
