/** The sandbox cannot be built here. The message is one line: what is missing and what to do. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError'
}

/** How a message about a missing sandbox ends: the other way out. */
export const OFF_HINT =
  'or give this worker a floor that says `sandbox: off` (TETHER_FLOOR; docs/policy.md#the-operators-floor)'
