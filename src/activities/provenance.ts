/**
 * The provenance activity: at the end of a run, the final workspace tree's digest and the run's audit rows
 * become an in-toto Statement (audit/provenance.ts), signed by this worker's key into a DSSE envelope and
 * stored beside the run. The workspace is the run's folder on this worker at the tree history recorded last
 * (restored from the snapshots when this worker lacks it, as for any tool), so a run laid out from a source
 * or finished on another worker has its provenance too. The key is read (or made) on first use; it lives
 * with tether's state, which no command can see.
 */
import { ApplicationFailure } from '@temporalio/common'
import { type AuditStore, provenanceStatement } from '../audit/index.js'
import { IN_TOTO_PAYLOAD_TYPE, sealEnvelope } from '../identity/index.js'
import { type WorkerKey, workerKey } from '../identity/keyring.js'
import { FAILURE, type TetherActivities, workspaceOf } from '../run/index.js'
import { packageVersion } from '../stack/index.js'
import { TREE_FORMAT, treeDigest } from '../workspace/index.js'
import { heartbeating } from './heartbeat.js'
import type { RunConfigs } from './run-config.js'
import type { StepSnapshots } from './snapshots.js'

export function provenanceActivities(deps: {
  audit: AuditStore
  runs: RunConfigs
  snapshots: StepSnapshots
  /** The worker's key file (made on first use). */
  keyFile: string
}): Pick<TetherActivities, 'tetherRecordProvenance'> {
  let key: WorkerKey | undefined
  return {
    tetherRecordProvenance: ({ runId, tree: recorded }) =>
      heartbeating(async () => {
        const rows = await deps.audit.provenanceRows(runId)
        if (!rows) {
          throw ApplicationFailure.nonRetryable(`run ${runId} has no record in the audit`, FAILURE.unknownRun)
        }
        const { contract } = await deps.runs.get(runId)
        const { path } = await deps.snapshots.before(
          { runId, workspace: workspaceOf(contract), tree: recorded },
          'read',
        )
        let tree: Awaited<ReturnType<typeof treeDigest>>
        try {
          tree = await treeDigest(path)
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message
          throw ApplicationFailure.nonRetryable(
            `the workspace ${path} cannot be read for the run's provenance (${code})`,
            FAILURE.provenanceUnavailable,
          )
        }
        key ??= workerKey(deps.keyFile)
        const statement = provenanceStatement(
          rows,
          { path, format: TREE_FORMAT, ...tree, ...(recorded ? { snapshot: recorded } : {}) },
          { version: packageVersion(), keyid: key.keyid },
        )
        const payload = new TextEncoder().encode(JSON.stringify(statement))
        const envelope = sealEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, key)
        await deps.audit.recordProvenance(runId, envelope, tree.sha256)
        return { subject: tree.sha256, keyid: key.keyid }
      }),
  }
}
