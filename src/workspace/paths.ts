/**
 * Path safety: every path a tool receives is workspace-relative, and what it names — after every symlink
 * of every existing prefix is followed — must stay inside the workspace root. That includes a path that
 * does not exist yet: a new file under a symlinked directory lands wherever the link points.
 */
import { lstatSync, readlinkSync, realpathSync } from 'node:fs'
import path from 'node:path'

export type NormalisedPath = { ok: true; normalised: string } | { ok: false; reason: string }

export type ResolvedPath = {
  ok: true
  /** The path as written, made canonical without touching the disk: posix, relative, no `.` or `..`. */
  normalised: string
  /** Workspace-relative path of what it names once every symlink of every existing prefix is followed. */
  resolved: string
  /** Absolute path of the same (no symlinks left in its existing prefix). */
  absolute: string
}

export type PathResolution = ResolvedPath | { ok: false; reason: string }

/** The workspace root itself is `.`, so policy rules and audit rows never see an empty path. */
export const ROOT_PATH = '.'

/** Symlinks followed for one path before giving up (the kernel's own limit is 40). */
const MAX_LINK_HOPS = 40

const CONTROL_CHARACTER = /[\u0001-\u001f\u007f]/

/**
 * Canonical form of a workspace-relative path, without touching the disk. `..` is applied lexically
 * (`a/link/..` is `a`, whatever `link` points to) — the tools then open exactly the normalised path, so
 * the policy and the tool agree on what was meant.
 */
export function normaliseWorkspacePath(relPath: string): NormalisedPath {
  if (typeof relPath !== 'string') return { ok: false, reason: 'the path must be a string' }
  const shown = JSON.stringify(relPath)
  if (relPath.trim() === '') {
    return {
      ok: false,
      reason: 'the path is empty; give a path relative to the workspace root (`.` is the root)',
    }
  }
  if (relPath.includes('\0')) return { ok: false, reason: `the path ${shown} contains a NUL byte` }
  if (CONTROL_CHARACTER.test(relPath)) {
    return { ok: false, reason: `the path ${shown} contains a control character; file names here must not` }
  }
  if (relPath.startsWith('/')) {
    return { ok: false, reason: `${shown} is an absolute path; give a path relative to the workspace root` }
  }
  if (/^[A-Za-z]:/.test(relPath) || relPath.includes('\\')) {
    return {
      ok: false,
      reason: `${shown} uses a Windows drive or backslashes; write workspace-relative paths with \`/\``,
    }
  }
  if (relPath === '~' || relPath.startsWith('~/')) {
    return {
      ok: false,
      reason: `${shown} starts with \`~\`, which is not expanded here; paths are relative to the workspace root`,
    }
  }
  const kept: string[] = []
  for (const segment of relPath.split('/')) {
    if (segment === '' || segment === '.') continue
    if (segment === '..') {
      if (kept.length === 0) {
        return { ok: false, reason: `${shown} leaves the workspace: \`..\` goes above the workspace root` }
      }
      kept.pop()
    } else {
      kept.push(segment)
    }
  }
  return { ok: true, normalised: kept.length === 0 ? ROOT_PATH : kept.join('/') }
}

/** Marks the point of a walk where a symlink's target has been fully followed. */
interface LinkLanding {
  link: string
}

type Step = string | LinkLanding

function isInside(realRoot: string, candidate: string): boolean {
  const relative = path.relative(realRoot, candidate)
  return relative === '' || (!path.isAbsolute(relative) && relative !== '..' && !relative.startsWith('../'))
}

export function toWorkspaceRelative(realRoot: string, absolute: string): string {
  return path.relative(realRoot, absolute).split(path.sep).join('/') || ROOT_PATH
}

export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error ? String(error.code) : undefined
}

/**
 * Follows `segments` from `realRoot` the way the kernel would, one component at a time, so that a symlink
 * anywhere (also a dangling one, also the last component) is seen. Each link must land inside the root;
 * once a component does not exist, the rest is joined lexically (nothing below it can be a link yet).
 */
function walk(
  realRoot: string,
  segments: string[],
): { ok: true; absolute: string } | { ok: false; reason: string } {
  const steps: Step[] = [...segments]
  let current = realRoot
  let hops = 0
  const outside = (link: string, where: string) => ({
    ok: false as const,
    reason: `${JSON.stringify(link)} is a symlink that points outside the workspace (to ${JSON.stringify(where)})`,
  })
  while (steps.length > 0) {
    const step = steps.shift()!
    if (typeof step !== 'string') {
      if (!isInside(realRoot, current)) return outside(step.link, current)
      continue
    }
    if (step === '' || step === '.') continue
    if (step === '..') {
      current = path.dirname(current)
      continue
    }
    const next = path.join(current, step)
    let isLink: boolean
    try {
      isLink = lstatSync(next).isSymbolicLink()
    } catch (error) {
      const code = errorCode(error)
      if (code !== 'ENOENT' && code !== 'ENOTDIR') {
        return { ok: false, reason: `cannot inspect ${JSON.stringify(next)} (${code ?? String(error)})` }
      }
      const rest = steps.filter((s): s is string => typeof s === 'string')
      const absolute = path.resolve(next, ...rest)
      const pendingLink = steps.find((s): s is LinkLanding => typeof s !== 'string')
      if (!isInside(realRoot, absolute)) {
        return pendingLink
          ? outside(pendingLink.link, absolute)
          : { ok: false, reason: `the path resolves outside the workspace (${JSON.stringify(absolute)})` }
      }
      return { ok: true, absolute }
    }
    if (!isLink) {
      current = next
      continue
    }
    hops += 1
    if (hops > MAX_LINK_HOPS) {
      return {
        ok: false,
        reason: `too many symlinks to follow (more than ${MAX_LINK_HOPS}); is there a loop?`,
      }
    }
    let target: string
    try {
      target = readlinkSync(next)
    } catch (error) {
      return {
        ok: false,
        reason: `cannot read the symlink ${JSON.stringify(next)} (${errorCode(error) ?? String(error)})`,
      }
    }
    const link = isInside(realRoot, next) ? toWorkspaceRelative(realRoot, next) : next
    if (path.isAbsolute(target)) current = path.parse(target).root
    steps.unshift(...target.split('/'), { link })
  }
  if (!isInside(realRoot, current)) {
    return { ok: false, reason: `the path resolves outside the workspace (${JSON.stringify(current)})` }
  }
  return { ok: true, absolute: current }
}

/**
 * Resolves a workspace-relative path for a tool or a policy check. Synchronous on purpose: it is a few
 * `lstat` calls, and the policy check that needs it is a plain function run as a local activity. Refuses absolute paths, `..` above the
 * root, NUL and control characters, and any symlink — of the target or of a parent, existing or dangling —
 * that leads outside the root. The policy judges both `normalised` and `resolved`, so a link named
 * `notes.txt` that points at `.env` meets the `.env` rule.
 */
export function resolveWorkspacePath(root: string, relPath: string): PathResolution {
  const lexical = normaliseWorkspacePath(relPath)
  if (!lexical.ok) return lexical
  let realRoot: string
  try {
    realRoot = realpathSync(root)
  } catch (error) {
    return {
      ok: false,
      reason: `the workspace root ${JSON.stringify(root)} cannot be opened (${errorCode(error) ?? String(error)})`,
    }
  }
  const segments = lexical.normalised === ROOT_PATH ? [] : lexical.normalised.split('/')
  const walked = walk(realRoot, segments)
  if (!walked.ok) return walked
  return {
    ok: true,
    normalised: lexical.normalised,
    resolved: toWorkspaceRelative(realRoot, walked.absolute),
    absolute: walked.absolute,
  }
}
