// `npm run demo` from a fresh clone: installs the packages when they are missing, then runs the demo
// (which provides the Temporal CLI itself). Plain JavaScript, so it runs before anything is installed.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const run = (command, args) => {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit' })
  if (result.status !== 0) process.exit(result.status ?? 1)
}
if (!existsSync(new URL('../node_modules/.package-lock.json', import.meta.url))) {
  console.log('installing packages (npm ci) …')
  run('npm', ['ci', '--no-audit', '--no-fund'])
}
run(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./demo.ts', import.meta.url))])
