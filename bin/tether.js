#!/usr/bin/env node
// Entry point of the `tether` command: the bundled CLI in dist/ (built by `npm ci` / `npm install` through
// the `prepare` script; it starts fastest), else the compiled modules, or, in a checkout that has not been
// built, the TypeScript sources through tsx.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = new URL('..', import.meta.url)
const built = ['dist/src/bundle/bin.js', 'dist/src/cli/bin.js']
  .map((path) => new URL(path, root))
  .find((url) => existsSync(url))
if (built) {
  await import(built.href)
} else {
  let register
  try {
    ;({ register } = await import('tsx/esm/api'))
  } catch {
    console.error(
      `error: tether is not built and cannot run from its sources here; run \`npm ci\` (or \`npm run build\`) in ${fileURLToPath(root)}`,
    )
    process.exit(1)
  }
  register()
  await import(new URL('src/cli/bin.ts', root).href)
}
