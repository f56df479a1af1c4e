/**
 * How every `tether` subcommand prints: for a person (colour only on a terminal, aligned tables) or a script
 * (`--json`, `--json` lines while following). Light on purpose: every command loads it, `--help` included;
 * what connects to Temporal and the audit is in connect.ts, which a command loads when it runs.
 */
import type { ApprovalRow } from '../audit/reader.js'
import { backticks, clip, rememberWords, resolvedHow, visible, words } from '../present/index.js'
import { CliError } from './errors.js'

export { visible }

const useColour = () => Boolean(process.stdout.isTTY) && !process.env.NO_COLOR
const paint = (code: number) => (text: string) => (useColour() ? `\u001b[${code}m${text}\u001b[0m` : text)
export const colour = { red: paint(31), green: paint(32), yellow: paint(33), dim: paint(2), bold: paint(1) }

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

/** One JSON object on one line: what `--follow --json` streams, an event a line. */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`)
}

export function print(line = ''): void {
  process.stdout.write(`${line}\n`)
}

/** Left-aligned columns for a person; the header is dimmed on a terminal. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd()
  print(colour.dim(line(header)))
  for (const row of rows) print(line(row))
}

/**
 * A flag's positive whole number, written in decimal digits only: `0x10`, `1e3`, `16.0` and ` 16` are
 * refused rather than read as something the person may not have meant.
 */
export function wholeNumber(value: string, flag: string): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN
  if (!Number.isSafeInteger(n) || n < 1)
    throw new CliError(`${flag} must be a positive whole number (digits only), not ${JSON.stringify(value)}`)
  return n
}

/** A run id given on the command line (commander's parser for `<run>` and `--run`): never empty. */
export function runArgument(value: string): string {
  if (value.trim() === '') throw new CliError('the run id is empty; name a run (`tether ls` lists them)')
  return value
}

let profile: string | undefined

/** The profile `--profile` names (main.ts sets it before any command runs). */
export function chosenProfile(): string | undefined {
  return profile
}

export function chooseProfile(name: string | undefined): void {
  profile = name
}

/**
 * What follows an approval's decision word, as the CLI prints it: ` by ana via inbox: fine`, ` with the run`;
 * a reason clipped to its first line and `limit` characters when a line must stay short.
 */
export function resolution(approval: Parameters<typeof resolvedHow>[0], limit?: number): string {
  const { how, reason } = resolvedHow(approval)
  if (reason === undefined) return visible(how)
  return visible(`${how}: ${limit === undefined ? reason : clip(reason.split('\n')[0] ?? '', limit)}`)
}

/** What approving with "remember" would add, as the approver reads it before answering. */
export function rememberText(approval: { rememberOffer?: ApprovalRow['rememberOffer'] }): string {
  return approval.rememberOffer
    ? words(rememberWords(approval.rememberOffer, backticks, ' with --remember wider'))
    : ''
}
