/** Errors of the exec runner. No Node imports, so workflow code may test for them by name. */

/**
 * Invalid input to `runCommand`: nothing was spawned. `field` names the bad option or element
 * (`argv[2]`, `cwd`, `env.PATH`, …); the message says what was wrong and what to do.
 */
export class ExecInputError extends Error {
  override name = 'ExecInputError'
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`)
  }
}

/** The OS refused to start a process for a reason that is not the command's fault (EMFILE, ENOMEM, …). */
export class ExecSpawnError extends Error {
  override name = 'ExecSpawnError'
}
