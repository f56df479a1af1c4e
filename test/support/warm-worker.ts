/**
 * A worker process for the warm sandbox tests: runs one sandboxed command that may use the network (so its
 * next sandbox, built ahead, has an egress proxy too), says `ran`, and stops reading stdin at `end`.
 */
import { runCommand } from '../../src/exec/index.js'

const [workspace] = process.argv.slice(2) as [string]
const result = await runCommand({
  argv: ['true'],
  cwd: workspace,
  timeoutMs: 60_000,
  sandbox: { workspace, network: { allow: () => ({ allowed: false, reason: 'denied by test' }) } },
})
process.stdout.write(`ran ${result.status}\n`)
process.stdin.on('data', (chunk) => {
  if (String(chunk).includes('end')) process.stdin.destroy()
})
