#!/usr/bin/env node
// Entry point of the `tether` command: runs the compiled CLI from dist/.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const entry = new URL('../dist/src/cli/bin.js', import.meta.url)
if (!existsSync(entry)) {
  console.error(
    `error: tether is not built yet; run \`npm run build\` in ${fileURLToPath(new URL('..', import.meta.url))}`,
  )
  process.exit(1)
}
await import(entry.href)
