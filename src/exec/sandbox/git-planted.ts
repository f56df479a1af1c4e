/**
 * Git's files that make git run a program, written into a workspace while a run worked there. Inside the
 * sandbox they are harmless (git.ts: the configuration of every repository found is read-only, and every
 * command gets `core.fsmonitor=false`), but a command a rule allows to write files can create a *new*
 * repository — `sub/.git/config` with `core.fsmonitor = CMD` — and outside the sandbox the person's own git,
 * or an editor that runs git in every repository it finds, obeys it as theirs. What the run wrote is told
 * by the inode's change time (which no command can set back), so configuration that was there before the
 * run is not reported; what cannot be read whole is reported rather than passed over.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
} from 'node:fs'
import { dirname, isAbsolute, join, relative } from 'node:path'
import { clip, formatCount } from '../../present/index.js'
import { subfolders } from './folders.js'
import { gitFoldersUnder, nestedGitEntries, readHead } from './git.js'

/** One file, and what in it makes git run a program. */
export interface PlantedGitFile {
  /** Relative to the workspace. */
  path: string
  what: string
}

/**
 * How much earlier than `since` a change still counts: file times come from a coarse clock (a tick behind),
 * and the run's start from its worker's, perhaps another machine's. Erring early reports more, never less.
 */
const CLOCK_SLACK_MS = 2_000

/**
 * The walk for repositories, wider than the sandbox's before each command (it runs once, when a person
 * asks); past it, the list says so rather than look complete.
 */
const PLANTED_WALK = { folders: 20_000, entries: 1_000_000 }

/** Configuration read whole up to this; a larger file is reported as one that could not be checked. */
const CONFIG_READ_LIMIT = 256 * 1024

/**
 * Configuration keys whose value git runs, or that lead git to one that does: `[section, key, subsection]`,
 * the subsection none, any (required) or either; `*` is any key. Lower case, as git compares them.
 */
const PROGRAM_KEYS: ReadonlyArray<readonly [string, string, 'none' | 'any' | 'either']> = [
  ['core', 'fsmonitor', 'none'],
  ['core', 'hookspath', 'none'],
  ['core', 'sshcommand', 'none'],
  ['core', 'pager', 'none'],
  ['core', 'editor', 'none'],
  ['core', 'askpass', 'none'],
  ['core', 'gitproxy', 'none'],
  ['sequence', 'editor', 'none'],
  ['diff', 'external', 'none'],
  ['diff', 'textconv', 'any'],
  ['diff', 'command', 'any'],
  ['difftool', 'cmd', 'any'],
  ['mergetool', 'cmd', 'any'],
  ['merge', 'driver', 'any'],
  ['filter', 'clean', 'any'],
  ['filter', 'smudge', 'any'],
  ['filter', 'process', 'any'],
  ['credential', 'helper', 'either'],
  ['gpg', 'program', 'either'],
  ['pager', '*', 'none'],
  ['alias', '*', 'none'],
  ['interactive', 'difffilter', 'none'],
  ['uploadpack', 'packobjectshook', 'none'],
  ['remote', 'uploadpack', 'any'],
  ['remote', 'receivepack', 'any'],
  ['include', 'path', 'none'],
  ['includeif', 'path', 'any'],
  ['protocol', 'allow', 'either'],
]

const BOOLEAN = /^(true|false|yes|no|on|off|1|0|)$/i

/**
 * The files of git's own in `workspace` (its repository and the nested ones a bounded walk finds, with
 * their submodules and linked worktrees, and bare repositories) created or changed at or after `since`
 * that make git run a program: configuration naming one (or including another file, or allowing the
 * `ext::` transport), a hook, a `commondir` or a `.git` file pointing git elsewhere. A walk that `bound` cut short says so.
 * Nothing for a `workspace` that is no folder here (a run's source, `git URL at ref`, or another machine's).
 */
export function plantedGitFiles(
  workspace: string,
  since: Date,
  bound: { folders: number; entries: number } = PLANTED_WALK,
): PlantedGitFile[] {
  if (!isAbsolute(workspace) || !statOf(workspace)?.isDirectory()) return []
  const check = plantedChecker(workspace, since)
  const nested = nestedGitEntries(workspace, bound)
  if (!nested.complete)
    check.found.push({
      path: '.',
      what: `only ${formatCount(bound.folders)} folders (${formatCount(bound.entries)} entries) were looked in: repositories deeper in were not checked`,
    })
  for (const entry of [join(workspace, '.git'), ...nested.found, ...nested.bare]) check.entry(entry)
  return check.found
}

/**
 * Whether the `.git` entry at `path` (a folder with its submodules and linked worktrees, a `gitdir:` file
 * or a link) is, or holds, a file created or changed at or after `since` that makes git run a program.
 */
export function gitEntryPlanted(path: string, since: Date): boolean {
  const check = plantedChecker(dirname(path), since)
  check.entry(path)
  return check.found.length > 0
}

/** Checks `.git` entries of `workspace` one by one, gathering what they hold in `found`. */
function plantedChecker(workspace: string, since: Date) {
  const found: PlantedGitFile[] = []
  const after = since.getTime() - CLOCK_SLACK_MS
  const written = (stats: Stats | undefined) => stats !== undefined && stats.ctimeMs >= after
  const report = (path: string, what: string) => found.push({ path: relative(workspace, path), what })
  const folders = new Set<string>()
  const folder = (dir: string) => {
    if (folders.has(dir)) return
    folders.add(dir)
    for (const name of ['config', 'config.worktree']) {
      const path = join(dir, name)
      const stats = statOf(path)
      if (!written(stats)) continue
      for (const what of programsInConfig(path)) report(path, what)
    }
    const commondir = join(dir, 'commondir')
    const common = statOf(commondir)
    // A link is named, not read: it may lead to a file only the worker may read, and this list is shown.
    if (common?.isSymbolicLink() && written(common))
      report(
        commondir,
        `a link git follows to ${linkTarget(commondir)}, which points it at another folder's configuration`,
      )
    else if (written(common))
      report(commondir, `points git at another folder's configuration: ${readHead(commondir).trim()}`)
    const hooks = join(dir, 'hooks')
    const linked = statOf(hooks)
    if (linked?.isSymbolicLink()) {
      if (written(linked)) report(hooks, `a link git follows to ${linkTarget(hooks)}, whose hooks it runs`)
    } else {
      for (const name of names(hooks)) {
        const path = join(hooks, name)
        const stats = statOf(path)
        if (!stats || !written(stats) || name.endsWith('.sample')) continue
        if (stats.isSymbolicLink()) report(path, `a hook git runs (${name}), a link to ${linkTarget(path)}`)
        else if (stats.isFile() && (stats.mode & 0o111) !== 0) report(path, `a hook git runs (${name})`)
      }
    }
    for (const module of gitFoldersUnder(join(dir, 'modules'))) folder(module)
    for (const worktree of subfolders(join(dir, 'worktrees'))) folder(worktree)
  }
  const entry = (path: string) => {
    const stats = statOf(path)
    if (!stats) return
    if (stats.isDirectory()) folder(path)
    else if (stats.isSymbolicLink() && written(stats))
      report(path, `a link git follows to ${linkTarget(path)}`)
    else if (stats.isFile() && written(stats)) report(path, `points git at ${readHead(path).trim()}`)
  }
  return { found, entry }
}

/** What in a configuration file makes git run a program, one line each (`core.fsmonitor = …`). */
export function programsInConfig(path: string): string[] {
  const text = readConfig(path)
  if (typeof text !== 'string') return [text.problem]
  const found: string[] = []
  let section = ''
  let subsection: string | undefined
  for (const raw of text.split('\n')) {
    let line = raw.trim()
    if (line.startsWith('[')) {
      const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]/.exec(line)
      if (!header) {
        found.push(`a section header tether cannot read: ${clipLine(raw)}`)
        continue
      }
      // `[diff.tool]` is the old spelling of `[diff "tool"]`.
      const [name = '', ...old] = header[1]!.split('.')
      section = name.toLowerCase()
      subsection = header[2] ?? (old.length > 0 ? old.join('.') : undefined)
      line = line.slice(header[0].length).trim()
    }
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(line)
    if (!entry) {
      found.push(`a line tether cannot read: ${clipLine(raw)}`)
      continue
    }
    // Matched in lower case, as git matches keys; shown as written.
    const key = entry[1]!
    const value = entry[2] ?? ''
    if (!runsProgram(section, subsection, key.toLowerCase(), value)) continue
    found.push(
      `${[section, subsection, key].filter((part) => part !== undefined).join('.')} = ${clipLine(value)}`,
    )
  }
  return found
}

function runsProgram(section: string, subsection: string | undefined, key: string, value: string): boolean {
  const unquoted = value.replace(/^"(.*)"$/, '$1').trim()
  const named = PROGRAM_KEYS.some(
    ([s, k, sub]) =>
      s === section &&
      (k === '*' || k === key) &&
      (sub === 'either' || (sub === 'any') === (subsection !== undefined)),
  )
  if (!named) return false
  // A boolean turns git's own daemon or pager on or off; only a program's name runs something.
  if ((section === 'core' && key === 'fsmonitor') || section === 'pager') return !BOOLEAN.test(unquoted)
  if (section === 'alias') return unquoted.startsWith('!')
  // The `ext::` transport runs its URL as a command; allowing every protocol allows it too.
  if (section === 'protocol')
    return (subsection === undefined || subsection.toLowerCase() === 'ext') && !/^never$/i.test(unquoted)
  return true
}

/** The file's text, or why it could not be checked (too large, not a file, unreadable). */
function readConfig(path: string): string | { problem: string } {
  let fd: number | undefined
  try {
    // Non-blocking, so a FIFO put in its place cannot stall the caller.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
    const stats = fstatSync(fd)
    if (!stats.isFile()) return { problem: 'not a plain file, so git may read anything from it' }
    if (stats.size > CONFIG_READ_LIMIT)
      return {
        problem: `${stats.size} bytes, more than tether reads (${CONFIG_READ_LIMIT}): check it yourself`,
      }
    const buffer = Buffer.alloc(stats.size)
    const read = readSync(fd, buffer, 0, buffer.length, 0)
    // Continuation lines (a trailing backslash) join their next line, as git reads them.
    return buffer.toString('utf8', 0, read).replace(/\\\r?\n/g, '')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return {
      problem: code === 'ELOOP' ? 'a link, which git follows' : `unreadable (${code}): check it yourself`,
    }
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

function statOf(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

function names(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

function linkTarget(path: string): string {
  try {
    return readlinkSync(path)
  } catch {
    return 'somewhere it cannot read'
  }
}

function clipLine(text: string): string {
  return clip(text.trim(), 120)
}
