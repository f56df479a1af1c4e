/**
 * What of a model's reply tether keeps. A reply is whatever the provider sent — any number of calls, any
 * size, any string — and it must still be stored in the transcript and summarised into Temporal history, so
 * every call is validated here on its full arguments (shape and sizes, see src/tools), the verdict is kept
 * with the call, and what cannot be used is stored bounded. Valid calls are stored exactly as the model
 * made them: the file tools read their arguments back from the transcript.
 */

import { clip, formatCount } from '../present/index.js'
import {
  boundString,
  boundValue,
  CALL_LIMITS,
  isMcpToolName,
  mcpArguments,
  type ToolCall,
  utf8Length,
  type ValidatedCall,
  type ValueBounds,
  validateToolCall,
  wellFormed,
} from '../tools/index.js'

export const REPLY_LIMITS = {
  /** Tool calls kept from one reply; the rest are dropped and the stored text says so. */
  calls: 64,
  /** Characters of the reply's text stored in the transcript. */
  textChars: 100_000,
  /**
   * UTF-8 bytes of the `exec` arguments (and MCP tools' arguments, as JSON) of all calls in one reply. They
   * travel through Temporal history exactly (the policy judges what will run), and so do the policy's
   * verdicts on them, several times their size; history's payloads should stay well under 512 KiB.
   */
  argvBytes: CALL_LIMITS.argvBytes,
  /** UTF-8 bytes of the arguments of all valid calls in one reply, all stored in the transcript. */
  argumentBytes: 8 * 1024 * 1024,
  /** Characters of a call id; a longer or malformed one is replaced by `tether-call-<index>`. */
  idChars: 256,
  /** Characters of a tool name kept (no tool has a longer one: an MCP tool's `server.tool` is at most 193). */
  nameChars: 200,
} as const

export const STORED_VALUE_BOUNDS: ValueBounds = { chars: 2_000, entries: 50, depth: 6 }

export interface BoundedReply {
  text: string
  /** Each call as the model made it, or bounded with the reason it was refused (`invalid`). */
  toolCalls: ToolCall[]
}

/** The reply as it is stored: every call validated, everything unusable bounded, all text well-formed. */
export function boundReply(reply: { text: string; toolCalls: readonly ToolCall[] }): BoundedReply {
  const kept = reply.toolCalls.slice(0, REPLY_LIMITS.calls)
  const dropped = reply.toolCalls.length - kept.length
  let argvBytes = 0
  let argumentBytes = 0
  const toolCalls = kept.map((call, index): ToolCall => {
    const id = boundId(call.id, index)
    const name = wellFormed(clip(String(call.name), REPLY_LIMITS.nameChars))
    const checked = validateToolCall({ id, name, args: call.args })
    let invalid = checked.ok ? undefined : checked.error
    if (checked.ok) {
      const argv =
        checked.call.name === 'exec'
          ? argvSize(checked.call.args.argv)
          : isMcpToolName(checked.call.name)
            ? utf8Length(mcpArguments(checked.call.args))
            : 0
      const size = stringBytes(checked.call.args)
      if (argvBytes + argv > REPLY_LIMITS.argvBytes) {
        invalid =
          `invalid arguments for ${name}: the ${name === 'exec' ? 'commands' : 'calls'} before it in this reply already pass ${formatCount(argvBytes)} ` +
          `bytes of arguments, and one reply may pass ${formatCount(REPLY_LIMITS.argvBytes)} bytes in all: ${name === 'exec' ? 'run' : 'make'} it in your next turn`
      } else if (argumentBytes + size > REPLY_LIMITS.argumentBytes) {
        invalid =
          `invalid arguments for ${name}: the calls before it in this reply already carry ${formatCount(argumentBytes)} ` +
          `bytes of arguments, and one reply may carry ${formatCount(REPLY_LIMITS.argumentBytes)} bytes in all: make it in your next turn`
      } else {
        argvBytes += argv
        argumentBytes += size
      }
    }
    if (invalid === undefined) return { id, name, args: call.args }
    return { id, name, args: boundValue(call.args, STORED_VALUE_BOUNDS), invalid }
  })
  const notes =
    dropped > 0
      ? `\n[tether: ${formatCount(dropped)} more tool calls of this reply were dropped unanswered; a reply may make at most ${REPLY_LIMITS.calls}]`
      : ''
  return { text: `${boundString(reply.text, REPLY_LIMITS.textChars)}${notes}`, toolCalls }
}

function boundId(id: unknown, index: number): string {
  return typeof id === 'string' && id.length > 0 && id.length <= REPLY_LIMITS.idChars && wellFormed(id) === id
    ? id
    : `tether-call-${index}`
}

function argvSize(argv: readonly string[]): number {
  return argv.reduce((sum, argument) => sum + utf8Length(argument) + 1, 0)
}

/** UTF-8 bytes of the strings in a validated call's arguments. */
function stringBytes(args: ValidatedCall['args']): number {
  return Object.values(args).reduce<number>((sum, value) => {
    if (typeof value === 'string') return sum + utf8Length(value)
    if (Array.isArray(value)) return sum + argvSize(value)
    return sum
  }, 0)
}
