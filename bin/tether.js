#!/usr/bin/env node
// Entry point of the `tether` command: the bundled CLI in dist/ (built by `npm ci` / `npm install` through
// the `prepare` script; it starts fastest), else the compiled modules, or, in a checkout that has not been
// built, the TypeScript sources through tsx. CommonJS (bin/package.json) like the bundle it loads, so a
// command starts without Node's ES module loader, unless it needs one.
'use strict'
const { existsSync } = require('node:fs')
const { join, sep } = require('node:path')
const { pathToFileURL } = require('node:url')

const root = join(__dirname, '..')
const at = (path) => join(root, path)
if (existsSync(at('dist/src/bundle/bin.cjs'))) {
  require(at('dist/src/bundle/bin.cjs'))
} else if (existsSync(at('dist/src/cli/bin.js'))) {
  import(pathToFileURL(at('dist/src/cli/bin.js')).href)
} else {
  import('tsx/esm/api').then(
    ({ register }) => {
      register()
      return import(pathToFileURL(at('src/cli/bin.ts')).href)
    },
    () => {
      console.error(
        `error: tether is not built and cannot run from its sources here; run \`npm ci\` (or \`npm run build\`) in ${root}${sep}`,
      )
      process.exit(1)
    },
  )
}
