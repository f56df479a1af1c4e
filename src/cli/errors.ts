/**
 * How `tether` exits (documented in `tether --help` and the README): scripts branch on these, so each
 * means one thing.
 */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** An error, said in one line; or a check that failed. */
  error: 1,
  /** A usage error: an unknown command or option, a missing or malformed argument. */
  usage: 2,
  /** A followed run ended without success (its outcome is not `verified` or `finished`). */
  runFailed: 3,
} as const

/** An error meant for the person at the terminal: printed as one line, exit status 1 (or `exitCode`). */
export class CliError extends Error {
  override name = 'CliError'
  constructor(
    message: string,
    readonly exitCode: number = EXIT.error,
  ) {
    super(message)
  }
}
