/**
 * The entry point of the bundled CLI (built into dist/src/bundle/bin.cjs, beside the bundle tether.cjs):
 * runs the bundle with its code cache (code-cache.ts), and writes the cache after a command that succeeded.
 * `tether --version` alone is answered here, without the bundle: it is the version and nothing else. Built
 * as CommonJS, like bin/tether.js which requires it: no top-level await.
 */
import { fileURLToPath } from 'node:url'
import { packageVersion } from '../stack/version.js'
import { codeCacheDir, runCached } from './code-cache.js'

const argv = process.argv.slice(2)
const first = argv[0]
if (argv.length === 1 && (first === '--version' || first === '-V')) {
  process.stdout.write(`${packageVersion()}\n`)
} else {
  const bundle = runCached(fileURLToPath(new URL('tether.cjs', import.meta.url)), {
    cacheDir: codeCacheDir(),
    name: first && !first.startsWith('-') ? first : 'tether',
    importer: (specifier) => import(specifier),
  })
  process.on('exit', (code) => {
    if (code === 0) bundle.save()
  })
  const { runProcess } = bundle.exports as { runProcess: (argv: readonly string[]) => Promise<void> }
  void runProcess(argv)
}
