/** An error meant for the person at the terminal: printed as one line, exit status 1 (or `exitCode`). */
export class CliError extends Error {
  override name = 'CliError'
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message)
  }
}
