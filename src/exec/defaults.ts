/** The runner's defaults. No imports, so workflow code (via activity-options.ts) can use them. */

export const DEFAULT_TIMEOUT_MS = 15 * 60_000
export const DEFAULT_OUTPUT_CEILING = 12_000
export const DEFAULT_KILL_GRACE_MS = 2_000
export const DEFAULT_DRAIN_MS = 250
/** setTimeout's limit; a larger delay would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1
