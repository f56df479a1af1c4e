/**
 * A worker process for the warm sandbox tests: runs two sandboxed commands one right after the other (so
 * the second waits for its sandbox, still being built, while nothing else keeps this process alive), says
 * how each ran, and stops reading stdin at `end`.
 */
import { runCommand } from '../../src/exec/index.js'

const [workspace] = process.argv.slice(2) as [string]
const run = () =>
  runCommand({
    argv: ['true'],
    cwd: workspace,
    timeoutMs: 60_000,
    sandbox: { workspace },
  })
const first = await run()
const second = await run()
process.stdout.write(`ran ${first.status} ${second.status}\n`)
process.stdin.on('data', (chunk) => {
  if (String(chunk).includes('end')) process.stdin.destroy()
})
