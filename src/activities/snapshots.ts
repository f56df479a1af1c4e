/**
 * The workspace as state, for the activities: before a tool, the run's workspace on this worker at the tree
 * history recorded (restored from the store when this worker lacks it, reported when someone changed it
 * outside the run); after a tool that can change it, a snapshot whose root hash the activity returns to
 * history; and at a run's start, the workspace laid out from its source.
 *
 * Snapshots are the worker's: they are taken here, outside every sandbox, and nothing a command does can
 * write to the store or to the audit's rows. What the policy hides from reads is never read into a tree.
 */
import { existsSync } from 'node:fs'
import { mkdir, realpath, rm, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join, resolve } from 'node:path'
import { Context } from '@temporalio/activity'
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common'
import type { AuditStore } from '../audit/index.js'
import { adoptEdits, type ExecResult } from '../exec/index.js'
import type { Policy } from '../policy/index.js'
import { clip, formatArgv } from '../present/index.js'
import { FAILURE, type TaskContract, type WorkspaceSource, workspaceOf } from '../run/index.js'
import {
  cachePaths,
  callSnapshot,
  commitToBranch,
  declaredCaches,
  describeChanges,
  exclusion,
  lastSnapshotStep,
  noteSnapshot,
  runApprovers,
  type SnapshotCommit,
  type SnapshotKind,
  sha256,
  treeAtStep,
  type WorkspaceSnapshots,
} from '../snapshots/index.js'
import { runCommandWithHeartbeats } from './exec.js'
import { heartbeating } from './heartbeat.js'
import type { RunConfigs } from './run-config.js'
import { type CommandSandbox, commandOptions, resultRecord } from './sandbox.js'
import { CACHES_PENDING, cachesMarkText, safeName, sweepWorkspaces } from './workspace-sweep.js'

/** What a tool activity's input says about the workspace. */
export interface WorkspaceRef {
  runId: string
  /** The step and call the tool belongs to (a `change` names them; a `read` need not). */
  step?: number
  call?: number
  /** The contract's folder, or `''` for a workspace laid out from a source (a folder of this worker's). */
  workspace: string
  /** The root hash history recorded last; absent in runs from before snapshots (then nothing is done). */
  tree?: string | undefined
  policyDigest?: string | undefined
}

export interface PreparedWorkspace {
  /** The folder the tool works in. */
  path: string
  /** What the model should hear first: the workspace was changed outside the run, a cache was not rebuilt. */
  note?: string | undefined
}

/** tether's own commands on a workspace, as calls below -1 of their step in "what ran". */
const CALL = { rebuild: -2, clone: -3, checkout: -4 } as const

/** A worker looks for finished runs' workspaces to remove at most this often (ms). */
const SWEEP_EVERY_MS = 60 * 60 * 1000

export class StepSnapshots {
  constructor(
    private readonly deps: {
      /** The worker's snapshots, made when first asked for (undefined: this worker keeps none). */
      service: () => WorkspaceSnapshots | undefined
      audit: AuditStore
      runs: RunConfigs
      sandbox: CommandSandbox
      /** Where this worker lays out workspaces that come from a source, one folder per run. */
      workspaces: string
      /** Days a run's snapshots are kept after it ends; collection runs on its own when it is due. */
      retentionDays?: number
      /** Hours this worker keeps its copy of a finished run's workspace (undefined: for ever). */
      keepWorkspacesHours?: number
    },
  ) {}

  private sweptAt = Number.NEGATIVE_INFINITY

  /** In the background, at most once an hour: this worker's copies of finished runs' workspaces go. */
  private sweepIfDue(): void {
    const hours = this.deps.keepWorkspacesHours
    if (hours === undefined || Date.now() - this.sweptAt < SWEEP_EVERY_MS) return
    this.sweptAt = Date.now()
    const log = Context.current().log
    sweepWorkspaces(this.deps.audit.pool, this.deps.workspaces, hours)
      .then(({ removed, failed }) => {
        for (const path of removed) this.deps.service()?.forget(path)
        if (removed.length > 0)
          log.info(`removed ${removed.length} workspace copies of runs that finished over ${hours} h ago`)
        for (const { path, error } of failed) log.warn(`could not remove ${path}: ${error}`)
      })
      .catch((error) => log.warn(`looking for finished runs' workspaces failed: ${(error as Error).message}`))
  }

  /** The folder of a run's workspace on this worker. */
  folder(runId: string, workspace: string): string {
    return workspace !== '' ? workspace : join(this.deps.workspaces, safeName(runId))
  }

  /**
   * The run's folder, checked before every action, not only before the first step: a contract's folder
   * swapped since for a link to the worker's own (or, on a root worker, to a system folder) would have the
   * file tools, the snapshots, the sandbox's bind and the run's MCP servers work there.
   */
  checkedFolder(runId: string, workspace: string): string {
    const path = this.folder(runId, workspace)
    const refused = workspace !== '' ? this.deps.sandbox.workspaceRefusal(path) : undefined
    if (refused) throw failure(`since the run started, ${refused}`)
    return path
  }

  /**
   * The run's workspace on this worker at the tree history recorded. Absent here: restored from the store
   * (and, before a tool that changes it, its caches rebuilt). Present, before a tool that changes it:
   * compared with the recorded tree — a difference is a change made outside the run, recorded as a
   * snapshot of its own and told to the model, never used silently.
   */
  async before(ref: WorkspaceRef, use: 'read' | 'change'): Promise<PreparedWorkspace> {
    const path = this.checkedFolder(ref.runId, ref.workspace)
    const service = this.deps.service()
    if (ref.tree === undefined || !service) return { path }
    const tree = ref.tree
    return service.exclusive(path, async () => {
      const { policy, contract, ex } = await this.context(ref, path)
      if (!existsSync(path)) {
        this.sweepIfDue()
        await this.markCachesMissing(ref.runId, path)
        // A read that names no step (a check outside a turn, the provenance) is placed after the last one.
        const at = ref.step ?? (await lastSnapshotStep(this.deps.audit.pool, ref.runId))
        const recorded = { ref: refOf({ ...ref, step: at }, 'restore'), detail: `on ${hostname()}` }
        await beating(() => service.restore(tree, path, ex, recorded))
      } else if (use === 'change') {
        const now = await service.scan(path, ex)
        if (now.root !== tree) {
          const key = refOf(ref, 'outside-edit')
          // The scan that saw the difference is the one stored, not made again.
          const taken = await beating(() => service.take(key, path, ex, undefined, { scanned: now }))
          const changes = await service.diff(tree, taken.root)
          const what = describeChanges(changes)
          await noteSnapshot(this.deps.audit.pool, key, what)
          // On a root worker, what root made there meanwhile becomes the commands' identity's, as the rest is.
          // (A tree's paths are its names' bytes, one latin1 character each; the file system's are UTF-8 here.)
          await adoptEdits(
            path,
            changes.map((change) => Buffer.from(change.path, 'latin1').toString('utf8')),
          )
          // After an attempt of this call was cut off (its worker died mid-command), the difference is most
          // likely what that attempt did before it stopped: the model is told so, not that someone else did it.
          const since = `since its last recorded tree (${tree.slice(0, 12)}…), now ${taken.root.slice(0, 12)}…: ${what}.`
          const cause =
            Context.current().info.attempt > 1
              ? `[workspace] changed ${since} An earlier attempt of this call was cut off: these are most likely what it did before it stopped (or edits made outside the run).`
              : `[workspace] changed outside the run ${since}`
          return { path, note: `${cause} These changes are recorded; check them before relying on them.` }
        }
      }
      if (use === 'change' && existsSync(this.cachesMark(ref.runId, path))) {
        const note = await this.rebuildCaches(ref, path, policy, contract)
        await rm(this.cachesMark(ref.runId, path), { force: true })
        return { path, note }
      }
      return { path }
    })
  }

  /**
   * After a tool or the gate: the workspace's snapshot, whose root goes to history as `tree`. With `commit`,
   * the tool's own rows and the snapshot's are written in one transaction (`commit` runs in any case).
   */
  async after(ref: WorkspaceRef, kind: 'tool' | 'gate', commit?: SnapshotCommit): Promise<{ tree?: string }> {
    const service = this.deps.service()
    if (ref.tree === undefined || !service) {
      await commit?.(async () => {})
      return {}
    }
    const path = this.folder(ref.runId, ref.workspace)
    return service.exclusive(path, async () => {
      const { ex } = await this.context(ref, path)
      const taken = await beating(() => service.take(refOf(ref, kind), path, ex, undefined, { commit }))
      return { tree: taken.root }
    })
  }

  /**
   * After a gate that passed: when the contract wants it (the default) and the workspace is a git
   * repository, the verified tree as a commit on `tether/<run id>`, noted on the gate's snapshot row. Never
   * pushed. A repository it cannot write to does not fail the run: the note says why there is no branch.
   */
  async branch(ref: WorkspaceRef, tree: string | undefined, outcome: string): Promise<void> {
    const service = this.deps.service()
    if (tree === undefined || !service) return
    const { contract } = await this.deps.runs.get(ref.runId)
    if (!contract.branch) return
    const path = this.folder(ref.runId, ref.workspace)
    const pool = this.deps.audit.pool
    const request = {
      runId: ref.runId,
      root: tree,
      goal: contract.goal,
      outcome,
      approvers: await runApprovers(pool, ref.runId),
      at: new Date(),
    }
    let note: string
    try {
      const result = await service.exclusive(path, () => commitToBranch(service.store, path, request))
      note =
        'written' in result
          ? `branch ${result.written.branch} at ${result.written.commit} in ${path}`
          : `no branch: ${result.skipped}`
    } catch (error) {
      note = `no branch: ${error instanceof Error ? error.message : String(error)}`
    }
    Context.current().log.info(`run ${ref.runId}: ${note}`)
    await noteSnapshot(pool, refOf(ref, 'gate'), note)
  }

  /** The tree an earlier attempt of this call recorded before it died, for a result read back. */
  async recorded(ref: WorkspaceRef, kind: 'tool' | 'gate'): Promise<{ tree?: string }> {
    if (ref.tree === undefined || !this.deps.service()) return {}
    const row = await callSnapshot(this.deps.audit.pool, refOf(ref, kind))
    return row ? { tree: row.root } : {}
  }

  /**
   * At a run's start: the workspace laid out from its source (a git clone, or an earlier run's tree and,
   * for a rewind, its transcript), then its first snapshot (step 0). Returns its root and, when a
   * transcript was carried over, the next free message seq.
   */
  async layOut(input: {
    runId: string
    policyDigest?: string
  }): Promise<{ tree?: string; nextSeq?: number }> {
    const service = this.deps.service()
    const { contract } = await this.deps.runs.get(input.runId)
    const ref: WorkspaceRef = {
      runId: input.runId,
      step: 0,
      call: 0,
      workspace: workspaceOf(contract),
      policyDigest: input.policyDigest,
    }
    if (ref.workspace !== '') await this.claim(input.runId, ref.workspace)
    const path = this.folder(input.runId, ref.workspace)
    const source = contract.source
    const nextSeq =
      source && 'run' in source && source.transcript
        ? await this.carryTranscript(input.runId, source)
        : undefined
    const seq = nextSeq !== undefined ? { nextSeq } : {}
    if (!service) {
      if (source)
        throw failure(
          `run ${input.runId} names a workspace source, but this worker keeps no snapshots (TETHER_SNAPSHOTS=off)`,
        )
      return seq
    }
    this.sweepIfDue()
    return service.exclusive(path, async () => {
      const done = await callSnapshot(this.deps.audit.pool, refOf(ref, 'start'))
      if (done) return { tree: done.root, ...seq }
      const { policy, contract: c, ex } = await this.context(ref, path)
      let detail: string | undefined
      if (source) {
        // The folder is this worker's own; whatever an attempt that died left there goes.
        await rm(path, { recursive: true, force: true })
        service.forget(path)
        if ('git' in source) detail = await this.clone(ref, path, source, policy, c)
        else {
          const from = await treeAtStep(this.deps.audit.pool, source.run, source.step)
          if (!from)
            throw failure(`run ${source.run} has no workspace snapshot at or before step ${source.step}`)
          if (from.collectedAt) {
            throw failure(
              `the snapshots of run ${source.run} were collected on ${from.collectedAt.toISOString()} (retention)`,
            )
          }
          await this.markCachesMissing(ref.runId, path)
          await heartbeating(() => service.restore(from.root, path, ex))
          detail = `from run ${source.run} at step ${source.step} (${from.root.slice(0, 12)}…)`
        }
      }
      const taken = await heartbeating(() => service.take(refOf(ref, 'start'), path, ex, detail))
      if (this.deps.retentionDays !== undefined) {
        const logger = Context.current().log
        service.collectIfDue(this.deps.retentionDays, (line) => logger.info(line))
      }
      return { tree: taken.root, ...seq }
    })
  }

  /**
   * The contract's folder, for this run alone: another running run working in it (or in a folder inside it,
   * or around it) would see this one's changes as edits made outside it, and verify its work. The folder is
   * claimed as this worker resolves it, so a link to it is the same folder.
   */
  private async claim(runId: string, folder: string): Promise<void> {
    const path = await realpath(folder).catch(() => resolve(folder))
    const passOver: string[] = []
    let holder = await this.deps.audit.claimWorkspace(runId, path)
    // A run the audit still calls running whose workflow Temporal no longer has (its history lost with a
    // dev server's, or deleted) would hold its folder for ever: it does not count. At most a few are asked.
    while (holder && passOver.length < PASS_OVER_AT_MOST && !(await stillRunning(holder.runId))) {
      passOver.push(holder.runId)
      holder = await this.deps.audit.claimWorkspace(runId, path, passOver)
    }
    if (!holder) return
    const where = holder.path === path ? 'in it' : `in ${holder.path}`
    throw ApplicationFailure.nonRetryable(
      `the workspace ${path} is in use: run ${holder.runId} works ${where} (started ` +
        `${holder.startedAt.toISOString()}, "${clip(holder.goal, 80)}") and has not finished; one run works in a ` +
        `folder at a time: wait for it to end, cancel it (tether cancel ${holder.runId}), or start this run in ` +
        'a folder of its own (a copy, a git worktree, or a source)',
      FAILURE.workspaceInUse,
    )
  }

  /** The run's effective policy and contract, and what its snapshots leave out. */
  private async context(ref: WorkspaceRef, path: string) {
    const [{ contract }, policy] = await Promise.all([
      this.deps.runs.get(ref.runId),
      this.deps.runs.policy(ref.runId, undefined, [], ref.policyDigest),
    ])
    const caches = await cachePaths(path, contract.caches)
    // What the policy denies reading, and what the sandbox hides there: neither reaches the store.
    const sandboxed = this.deps.sandbox.hiddenIn(policy, path)
    const hidden = (p: string) => sandboxed.covers(p) || policy.check('read', p).effect === 'deny'
    const ex = {
      key: `${policy.digest} ${caches.join('\0')} ${sandboxed.paths.join('\0')}`,
      excluded: exclusion(caches, hidden),
    }
    return { policy, contract, ex }
  }

  /**
   * The mark of a run's folder restored here whose caches are still to be rebuilt, by the run's first tool
   * that may change it. On disk, not in memory, and made before the restore: a worker restarted on this
   * machine after the restore (or one whose rebuild was cut off) still rebuilds them. Per run: another run
   * on the same folder later never takes over a rebuild (or a note) that was not its own.
   */
  private cachesMark(runId: string, path: string): string {
    return join(this.deps.workspaces, CACHES_PENDING, sha256(`${runId}\0${path}`))
  }

  private async markCachesMissing(runId: string, path: string): Promise<void> {
    await mkdir(join(this.deps.workspaces, CACHES_PENDING), { recursive: true, mode: 0o700 })
    await writeFile(this.cachesMark(runId, path), cachesMarkText(runId, path))
  }

  /**
   * The declared caches of a workspace restored on this worker, made again by the toolchain's install
   * command, which runs like any command: in the sandbox, only when the policy *allows* it (nobody is there
   * to answer an ask). Returns what the model should know when they were not rebuilt.
   */
  private async rebuildCaches(ref: WorkspaceRef, path: string, policy: Policy, contract: TaskContract) {
    const caches = await declaredCaches(path, contract.caches)
    if (!caches.rebuild || caches.paths.length === 0) return undefined
    const command = formatArgv(caches.rebuild)
    const verdict = policy.checkExec(caches.rebuild)
    const names = caches.paths.join(', ')
    if (verdict.effect !== 'allow') {
      return `[workspace] restored on this worker without its caches (${names}); \`${command}\` was not run to rebuild them: the policy does not allow it (${verdict.effect}: ${verdict.reason}).`
    }
    const result = await this.run(ref, CALL.rebuild, caches.rebuild, path, policy, contract)
    if (result.status === 'exited' && result.exitCode === 0) return undefined
    return `[workspace] restored on this worker; rebuilding its caches (${names}) with \`${command}\` failed (${result.status}${result.exitCode !== undefined ? ` ${result.exitCode}` : ''}): ${clip(result.stderr.text.trim(), 500)}`
  }

  /** Clones a git source into the run's folder, in the sandbox, under the run's policy. */
  private async clone(
    ref: WorkspaceRef,
    path: string,
    source: Extract<WorkspaceSource, { git: string }>,
    policy: Policy,
    contract: TaskContract,
  ): Promise<string> {
    const host = remoteHost(source.git)
    if (host) {
      const verdict = policy.check('net', host)
      if (verdict.effect !== 'allow') {
        throw failure(
          `the policy does not allow cloning ${source.git}: net ${host} is ${verdict.effect} (${verdict.reason})`,
        )
      }
    }
    await mkdir(path, { recursive: true, mode: 0o700 })
    const steps: Array<[number, string[]]> = [
      [CALL.clone, ['git', 'clone', '--quiet', '--', source.git, '.']],
    ]
    if (source.ref) steps.push([CALL.checkout, ['git', 'checkout', '--quiet', '--detach', source.ref, '--']])
    for (const [call, argv] of steps) {
      const result = await this.run(ref, call, argv, path, policy, contract)
      if (result.status !== 'exited' || result.exitCode !== 0) {
        const said = result.stderr.text.trim()
        const failed = `\`${clip(formatArgv(argv), 200)}\` failed (${result.status} ${result.exitCode ?? ''})`
        // git says only "does not exist" of a local repository the sandbox does not show. A run's reason keeps
        // its first 500 characters, so what to do comes before git's words.
        throw failure(
          call === CALL.clone && !host
            ? `${failed}: ${LOCAL_CLONE_HINT}; git said: ${clip(said, 500)}`
            : `${failed}: ${clip(said, 500)}`,
        )
      }
    }
    return `cloned ${source.git}${source.ref ? ` at ${source.ref}` : ''}`
  }

  /** One of tether's own commands on the workspace: sandboxed, heartbeating, recorded in "what ran". */
  private async run(
    ref: WorkspaceRef,
    call: number,
    argv: string[],
    path: string,
    policy: Policy,
    contract: TaskContract,
  ): Promise<ExecResult> {
    const setup = this.deps.sandbox.setup(policy, { workspace: path, env: contract.env })
    const startedAt = new Date()
    const result = await runCommandWithHeartbeats({
      argv,
      cwd: path,
      workspace: path,
      timeoutMs: contract.execTimeout,
      outputCeiling: contract.outputCeiling,
      ...commandOptions(setup),
    })
    await this.deps.audit.recordExecResult({
      runId: ref.runId,
      step: ref.step ?? 0,
      call,
      kind: 'workspace',
      argv,
      cwd: path,
      ...resultRecord(setup, result, startedAt),
      attempt: Context.current().info.attempt,
    })
    return result
  }

  /**
   * A rewind's transcript: the earlier run's messages up to the end of its step `step` (before the reply of
   * the step after it), with a result for every call that has none (its run ended before it was stored).
   * Written after the new run's goal (message 0); returns the next free seq.
   */
  private async carryTranscript(runId: string, source: { run: string; step: number }): Promise<number> {
    const { audit } = this.deps
    const already = await audit.messageCount(runId)
    const messages = await audit.loadMessages(source.run)
    let replies = 0
    const carried: unknown[] = []
    const answered = new Set<string>()
    const asked: Array<{ id: string; name: string }> = []
    for (const message of messages.slice(1)) {
      const content = message.content as {
        role?: string
        toolCalls?: Array<{ id: string; name: string }>
        results?: Array<{ callId: string }>
      }
      if (content.role === 'assistant' && ++replies > source.step) break
      carried.push(content)
      for (const call of content.toolCalls ?? []) asked.push(call)
      for (const result of content.results ?? []) answered.add(result.callId)
    }
    const unanswered = asked.filter((call) => !answered.has(call.id))
    if (unanswered.length > 0) {
      carried.push({
        role: 'tool',
        results: unanswered.map((call) => ({
          callId: call.id,
          name: call.name,
          output: `[not recorded] run ${source.run} ended before this call's result was stored`,
        })),
      })
    }
    if (already <= 1) await audit.appendMessages(runId, 1, carried)
    return 1 + carried.length
  }
}

function refOf(ref: WorkspaceRef, kind: SnapshotKind) {
  return { runId: ref.runId, step: ref.step ?? 0, call: kind === 'gate' ? -1 : (ref.call ?? 0), kind }
}

/** Heartbeats while `work` runs, in a remote activity (a local one has no heartbeat: its task has a timeout). */
function beating<T>(work: () => Promise<T>): Promise<T> {
  return Context.current().info.isLocal ? work() : heartbeating(work)
}

const LOCAL_CLONE_HINT =
  "the clone runs in the sandbox as the commands' user, which sees none of the worker's /tmp, /run, /dev/shm " +
  'or home folder and cannot read a repository another user owns: give a URL, or a bundle (`git bundle ' +
  "create FILE --all`) in a folder the sandbox shows or the worker floor's `sandbox: { readOnly: [...] }` lists"

/** `host:port` of a remote git URL; undefined for a local path or `file://`. */
function remoteHost(url: string): string | undefined {
  if (url.startsWith('/') || url.startsWith('file://') || url.startsWith('./')) return undefined
  try {
    const parsed = new URL(url)
    const port =
      parsed.port || (parsed.protocol === 'https:' ? '443' : parsed.protocol === 'ssh:' ? '22' : '80')
    return `${parsed.hostname}:${port}`
  } catch {
    // scp-like `git@host:path`.
    const match = /^(?:[^@/]+@)?([^:/]+):/.exec(url)
    return match ? `${match[1]}:22` : undefined
  }
}

/** Holders of a folder a run's layout asks Temporal about before it gives up on the folder. */
const PASS_OVER_AT_MOST = 8

/** Whether Temporal runs the workflow `runId` in this worker's namespace; true when it cannot tell. */
async function stillRunning(runId: string): Promise<boolean> {
  try {
    const described = await Context.current().client.workflow.getHandle(runId).describe()
    return described.status.name === 'RUNNING'
  } catch (error) {
    return !(error instanceof WorkflowNotFoundError)
  }
}

function failure(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FAILURE.workspaceUnavailable)
}
