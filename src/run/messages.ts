/** Transcript messages that workflows and activities both write (the gate's activity tells the model too). */
import type { InlineMessage } from './types.js'

export function gateFailureMessage(seq: number, summary: string): InlineMessage {
  return {
    seq,
    message: {
      role: 'user',
      content: `The verification command did not pass: ${summary}\nKeep working until it passes.`,
    },
  }
}
