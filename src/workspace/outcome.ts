/** What every workspace tool returns, its default bounds, and the options the caller may narrow them with. */
import { CALL_LIMITS } from '../tools/index.js'

export interface ToolOutcome {
  /** False when the tool refused or failed; the output then says why and what to do instead. */
  ok: boolean
  /** Bounded text for the model. */
  output: string
  /** One line for the audit. */
  summary: string
  /** The normalised workspace-relative path the tool acted on, when it had one. */
  path?: string
}

/** The paths a tool is about to touch, as resolved at execution time. */
export interface PathTarget {
  normalised: string
  resolved: string
}

export const DEFAULT_LIMITS = {
  /** Characters of output any one tool returns. */
  maxOutputChars: 50_000,
  /** Lines `readFile` returns when the call gives no `limit`. */
  maxLines: 2_000,
  /** Characters of one line `readFile` shows before cutting it. */
  maxLineChars: 2_000,
  /** Bytes `writeFile` and `editFile` will write: what a tool call may carry. */
  maxWriteBytes: CALL_LIMITS.contentBytes,
  /** Entries `listDir` shows. */
  maxEntries: 1_000,
  /** Matching lines `searchFiles` shows. */
  maxMatches: 200,
  /** Files `searchFiles` opens; a bigger tree is cut and the output says so. */
  maxSearchFiles: 20_000,
  /** Files larger than this are skipped by `searchFiles`. */
  maxSearchFileBytes: 4 * 1024 * 1024,
} as const

export type WorkspaceLimits = { -readonly [K in keyof typeof DEFAULT_LIMITS]: number }

export interface ToolOptions extends Partial<WorkspaceLimits> {
  /**
   * Judges the paths again at execution time, after they have been re-resolved (the policy saw them a
   * moment earlier; a symlink may have changed since). Returns true to proceed or a refusal for the model.
   */
  authorize?: (target: PathTarget) => true | string
  /** Workspace-relative paths hidden from the run (the sandbox's `hide`): `list_dir` shows their names only. */
  hidden?: (path: string) => boolean
  /** Stops long walks (search) when the run is cancelled. */
  signal?: AbortSignal
}

export function limitsOf(options: ToolOptions | undefined): WorkspaceLimits {
  return { ...DEFAULT_LIMITS, ...definedOnly(options ?? {}) }
}

function definedOnly(options: ToolOptions): Partial<WorkspaceLimits> {
  const limits: Partial<WorkspaceLimits> = {}
  for (const key of Object.keys(DEFAULT_LIMITS) as Array<keyof WorkspaceLimits>) {
    const value = options[key]
    if (value !== undefined) limits[key] = value
  }
  return limits
}

export function refusal(message: string, summary: string, path?: string): ToolOutcome {
  return { ok: false, output: message, summary, ...(path === undefined ? {} : { path }) }
}

export function success(output: string, summary: string, path?: string): ToolOutcome {
  return { ok: true, output, summary, ...(path === undefined ? {} : { path }) }
}

/**
 * Cuts text to `maxChars`, at a line break when one is near, and says how much was cut and how to see the
 * rest — the model must never mistake a cut output for the whole.
 */
export function boundText(text: string, maxChars: number, howToSeeMore: string): string {
  if (text.length <= maxChars) return text
  const room = Math.max(0, maxChars - 200)
  const lineBreak = text.lastIndexOf('\n', room)
  const cutAt = lineBreak > room / 2 ? lineBreak : room
  const rest = text.length - cutAt
  return `${text.slice(0, cutAt)}\n[… ${rest.toLocaleString('en-US')} more characters cut; ${howToSeeMore}]`
}
