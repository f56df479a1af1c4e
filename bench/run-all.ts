/**
 * `npm run bench`: every benchmark under bench/, one after another (they must not share the cores); name some
 * to run only those (`npm run bench -- peers run`). bench/peers builds its LangGraph venv from PyPI on first use.
 */
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const dir = fileURLToPath(new URL('.', import.meta.url))
const only = process.argv.slice(2)
const benches = readdirSync(dir)
  .filter(
    (name) => name.endsWith('.ts') && !['run-all.ts', 'support.ts', 'floor-workflows.ts'].includes(name),
  )
  .filter((name) => only.length === 0 || only.includes(name.replace(/\.ts$/, '')))
  .sort()
let failed = 0
for (const bench of benches) {
  console.log(`\n=== bench/${bench}`)
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL(bench, import.meta.url))],
    {
      stdio: 'inherit',
    },
  )
  if (result.status !== 0) failed++
}
process.exitCode = failed ? 1 : 0
