/**
 * What a run is doing right now, in words: the command, gate, file tool or model turn in flight, for how
 * long, and how much it has printed — the live line of `tether run --follow` and `tether show --follow`, and
 * the inbox's run page (what is in flight is read by run/progress.ts).
 */
import { formatBytes } from './words.js'

/** Work in flight, as far as words need it. */
export interface InFlight {
  kind: 'command' | 'gate' | 'tool' | 'model'
  command?: string | undefined
  tool?: string | undefined
  bytes?: number | undefined
  elapsedMs: number
}

/** An elapsed time that changes every second, however long it runs: `7s`, `1m 05s`, `2h 03m 10s`. */
export function elapsedText(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1_000))
  const [h, m, s] = [Math.floor(total / 3_600), Math.floor(total / 60) % 60, total % 60]
  const pad = (n: number) => String(n).padStart(2, '0')
  if (h > 0) return `${h}h ${pad(m)}m ${pad(s)}s`
  if (m > 0) return `${m}m ${pad(s)}s`
  return `${s}s`
}

/**
 * `running \`npm test\` for 12s, 3.4 KiB of output so far`, `the gate \`npm test\` for 3s, …`,
 * `read_file for 2s`, `the model's turn for 9s`.
 */
export function inFlightWords(flight: InFlight): string {
  const time = `for ${elapsedText(flight.elapsedMs)}`
  const output = flight.bytes !== undefined ? `, ${formatBytes(flight.bytes)} of output so far` : ''
  const quoted = flight.command ? `\`${flight.command}\`` : undefined
  switch (flight.kind) {
    case 'command':
      return `running ${quoted ?? 'a command'} ${time}${output}`
    case 'gate':
      return `the gate ${quoted ?? 'command'} ${time}${output}`
    case 'tool':
      return `${flight.tool ?? 'a file tool'} ${time}`
    case 'model':
      return `the model's turn ${time}`
  }
}
