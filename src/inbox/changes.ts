/**
 * What a run has changed in its workspace so far, for an approver deciding what comes next: `git status`
 * and `git diff HEAD` when the workspace is a git repository on this machine; else, from the run's
 * snapshots, the patch from the tree it started with to the last one it recorded (any run, any machine).
 * Read-only and bounded, and git is never talked into running anything the run could have planted:
 *
 * - the arguments are constants (the workspace path comes from the run's contract, never from the model);
 * - the repository's own config (which the run may have written) is read first, and any setting outside a
 *   short list of plain ones (a filter, a diff driver, an fsmonitor, an include, …) means no diff at all;
 * - hooks, fsmonitor, pagers, external diff and textconv are switched off on the command line, optional
 *   locks too (nothing is written), submodules are not looked into (their config is not read first), the
 *   environment is a clean one, and each git call has a timeout.
 */
import { existsSync, realpathSync, statSync } from 'node:fs'
import { join } from 'node:path'
import type { AuditStore } from '../audit/index.js'
import { type ExecResult, runCommand } from '../exec/index.js'
import { type FilePatch, openObjectStore, treeAtStep, treePatch } from '../snapshots/index.js'
import { ConfigError, snapshotSettings } from '../stack/index.js'

export type WorkspaceChanges =
  | { kind: 'git'; status: string; diff: string; elided: number }
  | { kind: 'snapshots'; from: number; to: number; files: FilePatch[]; elided: number }
  | { kind: 'unavailable'; why: string }

/** The run's changes as git shows them, else as its snapshots do, else why neither can. */
export async function runChanges(
  audit: AuditStore,
  runId: string,
  workspace: string,
): Promise<WorkspaceChanges> {
  const git = await workspaceChanges(workspace)
  if (git.kind !== 'unavailable') return git
  // The page an approver answers on never fails for want of a diff: a store that cannot be read is said.
  try {
    return (await snapshotChanges(audit, runId)) ?? git
  } catch (error) {
    return {
      kind: 'unavailable',
      why: `${git.why}; the run's snapshots could not be read: ${(error as Error).message}`,
    }
  }
}

/** The patch from the run's first recorded tree to its last; none when it has no snapshots here to read. */
async function snapshotChanges(audit: AuditStore, runId: string): Promise<WorkspaceChanges | undefined> {
  let store: ReturnType<typeof openObjectStore>
  try {
    store = openObjectStore(snapshotSettings().store, audit.pool)
  } catch (error) {
    if (error instanceof ConfigError) return undefined
    throw error
  }
  const [first, last] = await Promise.all([treeAtStep(audit.pool, runId, 0), treeAtStep(audit.pool, runId)])
  if (!store || !first || !last || first.store !== store.name || first.collectedAt || last.collectedAt) {
    return undefined
  }
  return {
    kind: 'snapshots',
    from: first.step,
    to: last.step,
    ...(await treePatch(store, first.root, last.root)),
  }
}

/** Settings of a repository's own config that make git run nothing. Everything else: no diff. */
const PLAIN_SETTINGS = [
  /^core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks|autocrlf|eol|safecrlf|quotepath)$/,
  /^remote\.[^=]*\.(url|fetch|pushurl)$/,
  /^branch\.[^=]*\.(remote|merge|rebase)$/,
  /^(user\.(name|email)|init\.defaultbranch|extensions\.(objectformat|worktreeconfig))$/,
]

const GIT = [
  'git',
  '--no-pager',
  '--no-optional-locks',
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'core.untrackedCache=false',
]

/** The bytes of diff shown (head and tail; the middle is elided). */
const DIFF_LIMIT = 60_000

export async function workspaceChanges(workspace: string): Promise<WorkspaceChanges> {
  if (!existsSync(workspace) || !statSync(workspace).isDirectory()) {
    return { kind: 'unavailable', why: `the workspace ${workspace} is not on this machine` }
  }
  if (!existsSync(join(workspace, '.git'))) {
    return {
      kind: 'unavailable',
      why: 'the workspace is not a git repository; its writes are in the run timeline',
    }
  }
  // A root worker's commands own the workspace (docs/sandbox.md), which git as root would refuse as another
  // user's; what makes reading it safe is the settings above and the config check below.
  const trusted = ['-c', `safe.directory=${realpathSync(workspace)}`]
  const git = (args: string[], outputCeiling = 20_000) =>
    runCommand({
      argv: [...GIT, ...trusted, ...args],
      cwd: workspace,
      timeoutMs: 5_000,
      outputCeiling,
      env: cleanEnvironment(),
    }).catch((error: unknown) => error as Error)

  const config = await git(['config', '--list', '--show-scope', '--no-includes', '--null'])
  const failed = failure(config)
  if (failed) return { kind: 'unavailable', why: `git could not read the repository: ${failed}` }
  const unsafe = unsafeSetting((config as ExecResult).stdout.text)
  if (unsafe) {
    return {
      kind: 'unavailable',
      why: `the repository's own config sets ${unsafe}, which can make git run a program; the diff is not shown (read it with git yourself)`,
    }
  }
  const [status, diff] = await Promise.all([
    git(['status', '--porcelain=v1', '--untracked-files=normal', '--ignore-submodules=all']),
    git(
      ['diff', '--no-ext-diff', '--no-textconv', '--no-color', '--ignore-submodules=all', 'HEAD', '--'],
      DIFF_LIMIT,
    ),
  ])
  const statusProblem = failure(status)
  if (statusProblem) return { kind: 'unavailable', why: `git status failed: ${statusProblem}` }
  // No commit yet: the status says everything.
  const shown = failure(diff) ? undefined : (diff as ExecResult).stdout
  return {
    kind: 'git',
    status: (status as ExecResult).stdout.text,
    diff: shown?.text ?? '',
    elided: shown?.elided ?? 0,
  }
}

function failure(result: ExecResult | Error): string | undefined {
  if (result instanceof Error) return result.message
  if (result.status === 'exited' && result.exitCode === 0) return undefined
  if (result.status === 'unavailable') return 'git is not installed here'
  const stderr = result.stderr.text.trim().split('\n')[0]
  return stderr || `${result.status}${result.exitCode !== undefined ? ` ${result.exitCode}` : ''}`
}

/**
 * The first setting from the repository's own config (local or worktree scope) that is not plain, from
 * `git config --list --show-scope --null`: `scope NUL key LF value NUL`, over and over.
 */
export function unsafeSetting(listing: string): string | undefined {
  const tokens = listing.split('\0')
  for (let i = 0; i + 1 < tokens.length; i += 2) {
    const scope = tokens[i]
    if (scope !== 'local' && scope !== 'worktree') continue
    const key = (tokens[i + 1]?.split('\n')[0] ?? '').toLowerCase()
    if (!PLAIN_SETTINGS.some((pattern) => pattern.test(key))) return key
  }
  return undefined
}

/** Only what git needs to find itself and the user's own settings; nothing that steers it (GIT_*). */
function cleanEnvironment(): Record<string, string> {
  const env: Record<string, string> = { LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' }
  for (const name of ['PATH', 'HOME']) {
    const value = process.env[name]
    if (value) env[name] = value
  }
  return env
}
