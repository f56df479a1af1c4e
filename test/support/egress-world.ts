/**
 * The egress proxy in a world of its own, for test/unit/exec/egress.test.ts: run inside a network and mount
 * namespace that test made, where /etc/hosts names `service.test` (10.20.30.40, with no route to it) and
 * `far.test` (10.50.0.2), and a `local` route sends 10.20.31.0/24 back to this machine although no interface
 * lists those addresses. A second network namespace, linked to this one by TUN devices (tun-link.py), is
 * the far side: 10.50.0.2 answers there, on raw TCP (8080) and HTTP (8081).
 * Runs sandboxed commands under real policies and prints, as JSON, what each saw and what the proxy decided.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
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

const started: ChildProcess[] = []
/** Starts `argv` and waits for its first line on stdout. */
async function start(argv: string[]): Promise<ChildProcess> {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
  started.push(child)
  await once(child.stdout!, 'data')
  return child
}
const FAR_SIDE = `
const parent = process.ppid
setInterval(() => { if (process.ppid !== parent) process.exit() }, 1000)
const net = require('node:net')
const http = require('node:http')
net.createServer((s) => s.on('error', () => {}).end('hello from the far side\\n')).listen(8080, '10.50.0.2', () =>
  http.createServer((req, res) => res.end('plain http from the far side: ' + req.url + '\\n')).listen(8081, '10.50.0.2', () => console.log('listening')))`

// The far side: its own namespace (held by a process that prints its pid), linked to this one.
const holder = await start(['unshare', '--net', 'sh', '-c', 'echo $$; exec sleep 300'])
const far = `/proc/${holder.pid}/ns/net`
const link = fileURLToPath(new URL('./tun-link.py', import.meta.url))
await start([process.env.TETHER_TEST_PYTHON || 'python3', link, 'tun-here', far, 'tun-far'])
execFileSync('sh', ['-c', 'ip addr add 10.50.0.1 peer 10.50.0.2 dev tun-here && ip link set tun-here up'])
execFileSync('nsenter', [
  `--net=${far}`,
  'sh',
  '-c',
  'ip link set lo up && ip addr add 10.50.0.2 peer 10.50.0.1 dev tun-far && ip link set tun-far up',
])
await start(['nsenter', `--net=${far}`, process.execPath, '-e', FAR_SIDE])

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
  namedPrivate: await attempt(
    everyHost().allowNet('10.50.0.2:8080').allowNet('10.50.0.2:8081'),
    [],
    [
      '10.50.0.2:8080',
      '[::ffff:a32:2]:8080',
      'far.test:8080',
      'http://10.50.0.2:8081/path?q=1',
      '10.50.0.2:8082',
    ],
  ),
  globOnly: await attempt(everyHost().allowNet('10.*'), [], ['10.50.0.2:8080']),
}
server.close()
for (const child of started) child.kill('SIGKILL')
process.stdout.write(JSON.stringify(seen))
