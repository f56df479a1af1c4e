/**
 * What a run is doing right now, read from Temporal's description of it: the command, gate, file tool or
 * model turn in flight (its pending activity), when it started, and what its last heartbeat said — the
 * command and its output so far (`ExecHeartbeat`), or the file tool. The CLI's `--follow` and the inbox's
 * run page read it the same way. Structural types only: no Temporal code is needed to read a description.
 */

/** The fields of one of Temporal's pending activities (`describe().raw.pendingActivities`) read here. */
export interface PendingActivityView {
  activityId?: string | null
  activityType?: { name?: string | null } | null
  attempt?: number | null
  lastStartedTime?: TimestampView | null
  lastHeartbeatTime?: TimestampView | null
  heartbeatDetails?: { payloads?: Array<{ data?: Uint8Array | null } | null> | null } | null
}

interface TimestampView {
  seconds?: unknown
  nanos?: number | null
}

export type FlightKind = 'command' | 'gate' | 'tool' | 'model'

/** Work in flight that a person follows. */
export interface Flight {
  kind: FlightKind
  /** The command as bash reads it (clipped), for a command or the gate. */
  command?: string
  /** The file tool's name. */
  tool?: string
  /** Output so far, as of the last heartbeat (a command or the gate). */
  bytes?: number
  /** How long it has been going, from its start to `now`. */
  elapsedMs: number
  /** When it started, on the reader's clock: the elapsed time can tick between heartbeats from it. */
  startedAt: number
  /** This attempt of this activity. */
  id: string
  /** When the server got its last heartbeat (a new one is news to a follower). */
  beatAt?: number
}

const KINDS: Record<string, FlightKind> = {
  tetherExec: 'command',
  tetherVerify: 'gate',
  tetherFileTool: 'tool',
  tetherModelTurn: 'model',
}

/** The first pending activity a person follows (a run does one such thing at a time); undefined: none. */
export function inFlight(
  pending: readonly PendingActivityView[] | null | undefined,
  now = Date.now(),
): Flight | undefined {
  for (const activity of pending ?? []) {
    const kind = KINDS[activity.activityType?.name ?? '']
    if (!kind) continue
    const details = heartbeatDetails(activity.heartbeatDetails?.payloads?.[0]?.data)
    const started = millis(activity.lastStartedTime)
    const elapsedMs =
      started !== undefined ? Math.max(0, now - started) : Math.max(0, Number(details.elapsedMs) || 0)
    const beatAt = millis(activity.lastHeartbeatTime)
    return {
      kind,
      ...(typeof details.command === 'string' && details.command ? { command: details.command } : {}),
      ...(typeof details.tool === 'string' && details.tool ? { tool: details.tool } : {}),
      ...(typeof details.bytes === 'number' ? { bytes: details.bytes } : {}),
      elapsedMs,
      startedAt: now - elapsedMs,
      id: `${activity.activityId ?? kind}#${activity.attempt ?? 1}`,
      ...(beatAt !== undefined ? { beatAt } : {}),
    }
  }
  return undefined
}

function millis(time: TimestampView | null | undefined): number | undefined {
  if (!time || time.seconds === undefined || time.seconds === null) return undefined
  return Number(time.seconds) * 1_000 + Math.floor((time.nanos ?? 0) / 1e6)
}

/** A heartbeat's first detail, written by the default (JSON) payload converter; nothing else is read. */
function heartbeatDetails(data: Uint8Array | null | undefined): Record<string, unknown> {
  if (!data) return {}
  try {
    const value = JSON.parse(new TextDecoder().decode(data)) as unknown
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : {}
  } catch {
    return {}
  }
}
