// `npm ci` / `npm install` in a checkout builds tether, so `npx tether` and a linked `tether` work at once.
// Where there is nothing to build (an install of dependencies before the sources are copied in, or a
// production install without the compiler), it says so and leaves the build to `npm run build`. The build's
// own output is shown only when it fails: an install says one line.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'

const root = new URL('..', import.meta.url)
let compiler = true
try {
  createRequire(import.meta.url).resolve('typescript')
} catch {
  compiler = false
}
if (!existsSync(new URL('src/cli/bin.ts', root)) || !compiler) {
  console.log('tether: nothing to build here (no sources or no TypeScript compiler); skipping the build')
} else {
  const npm = process.env.npm_execpath
  const started = Date.now()
  const options = { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }
  const result = npm
    ? spawnSync(process.execPath, [npm, 'run', '--silent', 'build'], options)
    : spawnSync('npm', ['run', '--silent', 'build'], options)
  if (result.status === 0) {
    console.log(`tether: built dist/ in ${Math.round((Date.now() - started) / 1000)} s`)
  } else {
    process.stdout.write(result.stdout ?? '')
    process.stderr.write(result.stderr ?? '')
    console.error(`tether: the build failed (${result.error?.message ?? `exit ${result.status}`}); see above`)
  }
  process.exitCode = result.status ?? 1
}
