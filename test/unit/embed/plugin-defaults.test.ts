/** What tether's plugin adds to a Worker's options: its defaults where the Worker sets none of its own. */
import type { WorkerOptions } from '@temporalio/worker'
import { describe, expect, it } from 'vitest'
import { tetherPlugin } from '../../../src/embed/index.js'

const configure = (options: WorkerOptions) =>
  (tetherPlugin() as unknown as { configureWorker(o: WorkerOptions): WorkerOptions }).configureWorker(options)

describe("tether's Worker defaults", () => {
  it('take no more workflow tasks at once than a worker finishes in time, unless the Worker says otherwise', () => {
    expect(configure({ taskQueue: 'q' }).maxConcurrentWorkflowTaskExecutions).toBe(8)
    expect(
      configure({ taskQueue: 'q', maxConcurrentWorkflowTaskExecutions: 50 })
        .maxConcurrentWorkflowTaskExecutions,
    ).toBe(50)
  })

  it('leave slot counts to a Worker with a tuner of its own (the SDK refuses both)', () => {
    const fixed = { type: 'fixed-size' as const, numSlots: 4 }
    const tuned = configure({
      taskQueue: 'q',
      tuner: {
        workflowTaskSlotSupplier: fixed,
        activityTaskSlotSupplier: fixed,
        localActivityTaskSlotSupplier: fixed,
        nexusTaskSlotSupplier: fixed,
      },
    })
    expect(tuned).not.toHaveProperty('maxConcurrentWorkflowTaskExecutions')
    expect(tuned.stickyQueueScheduleToStartTimeout).toBe('3 seconds')
  })
})
