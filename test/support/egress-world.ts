/**
 * The egress proxy in a world of its own, for test/unit/exec/egress.test.ts: run inside a network and mount
 * namespace that test made, where /etc/hosts names `service.test` (10.20.30.40, with no route to it) and a
 * `local` route sends 10.20.31.0/24 back to this machine although no interface lists those addresses.
 * Runs sandboxed commands under real policies and prints, as JSON, what each saw and what the proxy decided.
 */
import { createServer } from 'node:net'
import { CommandSandbox } from '../../src/activities/sandbox.js'
import type { NetworkDecision } from '../../src/exec/index.js'
import { Policy } from '../../src/policy/index.js'
import { tryDestinations } from './egress.js'

const [workspace] = process.argv.slice(2) as [string]
const everyHost = () => Policy.strict().layer('operator').allowNet('*')

async function attempt(policy: Policy, blocked: string[], targets: string[]) {
  const { env, sandbox } = new CommandSandbox({ env: process.env, blocked }).setup(policy, { workspace })
  const { answers, result } = await tryDestinations(targets, { cwd: workspace, env, sandbox })
  if (result.status !== 'exited') throw new Error(`the command ${result.status}: ${result.stderr.text}`)
  return {
    answers: Object.fromEntries(answers),
    decisions: result.sandbox?.network ?? ([] as NetworkDecision[]),
  }
}

// A listener on every address of this namespace: what a `local` route leads back to.
const server = createServer((socket) => socket.on('error', () => {}).end('hello from the host\n'))
await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve))
const port = (server.address() as { port: number }).port
const internal = () => everyHost().allowNet('10.20.30.0/24')

const seen = {
  blockedByName: await attempt(
    internal(),
    ['service.test:7233'],
    ['10.20.30.40:7233', '[::ffff:a14:1e28]:7233', '10.20.30.40:7234'],
  ),
  blockedByAddress: await attempt(internal(), ['10.20.30.40:7233'], ['service.test:7233']),
  deniedAddress: await attempt(internal().denyNet('10.20.30.40'), [], ['service.test:80']),
  unnamedRange: await attempt(everyHost(), [], ['service.test:80']),
  localRoute: await attempt(everyHost().allowNet(`10.20.31.7:${port}`), [], [`10.20.31.7:${port}`]),
}
server.close()
process.stdout.write(JSON.stringify(seen))
