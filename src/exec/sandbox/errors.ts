/** The sandbox cannot be built here. The message is one line: what is missing and what to do. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError'
}

/** How a message about a missing sandbox ends: the other way out. */
export const OFF_HINT = "or have the policy's first layer set `sandbox: off`"
