/**
 * What changed between two recorded trees as a person reviews it: a unified diff of every text file that
 * changed, read from the snapshot store — so it works for any step of any run, on any machine, whether or not
 * the workspace is a git repository or still exists. Bounded: a file too large, binary or not UTF-8 gets
 * one line saying so, a diff too long to work out gets one line too, and the whole patch stops at a size,
 * saying how many changes it left out.
 */
import { createTwoFilesPatch } from 'diff'
import { type ComparedChange, compareTrees } from './restore.js'
import type { ObjectStore } from './store.js'
import { displayName, type TreeEntry } from './tree.js'

/** Bytes of a file (either side) that are diffed as text; a larger one gets a line. */
const TEXT_LIMIT = 256 * 1024
/** Characters of patch after which the remaining changes are only counted. */
const PATCH_LIMIT = 1024 * 1024
/** Edits beyond which a file's diff is not worked out (its cost grows with edits × size). */
const EDIT_LIMIT = 5_000
const CONTEXT_LINES = 3

export interface FilePatch {
  change: ComparedChange['change']
  /** The path as people read it. */
  path: string
  /** A unified diff (`---`, `+++`, hunks), or one line saying why there is none or what else changed. */
  text: string
}

export interface TreePatch {
  files: FilePatch[]
  /** Changes left out once the patch reached its size. */
  elided: number
}

/** Bytes of file contents fetched from the store in one call. */
const FETCH_BYTES = 4 * 1024 * 1024

/** The changes from tree `from` to tree `to`, each with its diff or its one line. */
export async function treePatch(store: ObjectStore, from: string, to: string): Promise<TreePatch> {
  const changes = (await compareTrees(store, from, to)).filter((c) => c.kind !== 'd' || c.change === 'T')
  // What each change shows the contents of, worked out once: it sizes the batches and picks what to fetch.
  const shown = changes.map(reads)
  const files: FilePatch[] = []
  let length = 0
  let next = 0
  while (next < changes.length && length < PATCH_LIMIT) {
    // The contents of the next changes, FETCH_BYTES or one change's at a time, in one call to the store.
    let end = next
    let bytes = 0
    while (end < changes.length) {
      const size = (shown[end] as TreeEntry[]).reduce((sum, e) => sum + e.size, 0)
      if (end > next && bytes + size > FETCH_BYTES) break
      bytes += size
      end++
    }
    const hashes = shown.slice(next, end).flatMap((entries) => entries.map((e) => e.hash))
    const objects = hashes.length > 0 ? await store.get(hashes) : new Map<string, Buffer>()
    for (; next < end && length < PATCH_LIMIT; next++) {
      const change = changes[next] as ComparedChange
      const path = displayName(change.path)
      const text = describe(change, path, shown[next] as TreeEntry[], objects)
      files.push({ change: change.change, path, text })
      length += text.length
    }
  }
  return { files, elided: changes.length - next }
}

/** The entries whose contents a change's line or diff shows: none for a mode, a kind or a large file. */
function reads(change: ComparedChange): TreeEntry[] {
  if (change.change === 'P' || change.change === 'T') return []
  const sides = [change.was, change.now].filter((e): e is TreeEntry => e !== undefined)
  return sides.some((e) => e.kind === 'F' || (e.kind !== 'l' && e.size > TEXT_LIMIT)) ? [] : sides
}

/** `change` as a line or a diff, from the contents of the entries it shows (`shown`, fetched into `objects`). */
function describe(
  change: ComparedChange,
  path: string,
  shown: TreeEntry[],
  objects: Map<string, Buffer>,
): string {
  const { was, now } = change
  if (change.change === 'P') return `mode ${octal(was)} → ${octal(now)}`
  if (change.change === 'T') return `was ${kindName(was)}, now ${kindName(now)}`
  const content = (entry: TreeEntry | undefined) => (entry ? objects.get(entry.hash) : undefined)
  if ((was ?? now)?.kind === 'l') {
    const [before, after] = [content(was)?.toString(), content(now)?.toString()]
    if (change.change === 'A') return `link to ${after}`
    if (change.change === 'D') return `link to ${before}, deleted`
    return `link: ${before} → ${after}`
  }
  if (shown.length === 0) return `large file (${sizes(was, now)}): not shown`
  const [before, after] = [was, now].map((entry) => (entry ? text(content(entry) as Buffer) : ''))
  if (before === undefined || after === undefined)
    return `binary or not UTF-8 (${sizes(was, now)}): not shown`
  const patch = createTwoFilesPatch(
    was ? `a/${path}` : '/dev/null',
    now ? `b/${path}` : '/dev/null',
    before,
    after,
    undefined,
    undefined,
    { context: CONTEXT_LINES, maxEditLength: EDIT_LIMIT },
  )
  if (patch === undefined) return `too many changes to show (${sizes(was, now)})`
  // jsdiff heads each patch with a rule of `=`; the `---`/`+++` lines are the header people know.
  return patch.slice(patch.indexOf('\n') + 1).trimEnd()
}

const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** The file as text, or undefined when it is binary (a NUL byte) or not UTF-8. */
function text(data: Buffer): string | undefined {
  if (data.includes(0)) return undefined
  try {
    return UTF8.decode(data)
  } catch {
    return undefined
  }
}

const octal = (entry: TreeEntry | undefined) => (entry?.mode ?? 0).toString(8).padStart(4, '0')

const kindName = (entry: TreeEntry | undefined) =>
  entry?.kind === 'd' ? 'a folder' : entry?.kind === 'l' ? 'a link' : 'a file'

const sizes = (was: TreeEntry | undefined, now: TreeEntry | undefined) =>
  [was && `${was.size} bytes before`, now && `${now.size} bytes now`].filter(Boolean).join(', ')
