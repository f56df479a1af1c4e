/**
 * Times as an approver reads them: a deadline in UTC, in the reader's own time zone, and how long is left,
 * so nobody in another zone has to do arithmetic to know whether an answer is still in time.
 */

/** `2026-12-02 04:51 UTC (2026-12-01 23:51 EST your time), in 23h 59m`. */
export function formatDeadline(deadline: Date, now: Date = new Date(), timeZone = localTimeZone()): string {
  const local = isUtc(timeZone) ? 'your local time' : `${localTime(deadline, timeZone)} your time`
  return `${utcText(deadline)} (${local}), ${untilText(deadline, now)}`
}

/**
 * A moment as the reader reads it: in their time zone (`2026-12-01 23:51 GMT-5`), or UTC when that is
 * theirs (`2026-12-02 04:51 UTC`).
 */
export function localText(date: Date, timeZone = localTimeZone()): string {
  return isUtc(timeZone) ? utcText(date) : localTime(date, timeZone)
}

/** Which limit ends an approval's wait, in words: `set by the run's wall-time budget`. */
export function deadlineSetBy(by: 'approval timeout' | 'wall-time budget' | undefined): string {
  return by === 'wall-time budget' ? "set by the run's wall-time budget" : 'set by the approval timeout'
}

/** `2026-12-02 04:51 UTC`. */
export function utcText(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`
}

/** `in 23h 59m`, or `9m ago` once the deadline has passed. */
export function untilText(deadline: Date, now: Date): string {
  const left = deadline.getTime() - now.getTime()
  return left >= 0 ? `in ${span(left)}` : `${span(-left)} ago`
}

/** A span as a person says it: `45s`, `12m`, `3h 5m`, `2d 4h`. */
export function span(ms: number): string {
  const minutes = Math.floor(ms / 60_000)
  if (minutes < 1) return `${Math.floor(ms / 1_000)}s`
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  if (hours < 24) return `${hours}h ${minutes % 60}m`
  return `${Math.floor(hours / 24)}d ${hours % 24}h`
}

function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone
}

function isUtc(timeZone: string): boolean {
  return /^(Etc\/)?(UTC|UCT|GMT|Zulu|Universal)$/i.test(timeZone)
}

function localTime(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'short',
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  )
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} ${parts.timeZoneName}`
}
