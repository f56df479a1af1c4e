/**
 * A worker process for the warm sandbox tests: runs two sandboxed commands one right after the other (so
 * the second waits for its sandbox, still being built, while nothing else keeps this process alive), says
 * how each ran, and stops reading stdin at `end` — or, told `close`, takes the sandboxes down at once (the
 * next one still being built) and says `closed`.
 */
import { closeWarmSandboxes, runCommand } from '../../src/exec/index.js'

const [workspace, then] = process.argv.slice(2) as [string, string | undefined]
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
if (then === 'close') {
  await closeWarmSandboxes()
  process.stdout.write('closed\n')
} else
  process.stdin.on('data', (chunk) => {
    if (String(chunk).includes('end')) process.stdin.destroy()
  })
