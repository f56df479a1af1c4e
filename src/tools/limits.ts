/**
 * The sizes a tool call may have, checked on every call before anything runs. Each limit sits below what
 * the layer that would otherwise fail accepts (the OS for a command's arguments, the file system for paths,
 * the file tools for contents), so a call over one becomes a message the model can act on — never a run
 * failure further down. Pure (no Node, no Temporal): the workflow and the activities check with the same code.
 */
import { formatCount, UNPAIRED_SURROGATE, unpairedSurrogates } from '../present/index.js'
export const CALL_LIMITS = {
  /**
   * UTF-8 bytes of one `exec` argument. Linux refuses one of 128 KiB (MAX_ARG_STRLEN), but a command is
   * judged, shown to approvers and recorded in Temporal history several times over, so the limit is lower.
   */
  argumentBytes: 32_768,
  /**
   * UTF-8 bytes of a whole `exec` argv, each argument counted with its terminating NUL: far below the ~2 MiB
   * Linux takes for arguments and environment together (the sandbox adds its own of both), and small enough
   * that the policy's verdict on it stays a modest history payload.
   */
  argvBytes: 65_536,
  /** Arguments of one `exec` call (checked by its schema). */
  argvCount: 4_096,
  /** UTF-8 bytes of a workspace path (PATH_MAX). */
  pathBytes: 4_096,
  /** UTF-8 bytes of one file or folder name in a path (NAME_MAX). */
  nameBytes: 255,
  /**
   * UTF-8 bytes of `write_file` content and of each of `edit_file`'s `search` and `replace`; the file tools
   * write at most this much (workspace/outcome.ts).
   */
  contentBytes: 2 * 1024 * 1024,
  /** UTF-8 bytes of a `search` pattern or glob. */
  patternBytes: 4_096,
} as const

/** UTF-8 length of `text`, an unpaired surrogate counted as the 3 bytes of U+FFFD that replace it. */
export function utf8Length(text: string): number {
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) continue
    if (unit < 0x800) bytes += 1
    else if (unit >= 0xd800 && unit <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1))) {
      // A pair: two UTF-16 units, four bytes.
      bytes += 2
      i++
    } else bytes += 2
  }
  return bytes
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff
}

/** Why `text` is not well-formed Unicode, naming `field`; undefined when it is. */
export function malformedText(field: string, text: string): string | undefined {
  const at = text.search(UNPAIRED_SURROGATE)
  if (at === -1) return undefined
  return (
    `${field} holds an unpaired UTF-16 surrogate (at character ${formatCount(at)}), which is not valid ` +
    'Unicode and has no UTF-8 form; send valid text'
  )
}

/** `text` with every unpaired surrogate replaced by U+FFFD, so it can be stored and sent as UTF-8. */
export function wellFormed(text: string): string {
  return UNPAIRED_SURROGATE.test(text) ? text.replace(unpairedSurrogates(), '\uFFFD') : text
}

function tooLarge(field: string, bytes: number, limit: number, what: string, advice: string): string {
  return `${field} is ${formatCount(bytes)} bytes; the limit is ${formatCount(limit)} bytes ${what}: ${advice}`
}

const TO_A_FILE = 'write the text to a file with write_file and pass its path instead'

/** Why an `exec` argv is over a limit or cannot reach the OS intact; undefined when it is fine. */
export function argvProblem(argv: readonly string[]): string | undefined {
  let total = 0
  for (const [index, argument] of argv.entries()) {
    const field = `argv[${index}]`
    const malformed = malformedText(field, argument)
    if (malformed) return malformed
    const nul = argument.indexOf('\0')
    if (nul !== -1) {
      return `${field} holds a NUL character (at character ${formatCount(nul)}); the OS ends arguments at NUL: pass binary data through a file`
    }
    const bytes = utf8Length(argument)
    if (bytes > CALL_LIMITS.argumentBytes) {
      return tooLarge(field, bytes, CALL_LIMITS.argumentBytes, 'per argument', TO_A_FILE)
    }
    total += bytes + 1
  }
  if (total > CALL_LIMITS.argvBytes) {
    return tooLarge('argv', total, CALL_LIMITS.argvBytes, 'for all arguments together', TO_A_FILE)
  }
  return undefined
}

/** Why `text` is malformed or over `limit` bytes; undefined when it is fine. */
function textProblem(field: string, text: string, limit: number, what: string, advice: string) {
  const malformed = malformedText(field, text)
  if (malformed) return malformed
  const bytes = utf8Length(text)
  return bytes > limit ? tooLarge(field, bytes, limit, what, advice) : undefined
}

/** Why a workspace path is too long or malformed; undefined when it is fine. */
export function pathProblem(field: string, path: string): string | undefined {
  const problem = textProblem(field, path, CALL_LIMITS.pathBytes, 'for a path', 'use a shorter path')
  if (problem) return problem
  for (const name of path.split('/')) {
    const nameBytes = utf8Length(name)
    if (nameBytes > CALL_LIMITS.nameBytes) {
      return (
        `${field} has a name of ${formatCount(nameBytes)} bytes (${JSON.stringify(`${name.slice(0, 40)}…`)}); ` +
        `the limit is ${formatCount(CALL_LIMITS.nameBytes)} bytes per file or folder name: use a shorter name`
      )
    }
  }
  return undefined
}

/** Why text a file tool writes (or searches for) is too large or malformed; undefined when it is fine. */
export function contentProblem(field: string, text: string): string | undefined {
  return textProblem(
    field,
    text,
    CALL_LIMITS.contentBytes,
    'for what one call writes',
    'split it into smaller files, or generate it with a command',
  )
}

/** Why a search pattern or glob is too long or malformed; undefined when it is fine. */
export function patternProblem(field: string, text: string): string | undefined {
  return textProblem(field, text, CALL_LIMITS.patternBytes, `for a ${field}`, `write a shorter ${field}`)
}
