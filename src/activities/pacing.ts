/**
 * Pacing: a worker whose CPU cannot keep up holds runs back at their model turn, instead of letting every
 * run queue for its next workflow task.
 *
 * A run's step is a loop of workflow tasks and activities. When a worker has more runs stepping than its
 * CPU gets through, the runs wait somewhere, and where matters: a workflow task for a run in the worker's
 * cache waits on the worker's own (sticky) queue, and one not taken within the sticky timeout (10 s) goes to
 * the shared queue, where the run is replayed from its history — work thrown away, on a worker already
 * short of CPU (docs/durability.md §6: thousands of such timeouts with 500 runs at once). A waiting
 * activity costs a heartbeat now and then instead. So the worker counts the runs that wait for a workflow
 * task on it: those whose activity ended here and whose workflow has not yet taken the result (the
 * workflow says so through a sink: workflows/pacing.ts). While as many wait as the worker takes in
 * QUEUE_MS at its recent pace (at least PACED_RUNS), a model turn starting on this worker waits first,
 * first come first served, heartbeating, and the workflow tasks in front are done sooner.
 *
 * What is counted is only what the workflow tasks will cost: a model turn let through counts until it ends
 * or for ADMITTED_MS, whichever is first, since a real provider's seconds are spent waiting, not on this
 * worker's CPU; a run counted as waiting that never says it took its result (its task went to another
 * worker) stops counting after STALE_MS. A turn waits MOST_WAIT_MS at most. Below the bound nothing waits,
 * nor on a Worker whose runs have never said a word (one built without the sink).
 */
import type { InjectedSinks } from '@temporalio/worker'
import type { PacingSinks } from '../workflows/index.js'

/**
 * The fewest runs waiting for a workflow task at which model turns wait: four times a worker's workflow-task
 * slots (embed/worker.ts), enough to keep them busy.
 */
const PACED_RUNS = 64
/**
 * The queue of workflow tasks the bound allows, in time: the bound is the worker's recent pace (workflow
 * tasks taking a result, per second) times this, and at least PACED_RUNS. A third of the sticky timeout,
 * so that a pace that drops by half while the queue drains still leaves it well inside.
 */
const QUEUE_MS = 3_000
/** How often the pace is measured (each measure averaged with the one before). */
const PACE_WINDOW_MS = 2_000
const ADMITTED_MS = 1_000
const STALE_MS = 30_000
const MOST_WAIT_MS = 60_000
/** How often waiting turns look again, for entries that stopped counting by age. */
const RECHECK_MS = 100

interface Waiter {
  run: string
  since: number
  let: () => void
}

export class StepPacer {
  /** Runs whose activity ended on this worker and that have not taken its result: since when. */
  private readonly waitingForTask = new Map<string, number>()
  /** Model turns let through and not ended: since when. */
  private readonly admitted = new Map<string, number>()
  private readonly queue: Waiter[] = []
  private recheck: NodeJS.Timeout | undefined
  private heldTurns = 0
  /** Whether any run has said it took a result: a Worker without the sink never holds a turn back. */
  private heard = false
  /** Results taken since `windowStart`, and the pace measured before (per second). */
  private taken = 0
  private windowStart: number
  private pace = 0

  readonly least: number
  private readonly queueMs: number
  private readonly now: () => number

  /**
   * `least`: the bound however slow the pace (PACED_RUNS); `queueMs`: the queue the bound allows, in time at
   * the measured pace (QUEUE_MS; 0 leaves the bound at `least`); `now`: the clock, in milliseconds.
   */
  constructor(options: { least?: number; queueMs?: number; now?: () => number } = {}) {
    this.least = options.least ?? PACED_RUNS
    this.queueMs = options.queueMs ?? QUEUE_MS
    this.now = options.now ?? (() => performance.now())
    this.windowStart = this.now()
  }

  /** Runs waiting for a workflow task at which model turns wait. */
  get bound(): number {
    const now = this.now()
    const elapsed = now - this.windowStart
    if (elapsed >= PACE_WINDOW_MS) {
      const measured = (this.taken * 1000) / elapsed
      this.pace = this.pace === 0 ? measured : (this.pace + measured) / 2
      this.taken = 0
      this.windowStart = now
    }
    return Math.max(this.least, Math.floor((this.pace * this.queueMs) / 1000))
  }

  /** Runs counted against the bound now. */
  get load(): number {
    const now = this.now()
    expire(this.waitingForTask, now - STALE_MS)
    expire(this.admitted, now - ADMITTED_MS)
    return this.waitingForTask.size + this.admitted.size
  }

  /** Turns waiting to start. */
  get waiting(): number {
    return this.queue.length
  }

  /** Turns that have had to wait, since this pacer was made. */
  get held(): number {
    return this.heldTurns
  }

  /** The sink its workers take their runs' word through (workflows/pacing.ts). */
  sinks(): InjectedSinks<PacingSinks> {
    return { tetherPacing: { resumed: { fn: (info) => this.resumed(info.workflowId) } } }
  }

  /** An activity of `run` starts: the run is not waiting for a workflow task. */
  started(run: string): void {
    if (this.waitingForTask.delete(run)) this.letThrough()
  }

  /** An activity of `run` ended: the run waits for the workflow task that takes its result. */
  ended(run: string): void {
    this.admitted.delete(run)
    this.waitingForTask.delete(run)
    this.waitingForTask.set(run, this.now())
  }

  /** `run`'s workflow took an activity's result. */
  resumed(run: string): void {
    this.heard = true
    if (!this.waitingForTask.delete(run)) return
    this.taken++
    this.letThrough()
  }

  /**
   * Resolves when `run`'s model turn may start: at once below the bound, else in turn (or after MOST_WAIT_MS,
   * or once `signal` aborts: the turn then sees its cancellation itself).
   */
  turn(run: string, signal?: AbortSignal): Promise<void> {
    this.started(run)
    if (!this.heard || (this.queue.length === 0 && this.load < this.bound)) {
      this.admit(run)
      return Promise.resolve()
    }
    this.heldTurns++
    return new Promise((resolve) => {
      const gone = () => {
        const at = this.queue.indexOf(waiter)
        if (at >= 0) this.queue.splice(at, 1)
        resolve()
      }
      const waiter: Waiter = {
        run,
        since: this.now(),
        let: () => {
          signal?.removeEventListener('abort', gone)
          resolve()
        },
      }
      signal?.addEventListener('abort', gone, { once: true })
      this.queue.push(waiter)
      this.recheck ??= setInterval(() => this.letThrough(), RECHECK_MS).unref()
      this.letThrough()
    })
  }

  private admit(run: string): void {
    this.admitted.delete(run)
    this.admitted.set(run, this.now())
  }

  /** Lets turns through, oldest first, while there is room (or they have waited long enough). */
  private letThrough(): void {
    const overdue = this.now() - MOST_WAIT_MS
    for (let first = this.queue[0]; first; first = this.queue[0]) {
      if (first.since > overdue && this.load >= this.bound) break
      this.queue.shift()
      this.admit(first.run)
      first.let()
    }
    if (this.queue.length === 0 && this.recheck) {
      clearInterval(this.recheck)
      this.recheck = undefined
    }
  }
}

/** Drops the entries of `entries` (oldest first, as they are kept) set before `before`. */
function expire(entries: Map<string, number>, before: number): void {
  for (const [key, since] of entries) {
    if (since >= before) return
    entries.delete(key)
  }
}

/** The pacer of this process's workers: they share its CPU. */
export const stepPacer = new StepPacer()

/** The sink a tether worker takes its runs' word through, for the process's pacer. */
export const PACING_SINKS = stepPacer.sinks()
