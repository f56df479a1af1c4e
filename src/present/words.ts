/**
 * Numbers, sizes, durations and clipped text as the people and the model who read tether's words see them:
 * one way each, for the CLI, the inbox, the webhook, tool observations and the audit.
 */

/** `text`, or its first `limit - 1` characters and `…`. */
export function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`
}

/** `text`, or its first `limit` characters and how many more there were (where a reader may want them). */
export function clipNoted(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}… (${text.length - limit} more characters)`
}

/**
 * `1,234`. A whole number is grouped here, as `toLocaleString('en-US')` groups it: the first call of that
 * loads ICU's number formats, tens of ms of a CLI command's start. Anything else goes to it.
 */
export function formatCount(value: number): string {
  if (!Number.isSafeInteger(value) || Object.is(value, -0)) return value.toLocaleString('en-US')
  const grouped = String(Math.abs(value)).replace(/\B(?=(\d{3})+$)/g, ',')
  return value < 0 ? `-${grouped}` : grouped
}

/** `12,345 characters; the pattern limit is 4,096`: a count and the limit it passes, for a one-line refusal. */
export function overLimit(count: number, unit: string, limit: number, name: string): string {
  return `${formatCount(count)} ${unit}; the ${name} limit is ${formatCount(limit)}`
}

/**
 * How a command ended, as "what ran" shows it: `exit 1`, `killed by SIGKILL`, `timed-out`, and for one a lost
 * or stopping worker cut off (not run again: it was on the noRetry list) `unknown (worker lost)`.
 */
export function commandStatus(command: {
  status: string
  exitCode?: number | undefined
  signal?: string | undefined
}): string {
  if (command.status === 'exited') return `exit ${command.exitCode}`
  if (command.status === 'signalled') return `killed by ${command.signal ?? 'a signal'}`
  if (command.status === 'unknown') return 'unknown (worker lost)'
  return command.status
}

/**
 * What follows an approval's decision word: `how` (` by ana via inbox`), and the reason given, if any. One
 * tether resolved itself reads as what happened (` with the run`, `: no answer by its deadline`), not as a
 * person and a channel both named for tether.
 */
export function resolvedHow(approval: {
  decision?: string | null | undefined
  decidedBy?: string | null | undefined
  channel?: string | null | undefined
  reason?: string | null | undefined
}): { how: string; reason?: string } {
  const reason = approval.reason ?? undefined
  if (approval.decision === 'cancelled' && approval.channel === 'cancel')
    return reason === undefined || reason === 'run cancelled'
      ? { how: ' with the run' }
      : { how: ' with the run', reason }
  if (approval.decision === 'timeout')
    return { how: `: ${reason === undefined || reason === 'timeout' ? 'no answer by its deadline' : reason}` }
  const how = ` by ${approval.decidedBy ?? 'tether'}${approval.channel ? ` via ${approval.channel}` : ''}`
  return reason ? { how, reason } : { how }
}

/** One line about a run's links: `before`, then `name` (a run's id when `run`, else a branch), then `after`. */
export interface LinkLine {
  before: string
  name: string
  run: boolean
  after: string
}

/**
 * A run's links, a line each: the run it was rewound from, those rewound from it, and the branch its verified
 * tree became (`tether show` writes them as text, the inbox links the runs).
 */
export function runLinkLines(links: {
  from?: { runId: string; step: number } | undefined
  into: ReadonlyArray<{ runId: string; step: number }>
  branch?: string | undefined
}): LinkLine[] {
  return [
    ...(links.from
      ? [{ before: 'rewound from ', name: links.from.runId, run: true, after: ` at step ${links.from.step}` }]
      : []),
    ...links.into.map((into) => ({
      before: 'rewound into ',
      name: into.runId,
      run: true,
      after: ` (from step ${into.step})`,
    })),
    ...(links.branch
      ? [{ before: '', name: links.branch, run: false, after: ' (written by the worker, not pushed)' }]
      : []),
  ]
}

/**
 * The warning over a list of git files a run wrote that make git run a program (exec's plantedGitFiles),
 * after who or what holds them: `the run wrote`, `the tree holds`.
 */
export function plantedGitWarning(where: string): string {
  return (
    `${where} git files that make git run programs: git run there outside the sandbox (yours, or an ` +
    "editor's on its own) obeys them — read them before you use git in those folders"
  )
}

/**
 * What became of a run's workspace before a call (the audit's `outside-edit` and `restore` snapshots), in
 * words split around `named` — what changed, or the machine — which each surface shows in its own way.
 */
export function workspaceEventWords(event: {
  kind: 'outside-edit' | 'restore'
  root: string
  files: number
  bytes: number
  detail: string
}): { label: string; expected: boolean; before: string; named: string; after: string } {
  const tree = event.root.slice(0, 12)
  return event.kind === 'restore'
    ? {
        label: 'restored',
        expected: true,
        before: 'the workspace',
        named: event.detail,
        after: `from the snapshot store: tree ${tree}, ${counted(event.files, 'file')}, ${formatBytes(event.bytes)}, its hash checked`,
      }
    : {
        label: 'changed',
        expected: false,
        before: 'outside the run (or by an attempt cut off):',
        named: event.detail,
        after: `— recorded as tree ${tree} and told to the model`,
      }
}

/** `1 call`, `2 calls`, `0 steps`; `plural` when adding an s is wrong. */
export function counted(count: number, noun: string, plural = `${noun}s`): string {
  return `${formatCount(count)} ${count === 1 ? noun : plural}`
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB']

/** A size as a person reads it: `512 B`, `3.4 KiB`, `256 MiB`, `1.5 GiB`. */
export function formatBytes(bytes: number): string {
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024
    unit += 1
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${BYTE_UNITS[unit]}`
}

/** A size exactly, where the reader acts on the number (a tool's limit): `2,097,153 bytes`. */
export function exactBytes(bytes: number): string {
  return counted(bytes, 'byte')
}

/** `850 ms`, `12.3 s`, `4 min`, `1.5 h`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`
  if (ms < 60_000) return seconds(ms)
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`
  return `${(ms / 3_600_000).toFixed(1)} h`
}

/** Seconds with one decimal, for a command's or a run's duration: `12.3 s`. */
export function seconds(ms: number): string {
  return `${(ms / 1_000).toFixed(1)} s`
}

/**
 * An amount of micro-dollars as a person reads a spend or a cap: cents for whole-cent amounts, and as many
 * decimals as it has below a cent — `25.00 USD`, `0.01 USD`, `0.0123 USD`, `0.000042 USD`.
 */
export function formatMoney(micros: number): string {
  const abs = Math.abs(Math.round(micros))
  const whole = Math.floor(abs / 1_000_000)
  const fraction = String(abs % 1_000_000)
    .padStart(6, '0')
    .replace(/0+$/, '')
    .padEnd(2, '0')
  return `${micros < 0 ? '-' : ''}${formatCount(whole)}.${fraction} USD`
}
