/** A runner process for the orphan-guard test: starts a long command, then waits to be killed. */
import { runCommand } from '../../src/exec/index.js'

const [pidFile] = process.argv.slice(2)
void runCommand({
  argv: ['sh', '-c', `echo $$ > '${pidFile}'; sleep 120 & wait`],
  cwd: process.cwd(),
  timeoutMs: 300_000,
})
process.stdout.write('started\n')
setInterval(() => {}, 1_000)
