/**
 * `search`: a JavaScript regular expression over the workspace's text files, answered as `path:line: text`.
 * Files the policy would not let the agent read are left out without a word (naming them would leak what
 * the policy hides); so are `.git`, `node_modules`, symlinks, binary and oversized files.
 */
import path from 'node:path'
import vm from 'node:vm'
import picomatch from 'picomatch'
import { listOpened, openResolved } from './io.js'
import {
  boundText,
  limitsOf,
  refusal,
  success,
  type ToolOptions,
  type ToolOutcome,
  type WorkspaceLimits,
} from './outcome.js'
import { ROOT_PATH, resolveWorkspacePath } from './paths.js'
import { decodeText, printable } from './text.js'

export interface SearchArgs {
  /** A JavaScript regular expression, matched against each line. */
  pattern: string
  /** Only files whose workspace path matches; a glob without `/` matches the file name at any depth. */
  glob?: string
}

export interface SearchOptions extends ToolOptions {
  /** Whether the policy lets the agent read this workspace-relative file; false leaves it out silently. */
  canRead: (path: string) => boolean
}

/** Directories never searched: version-control internals and installed dependencies. */
const SKIPPED_DIRECTORIES = new Set(['.git', 'node_modules'])
/** Characters of one matching line shown, centred on the match when the line is longer. */
const MATCH_LINE_CHARS = 300
/** Characters kept for the totals line under the matches. */
const FOOTER_ROOM = 400

/**
 * Matching runs in its own V8 context under a time limit. A pattern that backtracks without end (`(a+)+$`
 * on a long line) would otherwise block the worker's event loop — and with it the activity's heartbeats —
 * until Temporal took the worker for dead and retried the search elsewhere, to the same end. Files are
 * matched in batches, since entering the context costs about a tenth of a millisecond.
 */
const MATCHER = new vm.Script(`(() => {
  const found = []
  for (let f = 0; f < files.length; f++) {
    const lines = files[f]
    for (let i = 0; i < lines.length; i++) {
      const match = regex.exec(lines[i])
      if (match) {
        found.push(f, i, match.index)
        if (found.length >= wanted * 3) return found
      }
    }
  }
  return found
})()`)
/** Longest one batch may block the event loop: well inside the file tools' 10 s heartbeat timeout. */
const MATCH_SLICE_MS = 2_000
/** Matching time of one whole search. */
const MATCH_BUDGET_MS = 20_000
const BATCH_FILES = 500
const BATCH_CHARS = 1_000_000

interface Tally {
  matches: string[]
  filesSearched: number
  filesWithMatches: number
  skippedBinary: number
  skippedLarge: number
  /** Why the walk ended early, when it did. */
  stopped?: string
}

function clip(line: string, index: number): string {
  if (line.length <= MATCH_LINE_CHARS) return line
  const start = Math.max(0, Math.min(index - 80, line.length - MATCH_LINE_CHARS))
  const end = start + MATCH_LINE_CHARS
  return `${start > 0 ? '…' : ''}${line.slice(start, end)}${end < line.length ? '…' : ''}`
}

class Walk {
  readonly tally: Tally = {
    matches: [],
    filesSearched: 0,
    filesWithMatches: 0,
    skippedBinary: 0,
    skippedLarge: 0,
  }
  /** Text files read and not yet matched, in path order. */
  private batch: Array<{ relPath: string; lines: string[] }> = []
  private batchChars = 0
  private matchMs = 0
  private readonly context = vm.createContext({})

  constructor(
    private readonly root: string,
    private readonly realRoot: string,
    private readonly regex: RegExp,
    private readonly wanted: (relPath: string) => boolean,
    private readonly limits: WorkspaceLimits,
    private readonly signal: AbortSignal | undefined,
  ) {}

  private target(relPath: string) {
    const absolute = relPath === ROOT_PATH ? this.realRoot : path.join(this.realRoot, relPath)
    return { ok: true as const, normalised: relPath, resolved: relPath, absolute }
  }

  async directory(relPath: string): Promise<void> {
    const opened = await openResolved(this.root, this.target(relPath), 'directory')
    if (!opened.ok) return
    let entries: Awaited<ReturnType<typeof listOpened>>
    try {
      entries = await listOpened(opened)
    } finally {
      await opened.handle.close()
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      if (this.tally.stopped) return
      const child = relPath === ROOT_PATH ? entry.name : `${relPath}/${entry.name}`
      // Symlinks are not followed: a walk stays inside the tree it started in.
      if (entry.isDirectory() && !SKIPPED_DIRECTORIES.has(entry.name)) await this.directory(child)
      else if (entry.isFile() && this.wanted(child)) await this.file(child)
    }
  }

  private async file(relPath: string): Promise<void> {
    if (this.signal?.aborted) {
      this.tally.stopped = 'the search was cancelled'
      return
    }
    if (this.tally.filesSearched >= this.limits.maxSearchFiles) {
      this.tally.stopped = `stopped after ${this.limits.maxSearchFiles.toLocaleString('en-US')} files; give a glob to narrow the search`
      return
    }
    const opened = await openResolved(this.root, this.target(relPath), 'file')
    if (!opened.ok) return
    let bytes: Buffer
    try {
      if (!opened.stats.isFile()) return
      this.tally.filesSearched += 1
      if (opened.stats.size > this.limits.maxSearchFileBytes) {
        this.tally.skippedLarge += 1
        return
      }
      bytes = await opened.handle.readFile()
    } finally {
      await opened.handle.close()
    }
    const decoded = decodeText(bytes)
    if (!decoded.ok) {
      this.tally.skippedBinary += 1
      return
    }
    const lines = decoded.text.split('\n').map((line) => (line.endsWith('\r') ? line.slice(0, -1) : line))
    this.batch.push({ relPath, lines })
    this.batchChars += decoded.text.length
    if (this.batch.length >= BATCH_FILES || this.batchChars >= BATCH_CHARS) this.match()
  }

  /** Matches the batch, in path order, within the time limits; call once more when the walk is done. */
  match(): void {
    const batch = this.batch
    this.batch = []
    this.batchChars = 0
    if (batch.length === 0) return
    const wanted = this.limits.maxMatches - this.tally.matches.length + 1
    Object.assign(this.context, { regex: this.regex, files: batch.map((file) => file.lines), wanted })
    const started = performance.now()
    let found: number[]
    try {
      const timeout = Math.max(1, Math.min(MATCH_SLICE_MS, MATCH_BUDGET_MS - this.matchMs))
      found = MATCHER.runInContext(this.context, { timeout })
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw error
      const files =
        batch.length === 1 ? `in ${printable(batch[0]?.relPath ?? '')}` : `in ${batch.length} files`
      this.tally.stopped =
        `stopped: the pattern took too long ${files} (over ${MATCH_SLICE_MS / 1_000} s); nested repetition ` +
        'such as (a+)+ can take exponential time — simplify the pattern or give a glob'
      return
    } finally {
      this.matchMs += performance.now() - started
      Object.assign(this.context, { files: undefined })
    }
    let last = -1
    for (let at = 0; at < found.length; at += 3) {
      const [f, i, index] = found.slice(at, at + 3) as [number, number, number]
      if (this.tally.matches.length >= this.limits.maxMatches) {
        this.tally.stopped = `stopped at ${this.limits.maxMatches} matching lines; narrow the pattern or give a glob`
        // The files after this one were read but not searched.
        this.tally.filesSearched -= batch.length - f - 1
        return
      }
      const file = batch[f] as { relPath: string; lines: string[] }
      if (f !== last) this.tally.filesWithMatches += 1
      last = f
      this.tally.matches.push(`${printable(file.relPath)}:${i + 1}: ${clip(file.lines[i] as string, index)}`)
    }
    if (this.matchMs >= MATCH_BUDGET_MS) {
      this.tally.stopped = `stopped after ${MATCH_BUDGET_MS / 1_000} s of matching; simplify the pattern or give a glob`
    }
  }
}

function plural(count: number, noun: string): string {
  return `${count.toLocaleString('en-US')} ${noun}${count === 1 ? '' : 's'}`
}

/** Searches workspace text files for a regular expression; results are bounded and say when they were cut. */
export async function searchFiles(
  root: string,
  args: SearchArgs,
  options: SearchOptions,
): Promise<ToolOutcome> {
  const limits = limitsOf(options)
  const described = `/${args.pattern}/${args.glob === undefined ? '' : ` in ${args.glob}`}`
  let regex: RegExp
  try {
    regex = new RegExp(args.pattern)
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error)
    return refusal(
      `invalid regular expression: ${why}. Write a JavaScript regular expression; escape ( ) [ ] { } . * + ? | \\ with a backslash to match them literally`,
      `search ${described}: invalid regular expression`,
    )
  }
  let globMatches: (relPath: string) => boolean = () => true
  if (args.glob !== undefined) {
    try {
      globMatches = picomatch(args.glob, { windows: false, dot: true, basename: !args.glob.includes('/') })
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error)
      return refusal(`invalid glob ${JSON.stringify(args.glob)}: ${why}`, `search ${described}: invalid glob`)
    }
  }
  const rootPath = resolveWorkspacePath(root, ROOT_PATH)
  if (!rootPath.ok) return refusal(rootPath.reason, `search ${described}: ${rootPath.reason}`)
  const walk = new Walk(
    root,
    rootPath.absolute,
    regex,
    (relPath) => globMatches(relPath) && options.canRead(relPath),
    limits,
    options.signal,
  )
  await walk.directory(ROOT_PATH)
  walk.match()
  const { tally } = walk
  const skipped = [
    tally.skippedBinary > 0 ? `${tally.skippedBinary} binary or non-UTF-8` : '',
    tally.skippedLarge > 0
      ? `${tally.skippedLarge} over ${limits.maxSearchFileBytes.toLocaleString('en-US')} bytes`
      : '',
  ].filter(Boolean)
  const skippedNote = skipped.length > 0 ? ` (skipped: ${skipped.join(', ')})` : ''
  const totals = `${plural(tally.matches.length, 'matching line')} in ${plural(tally.filesWithMatches, 'file')}; ${plural(tally.filesSearched, 'file')} searched${skippedNote}`
  const found = tally.matches.length === 0 ? `no matches for ${described}` : tally.matches.join('\n')
  const output = [
    boundText(found, limits.maxOutputChars - FOOTER_ROOM, 'narrow the pattern or give a glob'),
    `[${totals}${tally.stopped ? `; ${tally.stopped}` : ''}]`,
  ].join('\n')
  return success(output, `search ${described}: ${totals}${tally.stopped ? ' (cut)' : ''}`)
}
