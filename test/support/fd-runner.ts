/**
 * A runner process for the launcher test: started with a descriptor it inherited without close-on-exec, it
 * runs one command bare and one in the sandbox, each listing its own open descriptors, and prints both
 * (with whether the runner itself holds descriptor 99, so the test knows its premise held).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand } from '../../src/exec/index.js'

const list = ['sh', '-c', 'ls /proc/$$/fd']
// A folder of its own: a root worker takes the workspace over for its commands' identity.
const cwd = mkdtempSync(join(tmpdir(), 'tether-fd-runner-'))
const bare = await runCommand({ argv: list, cwd })
const sandboxed = await runCommand({ argv: list, cwd, sandbox: { workspace: cwd } })
rmSync(cwd, { recursive: true, force: true })
const fds = (text: string) => text.split('\n').filter(Boolean).map(Number)
process.stdout.write(
  JSON.stringify({
    runnerHas99: existsSync('/proc/self/fd/99'),
    bare: fds(bare.stdout.text),
    sandboxed: fds(sandboxed.stdout.text),
  }),
)
