/** Following a live run until it ends (`--follow`): its timeline as it grows, and what is in flight. */

import type { Client } from '@temporalio/client'
import { type AuditStore, type TimelineEntry, tellsSomethingNew } from '../audit/reader.js'
import { inFlightWords } from '../present/index.js'
import { type Flight, inFlight } from '../run/index.js'
import type { AgentRunResult } from '../workflows/index.js'
import { colour, print, printJsonLine, visible } from './context.js'
import { entryKey, entryLine, outcomeText, plantedGitLines, plantedGitOf } from './timeline.js'

/**
 * Whether the work in flight can be told: a command (or the gate) names itself with its first heartbeat, a
 * quarter second in (none is sent at its start: src/activities/exec.ts); until then it is not shown.
 */
function named(flight: Flight): boolean {
  return (flight.kind !== 'command' && flight.kind !== 'gate') || flight.command !== undefined
}

/**
 * A followed run's new timeline entries as lines. A step's row is recorded with the model turn after it, so
 * its commands, refusals and approvals come in before it: the step they belong to gets a header first
 * (`step 4  …`), and its row's own line when it comes; `headed` holds the steps that have one.
 */
export function followedLines(entries: readonly TimelineEntry[], headed: Set<number>): string[] {
  const lines: string[] = []
  for (const entry of entries) {
    // Step 0 has no row: its entries are the workspace's layout, before any step.
    if (entry.type !== 'step' && entry.step > 0 && !headed.has(entry.step)) {
      lines.push(`${colour.bold(`step ${entry.step}`)}  ${colour.dim('…')}`)
    }
    headed.add(entry.step)
    lines.push(entryLine(entry))
  }
  return lines
}

/** How long work goes on before a log (no terminal) is told of it, and how often after that. */
const LOGGED_EVERY_MS = 10_000

/**
 * Whether a log (`--follow` on a pipe, where no line can be redrawn) gets a line for the work in flight:
 * once it has gone on for 10 s, then every 10 s. Work done sooner is told by its timeline entry alone.
 */
export function logsProgress(
  flight: Flight | undefined,
  now: number,
  lastLoggedAt: number,
): flight is Flight {
  return (
    flight !== undefined &&
    named(flight) &&
    now - flight.startedAt >= LOGGED_EVERY_MS &&
    now - lastLoggedAt >= LOGGED_EVERY_MS
  )
}

/** What `--follow` returns once the run has closed. */
export type FollowResult = AgentRunResult | { runId: string; outcome: string; reason?: string }

/**
 * Prints a live run's timeline as it grows until the run closes, and returns its result. For a person: each
 * entry a line, and on a terminal a line that ticks every second with what is in flight (the command, its
 * elapsed time and output so far); on a pipe, that line for work that goes on 10 s, every 10 s. For a
 * script (`json`): one JSON object per line and per event — each timeline entry as it appears (`"event"`:
 * its type), each piece of work as it starts (a command once it has named itself) and each heartbeat it
 * sends (`"event": "progress"`), and the outcome last (`"event": "outcome"`).
 */
export async function followRun(
  client: Client,
  audit: AuditStore,
  runId: string,
  options: {
    json: boolean
    intervalMs?: number
    /** While this says so, the live line stays off the terminal (someone else is writing to it). */
    hold?: () => boolean
  },
): Promise<FollowResult> {
  const handle = client.workflow.getHandle(runId)
  const seen = new Set<string>()
  const headed = new Set<number>()
  const live = Boolean(process.stdout.isTTY) && !options.json
  let lastProgress = 0
  let reported: string | undefined
  let flight: Flight | undefined
  let liveLine = false
  const clearLive = () => {
    if (liveLine) process.stdout.write('\r\u001b[2K')
    liveLine = false
  }
  // The live line is redrawn from this machine's clock every second, between Temporal's answers.
  const drawLive = () => {
    if (!flight || !named(flight) || options.hold?.()) return clearLive()
    const text = inFlightWords({ ...flight, elapsedMs: Date.now() - flight.startedAt })
    process.stdout.write(`\r\u001b[2K${colour.dim(`  … ${visible(text)}`)}`)
    liveLine = true
  }
  const ticker = live ? setInterval(drawLive, 1_000) : undefined
  try {
    for (;;) {
      const description = await handle.describe()
      const fresh = (await audit.runTimeline(runId)).filter((entry) => {
        const key = entryKey(entry)
        if (seen.has(key) || !tellsSomethingNew(entry)) return false
        seen.add(key)
        return true
      })
      if (options.json) for (const entry of fresh) printJsonLine({ event: entry.type, ...entry })
      else if (fresh.length > 0) {
        clearLive()
        for (const line of followedLines(fresh, headed)) print(line)
      }
      flight = inFlight(description.raw.pendingActivities)
      if (options.json) {
        // A new piece of work, or a new heartbeat from it: news. The same one seen again is not.
        const news = flight && `${flight.id} ${flight.beatAt ?? ''}`
        if (!flight) reported = undefined
        else if (news !== reported && named(flight)) {
          const { startedAt: _, id: __, beatAt: ___, ...progress } = flight
          printJsonLine({ event: 'progress', runId, ...progress })
          reported = news
        }
      } else if (live) drawLive()
      else if (logsProgress(flight, Date.now(), lastProgress)) {
        print(colour.dim(`  … ${visible(inFlightWords(flight))}`))
        lastProgress = Date.now()
      }
      if (description.status.name !== 'RUNNING') {
        clearLive()
        const summary = await audit.runSummary(runId)
        const result: FollowResult =
          description.status.name === 'COMPLETED'
            ? ((await handle.result()) as AgentRunResult)
            : {
                runId,
                outcome: summary?.outcome ?? description.status.name.toLowerCase(),
                ...(summary?.reason ? { reason: summary.reason } : {}),
              }
        const { files: plantedGit, held } = summary ? await plantedGitOf(summary) : { files: [], held: false }
        if (options.json) printJsonLine({ event: 'outcome', ...result, plantedGit })
        else {
          print(
            `${colour.bold('outcome')}   ${outcomeText(result.outcome)}${result.reason ? colour.dim(` — ${result.reason}`) : ''}`,
          )
          for (const line of plantedGitLines(plantedGit, 'the run wrote', held)) print(line)
        }
        return result
      }
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 500))
    }
  } finally {
    if (ticker) clearInterval(ticker)
    clearLive()
  }
}
