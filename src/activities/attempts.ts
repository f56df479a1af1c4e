/**
 * A retried command never overlaps the attempt before it. When Temporal retries a command's activity (its
 * worker stopped heartbeating: the worker died, or the Temporal server was away), the earlier attempt may
 * still be running — on this worker or another. So every attempt is recorded in `exec_attempts` and kept
 * alive there while it runs; a new attempt first stops any earlier one on this worker, then waits until
 * every earlier attempt has ended (each one sees, on its next keep-alive, that it was superseded and kills
 * its process tree) or has gone silent long enough that its worker must be dead (its commands died with
 * it: the orphan guard and the sandbox's `--die-with-parent` see to that).
 *
 * A worker that is lost or stops is not the command's fault: Temporal retries a command without limit, and
 * only failures of the command's own (its program could not start, its sandbox failed) count, here, toward
 * COMMAND_FAILURE_LIMIT. A stopping worker hands its command over: the attempt ends `handed over` at once
 * and the next one starts on another worker a second later, without waiting for a heartbeat to time out.
 */

import { hostname } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { Context } from '@temporalio/activity'
import { ApplicationFailure, CancelledFailure } from '@temporalio/common'
import { AuditConnectionError, type AuditStore, type AuditWrites } from '../audit/index.js'
import { FAILURE } from '../run/index.js'

/** How often a running attempt says it is alive (and looks for a newer attempt). */
const KEEP_ALIVE_MS = 2_000
/** An attempt not seen alive for this long belonged to a dead worker (well above KEEP_ALIVE_MS). */
const STALE_MS = 15_000
const WAIT_POLL_MS = 250
/**
 * Failures of a command's own one command may have: a sandbox that cannot start one would otherwise be
 * retried for ever. Attempts a lost or stopping worker cut off, or that waited out the audit, do not count.
 */
export const COMMAND_FAILURE_LIMIT = 3

export interface AttemptKey {
  runId: string
  step: number
  call: number
  attempt: number
}

interface Running {
  stop: AbortController
  done: Promise<void>
}

export interface Attempt {
  /** Aborts when a later attempt of the same command takes over: kill the command, record nothing. */
  superseded: AbortSignal
  /** The command starts now: the time its end records as the attempt's start (returned). */
  started(): Date
  /**
   * Stops keeping the attempt alive and records how it ended, who ran it and when its command started —
   * with `writes`, in that transaction (the command's result, its observation and its end in one commit).
   * Each call records; call it once per commit.
   */
  end(outcome: string, writes?: Pick<AuditWrites, 'endExecAttempt'>): Promise<void>
}

/** Whether the activity was cancelled because its worker is shutting down (after its grace time). */
export function workerStopping(context: Context): boolean {
  if (!context.cancellationSignal.aborted) return false
  const reason: unknown = context.cancellationSignal.reason
  return (
    context.cancellationDetails?.workerShutdown === true ||
    (reason instanceof CancelledFailure && reason.message === 'WORKER_SHUTDOWN')
  )
}

/** What an attempt whose worker is stopping throws: retried a second later, on another worker. */
export function handedOver(what: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: FAILURE.workerStopping,
    message: `this worker is stopping; ${what} is handed to another worker`,
    nextRetryDelay: '1 second',
  })
}

/** This worker process, as `exec_attempts.worker` names it. */
export const WORKER = `${hostname()}:${process.pid}`

export class CommandAttempts {
  private readonly running = new Map<string, Running>()
  private readonly worker = WORKER

  constructor(private readonly audit: AuditStore) {}

  /** Whether `worker` (`host:pid`) names a process on this machine that no longer exists. */
  private deadHere(worker: string): boolean {
    const at = worker.lastIndexOf(':')
    if (worker.slice(0, at) !== hostname()) return false
    try {
      process.kill(Number(worker.slice(at + 1)), 0)
      return false
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ESRCH'
    }
  }

  /**
   * How an attempt that threw ends in `exec_attempts`, and what the activity throws instead: a stopping
   * worker hands the command over; an audit that is away is waited out (retried); the workflow's own
   * cancellation, and failures that say not to retry, pass as they are (`outcome` stays). Anything else is a
   * failure of the command or its sandbox: `failed`, and the COMMAND_FAILURE_LIMIT-th ends the retries.
   */
  async failure(
    key: AttemptKey,
    error: unknown,
    outcome: string,
    context: Context,
    what: string,
  ): Promise<{ outcome: string; error: unknown }> {
    if (workerStopping(context)) return { outcome: 'handed over', error: handedOver(what) }
    if (context.cancellationSignal.aborted) return { outcome: 'cancelled', error }
    if (error instanceof ApplicationFailure && error.nonRetryable) return { outcome, error }
    if (error instanceof AuditConnectionError) return { outcome: 'audit unavailable', error }
    const earlier = (await this.audit.execAttempts(key.runId)).filter(
      (a) => a.step === key.step && a.call === key.call && a.attempt < key.attempt && a.outcome === 'failed',
    )
    if (earlier.length + 1 < COMMAND_FAILURE_LIMIT) return { outcome: 'failed', error }
    const message = error instanceof Error ? error.message : String(error)
    return {
      outcome: 'failed',
      error: ApplicationFailure.create({
        type: FAILURE.commandFailed,
        message: `${what} failed ${COMMAND_FAILURE_LIMIT} times (lost and stopping workers aside): ${message}`,
        nonRetryable: true,
        cause: error instanceof Error ? error : undefined,
      }),
    }
  }

  /**
   * Starts attempt `key` once no earlier attempt of the same command runs anywhere. Attempt 1 of a command
   * its model turn allowed was begun with the turn's reply, and of an approved one with its decision (one
   * commit fewer); any other is begun here, so an attempt a lost worker cut off stays in the audit. `open`:
   * whether attempt 1 is on record as begun and not ended, when the caller knows (else it is looked up).
   */
  async begin(key: AttemptKey, context: Context = Context.current(), open?: boolean): Promise<Attempt> {
    const command = `${key.runId}\u0000${key.step}\u0000${key.call}`
    const earlier = this.running.get(command)
    if (earlier) {
      earlier.stop.abort(new Error(`attempt ${key.attempt} of this command has begun`))
      await earlier.done
    }
    if (key.attempt > 1 || !(open ?? (await this.audit.execAttemptOpen(key))))
      await this.audit.beginExecAttempt(key, this.worker)
    if (key.attempt > 1) {
      for (;;) {
        const running = await this.audit.runningEarlierAttempts(key, STALE_MS)
        // An attempt of a worker process on this machine that is gone has ended (its commands with it).
        const dead = running.filter((earlier) => this.deadHere(earlier.worker))
        for (const earlier of dead)
          await this.audit.endExecAttempt({ ...key, attempt: earlier.attempt }, 'lost')
        if (running.length === dead.length) break
        context.heartbeat()
        if (context.cancellationSignal.aborted) {
          // Closed now, so the attempt after it does not wait for this one to go stale.
          const stopping = workerStopping(context)
          await this.audit.endExecAttempt(key, stopping ? 'handed over' : 'cancelled')
          throw stopping ? handedOver('the command') : context.cancellationSignal.reason
        }
        await sleep(WAIT_POLL_MS)
      }
    }
    // `superseded` stops the command; `quit` only stops keeping this attempt alive.
    const superseded = new AbortController()
    const quit = new AbortController()
    let finished: () => void = () => {}
    const done = new Promise<void>((resolve) => {
      finished = resolve
    })
    this.running.set(command, { stop: superseded, done })
    const keepAlive = async () => {
      while (!quit.signal.aborted) {
        await sleep(KEEP_ALIVE_MS, undefined, { signal: quit.signal }).catch(() => {})
        if (quit.signal.aborted) return
        const { superseded: newer } = await this.audit
          .touchExecAttempt(key, this.worker)
          .catch(() => ({ superseded: false }))
        if (newer) superseded.abort(new Error('a later attempt of this command has begun'))
      }
    }
    const alive = keepAlive()
    let ended = false
    let startedAt: Date | undefined
    return {
      superseded: superseded.signal,
      started: () => {
        startedAt = new Date()
        return startedAt
      },
      end: async (outcome, writes = this.audit) => {
        if (!ended) {
          ended = true
          quit.abort()
          await alive
          if (this.running.get(command)?.stop === superseded) this.running.delete(command)
        }
        try {
          await writes.endExecAttempt(key, superseded.signal.aborted ? 'superseded' : outcome, {
            worker: this.worker,
            startedAt,
          })
        } finally {
          finished()
        }
      },
    }
  }
}
