/** tether's own version, from its package.json: for the CLI, telemetry and each run's provenance. */
import { readFileSync } from 'node:fs'

let version: string | undefined

/** The version in tether's package.json (found from the sources and from dist/ alike); read once. */
export function packageVersion(): string {
  if (version !== undefined) return version
  version = 'unknown'
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as {
        name?: string
        version?: string
      }
      // The package is tether, under its scope (`@tether-agent/tether`) or not.
      if (pkg.name && /(^|\/)tether$/.test(pkg.name) && pkg.version) {
        version = pkg.version
        break
      }
    } catch {
      // not at this level
    }
  }
  return version
}
