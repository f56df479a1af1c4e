// `npm ci` / `npm install` in a checkout builds tether, so `npx tether` and a linked `tether` work at once.
// Where there is nothing to build (an install of dependencies before the sources are copied in, or a
// production install without the compiler), it says so and leaves the build to `npm run build`.
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
  const result = npm
    ? spawnSync(process.execPath, [npm, 'run', '--silent', 'build'], { stdio: 'inherit', cwd: root })
    : spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit', cwd: root })
  process.exitCode = result.status ?? 1
}
