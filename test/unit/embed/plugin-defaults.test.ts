/** What tether's plugin adds to a Worker's options: its defaults where the Worker sets none of its own. */
import type { WorkerOptions } from '@temporalio/worker'
import { describe, expect, it } from 'vitest'
import { tetherPlugin } from '../../../src/embed/index.js'

const configure = (options: WorkerOptions) =>
  (tetherPlugin() as unknown as { configureWorker(o: WorkerOptions): WorkerOptions }).configureWorker(options)

describe("tether's Worker defaults", () => {
  it('poll mostly the worker’s own queue, so a run’s next task finds a poll waiting for it', () => {
    expect(configure({ taskQueue: 'q' }).nonStickyToStickyPollRatio).toBe(0.2)
    expect(configure({ taskQueue: 'q', nonStickyToStickyPollRatio: 0.5 }).nonStickyToStickyPollRatio).toBe(
      0.5,
    )
  })

  it('give running commands a grace time when the worker stops, so they are handed over, not cut off', () => {
    expect(configure({ taskQueue: 'q' }).shutdownGraceTime).toBe('30 seconds')
  })
})
