/**
 * What a run's workflow and its activities share: the data crossing the workflow boundary and the messages
 * both write. Pure (no Temporal, no Node), so it is part of the workflow bundle as well as the worker.
 */
export { gateFailureMessage } from './messages.js'
export type * from './types.js'
