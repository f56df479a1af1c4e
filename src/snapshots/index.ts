/**
 * Workspace state: content-addressed trees of a workspace taken by the worker after every step that can
 * change it, stored in a real store (PostgreSQL or S3-compatible), restored on any worker, compared,
 * collected after retention. No Temporal here: the activities call it.
 */
import type pg from 'pg'
import type { SnapshotStoreSetting } from '../stack/index.js'
import type { ObjectStore } from './store.js'
import { postgresStore } from './store-postgres.js'
import { s3Store } from './store-s3.js'

export {
  type CollectionReport,
  callSnapshot,
  collectSnapshots,
  lastSnapshotStep,
  noteSnapshot,
  type RetentionOptions,
  type RunLinks,
  runApprovers,
  runLinks,
  runSnapshots,
  type SnapshotKind,
  type SnapshotRow,
  type SnapshotSql,
  treeAtStep,
} from './catalog.js'
export {
  type CacheSettings,
  cachePaths,
  type DeclaredCaches,
  declaredCaches,
  exclusion,
} from './exclusions.js'
export { type BranchResult, commitMessage, commitToBranch } from './git-branch.js'
export { type FilePatch, type TreePatch, treePatch } from './patch.js'
export { diffTrees, RestoreError, readTree, type TreeChange } from './restore.js'
export { type Exclusion, type Scan, scanTree, WorkspaceIndex } from './scan.js'
export {
  describeChanges,
  type SnapshotCommit,
  type SnapshotRef,
  type TakenSnapshot,
  WorkspaceSnapshots,
} from './service.js'
export { type ObjectStore, SnapshotStoreError, type StoredObject } from './store.js'
export { postgresStore } from './store-postgres.js'
export { type S3Location, s3Store } from './store-s3.js'
export {
  CHUNK_BYTES,
  decodeTree,
  displayName,
  encodeFolder,
  encodeTree,
  PAGED_OVER,
  sha256,
  type TreeEntry,
} from './tree.js'

/** The store a setting names, over the audit database's pool; undefined when snapshots are off. */
export function openObjectStore(setting: SnapshotStoreSetting, pool: pg.Pool): ObjectStore | undefined {
  if (setting.kind === 'off') return undefined
  if (setting.kind === 'postgres') return postgresStore(pool)
  return s3Store(setting)
}
