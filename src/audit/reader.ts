/**
 * The audit for readers that must start quickly — the CLI's `ls`, `approvals` and `show`: the store and
 * its queries' words, without what the door (index.ts) also brings, the code that verifies (the policy
 * engine, Temporal's replayer). The writers' schemas load with a store's first write, so a store that only
 * reads never loads them. bench/cli measures what this saves.
 */
export { AuditError } from './errors.js'
export type { ApprovalRow, RunSummary, TimelineEntry } from './queries.js'
export { tellsSomethingNew } from './queries.js'
export { type AuditStore, openAudit } from './store.js'
