/**
 * Provides the Temporal CLI for this machine (see src/stack/temporal-cli.ts for the routes) and prints
 * where it came from. Safe to run repeatedly: a cached binary is found in milliseconds.
 */
import { ensureTemporalCli } from '../src/stack/index.js'

const started = Date.now()
try {
  const cli = await ensureTemporalCli({ log: (line) => console.log(line) })
  console.log(
    `temporal CLI: ${cli.path} (route: ${cli.route}, ${((Date.now() - started) / 1000).toFixed(1)} s)`,
  )
} catch (error) {
  console.error(`error: ${(error as Error).message}`)
  process.exit(1)
}
