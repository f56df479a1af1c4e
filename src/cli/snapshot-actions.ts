/**
 * What `tether rewind`, `diff`, `checkout` and `snapshots` do, loaded when one of them runs (registering them loads only
 * commander and their help).
 */
import { resolve } from 'node:path'
import type { AuditStore } from '../audit/index.js'
import { checkoutRun, RunIdTakenError, rewindRun, workspaceAtStep } from '../embed/index.js'
import { loadPolicyFile, PolicyError } from '../policy/index.js'
import { counted, formatBytes } from '../present/index.js'
import { ContractError } from '../run/index.js'
import {
  collectSnapshots,
  diffTrees,
  displayName,
  type ObjectStore,
  openObjectStore,
  RestoreError,
  runSnapshots,
  SnapshotStoreError,
  treePatch,
} from '../snapshots/index.js'
import { ConfigError, snapshotSettings } from '../stack/index.js'
import { resolveId, withAudit, withTemporal } from './connect.js'
import { colour, print, printJson, printTable, visible } from './context.js'
import { CliError } from './errors.js'
import { plantedGitLines } from './timeline.js'

export async function rewind(
  run: string,
  options: { toStep: string; policy?: string; id?: string; json?: boolean },
): Promise<void> {
  const toStep = step(options.toStep, '--to-step')
  const policy = options.policy ? await guarded(() => loadPolicyFile(options.policy as string)) : undefined
  await withTemporal((client, target) =>
    withAudit(async (audit) => {
      run = await resolveId(audit, 'run', run)
      const handle = await guarded(() =>
        rewindRun(client, audit, {
          run,
          toStep,
          taskQueue: target.taskQueue,
          ...(policy ? { policy } : {}),
          ...(options.id ? { runId: options.id } : {}),
        }),
      )
      if (options.json)
        return printJson({ runId: handle.workflowId, rewoundFrom: { runId: run, step: toStep } })
      print(
        `run ${colour.bold(handle.workflowId)} started from step ${toStep} of ${run} on task queue ${target.taskQueue}`,
      )
      print(`watch it with \`tether show ${handle.workflowId} --follow\``)
    }),
  )
}

export async function diff(
  run: string,
  options: { from: string; to: string; patch?: boolean; json?: boolean },
): Promise<void> {
  const [from, to] = [step(options.from, '--from'), step(options.to, '--to')]
  await withAudit(async (audit) => {
    run = await resolveId(audit, 'run', run)
    const [a, b] = await guarded(() =>
      Promise.all([workspaceAtStep(audit, run, from, '--from'), workspaceAtStep(audit, run, to, '--to')]),
    )
    const store = storeFor(audit, a.store)
    if (options.patch) {
      const patch = await guarded(() => treePatch(store, a.root, b.root))
      if (options.json) return printJson({ from: a, to: b, ...patch })
      print(`${run}: step ${from} (${a.root.slice(0, 12)}) → step ${to} (${b.root.slice(0, 12)})`)
      if (patch.files.length === 0) return print('no changes')
      for (const file of patch.files) {
        print()
        print(colour.bold(`${file.change} ${visible(file.path)}`))
        for (const line of file.text.split('\n')) print(painted(visible(line, { tabs: true })))
      }
      if (patch.elided > 0)
        print(
          `\n… and ${counted(patch.elided, 'more change')}: the patch stops at 1 MB; list them without --patch`,
        )
      return
    }
    const changes = await guarded(() => diffTrees(store, a.root, b.root))
    if (options.json) {
      return printJson({
        from: a,
        to: b,
        changes: changes.map((c) => ({ ...c, path: displayName(c.path) })),
      })
    }
    print(`${run}: step ${from} (${a.root.slice(0, 12)}) → step ${to} (${b.root.slice(0, 12)})`)
    if (changes.length === 0) return print('no changes')
    for (const c of changes) {
      const size =
        c.change === 'M'
          ? `${formatBytes(c.before ?? 0)} → ${formatBytes(c.size)}`
          : c.kind === 'd'
            ? 'folder'
            : formatBytes(c.size)
      print(`${c.change} ${visible(displayName(c.path))}  (${size})`)
    }
  })
}

export async function checkout(
  run: string,
  options: { into: string; step?: string; json?: boolean },
): Promise<void> {
  const at = options.step === undefined ? undefined : step(options.step, '--step')
  const into = resolve(options.into)
  await withAudit(async (audit) => {
    run = await resolveId(audit, 'run', run)
    const { tree, ...written } = await guarded(() =>
      checkoutRun(audit, storeFor(audit), { run, step: at, into }),
    )
    // A step that changed nothing has the tree of the last one that did.
    const shown = at ?? tree.step
    if (options.json)
      return printJson({ runId: run, step: shown, takenAt: tree.step, root: tree.root, into, ...written })
    const since = shown === tree.step ? '' : `, unchanged since step ${tree.step}`
    print(
      `${run}, step ${shown} (tree ${tree.root.slice(0, 12)}${since}): ${counted(written.files, 'file')}, ${formatBytes(written.bytes)} in ${into}`,
    )
    print(
      "not in it: the declared caches (node_modules, target, .venv, …: run the project's install) and what the run's policy hid from reads or its sandbox hid",
    )
    for (const line of plantedGitLines(written.plantedGit, 'the tree holds')) print(line)
  })
}

/** A unified diff's line, coloured as people are used to (on a terminal only: `colour` knows). */
function painted(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---')) return colour.bold(line)
  if (line.startsWith('@@')) return colour.dim(line)
  if (line.startsWith('+')) return colour.green(line)
  if (line.startsWith('-')) return colour.red(line)
  return line
}

export async function list(run: string | undefined, options: { json?: boolean }): Promise<void> {
  if (!run) throw new CliError('name a run: `tether snapshots RUN`, or `tether snapshots gc`')
  await withAudit(async (audit) => {
    run = await resolveId(audit, 'run', run as string)
    const rows = await runSnapshots(audit.pool, run)
    if (options.json) return printJson(rows)
    if (rows.length === 0) return print(`run ${run} has no workspace snapshots`)
    printTable(
      ['STEP', 'CALL', 'KIND', 'TREE', 'FILES', 'SIZE', 'NEW', 'NOTE'],
      rows.map((r) => [
        String(r.step),
        r.call === -1 ? 'gate' : String(r.call),
        r.kind,
        r.root.slice(0, 12),
        String(r.files),
        formatBytes(r.bytes),
        formatBytes(r.newBytes),
        r.collectedAt ? `collected ${r.collectedAt.toISOString().slice(0, 10)}` : visible(r.detail ?? ''),
      ]),
    )
  })
}

export async function gc(options: { dryRun?: boolean; json?: boolean }): Promise<void> {
  const settings = readSettings()
  await withAudit(async (audit) => {
    const store = storeFor(audit)
    const report = await guarded(() =>
      collectSnapshots(audit.pool, store, {
        retentionDays: settings.retentionDays,
        ...(options.dryRun ? { dryRun: true } : {}),
      }),
    )
    if (options.json) return printJson(report)
    if (!report.ran) return print('another collection is running; nothing was done')
    print(
      `${options.dryRun ? 'would collect' : 'collected'} ${report.deletedObjects} objects from ${store.name}; ` +
        `kept ${report.keptObjects} objects of ${report.keptTrees} trees (retention ${settings.retentionDays} days)`,
    )
  })
}

function step(value: string, flag: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw new CliError(`${flag} must be a step number from 0, not ${value}`)
  return n
}

function readSettings() {
  try {
    return snapshotSettings()
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message)
    throw error
  }
}

/** The configured store; it must be the one that holds `recorded` (a row's store), when one is named. */
function storeFor(audit: AuditStore, recorded?: string): ObjectStore {
  const store = openObjectStore(readSettings().store, audit.pool)
  if (!store)
    throw new CliError('snapshots are off here (TETHER_SNAPSHOTS=off); set it to the store the worker uses')
  if (recorded && recorded !== store.name) {
    throw new CliError(
      `the snapshots are in ${recorded}, but TETHER_SNAPSHOTS here names ${store.name}; set it (and TETHER_S3_ENDPOINT) as the worker has it`,
    )
  }
  return store
}

/** Errors that say what the person is to fix (a run, a step, a policy file, the store) become one line. */
const SAID = [ContractError, RunIdTakenError, PolicyError, SnapshotStoreError, RestoreError]

async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (SAID.some((type) => error instanceof type)) throw new CliError((error as Error).message)
    throw error
  }
}
