/**
 * Environment variables as programs read them: which ones a command may never be given, whatever a
 * contract lists. Shared by the contract (which refuses such names up front) and the exec runner (which
 * drops them).
 */

/** git's variables a commit needs; every other GIT_* names repositories, configuration or programs to run. */
export const COMMIT_IDENTITY: readonly string[] = Object.freeze([
  'GIT_AUTHOR_NAME',
  'GIT_AUTHOR_EMAIL',
  'GIT_COMMITTER_NAME',
  'GIT_COMMITTER_EMAIL',
])
const commitIdentity = new Set(COMMIT_IDENTITY)

/**
 * Names that never reach a sandboxed command, even when a contract lists them: tether's own connections
 * (Temporal, the audit database), PostgreSQL client settings, anything shaped like a credential, and git's
 * variables but the commit identity (they name other repositories, configuration and programs to run;
 * see GIT_CONFIG_PINS in exec/env.ts).
 */
export function neverPassed(name: string): boolean {
  const upper = name.toUpperCase()
  return (
    (upper.startsWith('GIT_') && !commitIdentity.has(upper)) ||
    upper.startsWith('TEMPORAL_') ||
    upper.startsWith('TETHER_') ||
    upper === 'DATABASE_URL' ||
    upper.startsWith('PG') ||
    upper.startsWith('AWS_') ||
    upper.endsWith('_API_KEY') ||
    upper.endsWith('_TOKEN') ||
    upper.includes('SECRET') ||
    upper.includes('PASS')
  )
}
