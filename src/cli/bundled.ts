/**
 * The entry point of the bundled CLI (built into dist/src/bundle/bin.js, beside the bundle tether.cjs):
 * runs the bundle with its code cache (code-cache.ts), and writes the cache after a command that succeeded.
 */
import { fileURLToPath } from 'node:url'
import { codeCacheDir, runCached } from './code-cache.js'

const argv = process.argv.slice(2)
const first = argv[0]
const bundle = runCached(fileURLToPath(new URL('tether.cjs', import.meta.url)), {
  cacheDir: codeCacheDir(),
  name: first && !first.startsWith('-') ? first : 'tether',
  importer: (specifier) => import(specifier),
})
process.on('exit', (code) => {
  if (code === 0) bundle.save()
})
const { runProcess } = bundle.exports as { runProcess: (argv: readonly string[]) => Promise<void> }
await runProcess(argv)
