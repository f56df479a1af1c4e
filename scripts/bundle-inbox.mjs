// Prebuilds the inbox's browser script (dist/inbox-app.js), so `tether inbox` serves it without esbuild.
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { bundleBrowserScript } from '../dist/src/inbox/assets.js'

const script = await bundleBrowserScript(
  fileURLToPath(new URL('../src/inbox/browser/app.ts', import.meta.url)),
)
await writeFile(new URL('../dist/inbox-app.js', import.meta.url), script)
console.log(`dist/inbox-app.js: ${(script.length / 1024).toFixed(0)} KiB`)
