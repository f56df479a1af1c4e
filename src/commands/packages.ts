/** What tether knows of a JavaScript package's manifest: the scripts its package managers run by name. */

/** The scripts of a package.json, without npm's placeholder test script (it only fails). */
export function packageScripts(manifest: Record<string, unknown>): Record<string, string> {
  const scripts = stringRecord(manifest.scripts)
  if (scripts.test?.includes('no test specified')) delete scripts.test
  return scripts
}

/** The string entries of a manifest's object field (`scripts`, `dependencies`); anything else is none. */
export function stringRecord(value: unknown): Record<string, string> {
  if (typeof value !== 'object' || value === null) return {}
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  )
}
