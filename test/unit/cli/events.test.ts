/**
 * `tether dev`'s terminal keeps the Temporal SDK's log to what a person must see: a run that is refused or
 * fails is already an event line with its reason, so its SDK warning (and stack trace) is left out; any other
 * warning is one line naming what it is about.
 */
import { describe, expect, it } from 'vitest'
import { sdkLine } from '../../../src/cli/events.js'
import { FAILURE } from '../../../src/run/index.js'

describe("tether dev's SDK log", () => {
  it('leaves out the failures that are a run’s outcome', () => {
    expect(sdkLine({ level: 'WARN', message: 'Workflow failed', meta: { workflowId: 'r1' } })).toBeUndefined()
    for (const type of [
      FAILURE.contractRejected,
      FAILURE.runFailed,
      FAILURE.superseded,
      FAILURE.workspaceInUse,
    ]) {
      const error = { type, message: 'the contract names no workspace\n    at create (agentRun.ts:1:1)' }
      expect(sdkLine({ level: 'WARN', message: 'Activity failed', meta: { error } })).toBeUndefined()
    }
  })

  it('keeps any other warning, as one line without the stack trace', () => {
    const error = { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:5433\n    at TCPConnectWrap' }
    expect(
      sdkLine({
        level: 'WARN',
        message: 'Activity failed',
        meta: { workflowId: 'r1', activityType: 'tetherAudit', error },
      }),
    ).toBe('temporal warn: Activity failed (r1, tetherAudit): connect ECONNREFUSED 127.0.0.1:5433')
    expect(sdkLine({ level: 'ERROR', message: 'Worker failed' })).toBe('temporal error: Worker failed')
  })
})
