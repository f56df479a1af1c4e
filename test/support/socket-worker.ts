/**
 * A worker process for the socket tests: starts a sandboxed command that may use the network (so an egress
 * proxy listens for it), says `started`, then waits to be killed or told `exit` on stdin.
 */
import { runCommand } from '../../src/exec/index.js'

const [workspace] = process.argv.slice(2) as [string]
void runCommand({
  argv: ['sleep', '120'],
  cwd: workspace,
  timeoutMs: 300_000,
  sandbox: { workspace, network: { allow: () => ({ allowed: true, reason: 'allowed by test' }) } },
})
process.stdout.write('started\n')
process.stdin.on('data', (chunk) => {
  if (String(chunk).includes('exit')) process.exit(0)
})
