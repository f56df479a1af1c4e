/** The sandbox cannot be built here. The message is one line: what is missing and what to do. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError'
}
