/**
 * The egress proxy judges addresses, not spellings. Real sandboxed commands under a real policy (`net allow
 * *`, built into sandbox options the way the activities build them) try the host's loopback in every
 * spelling and the worker's own addresses, with a real listener on loopback playing tether's services;
 * every other range is judged without sending traffic anywhere. A last part runs the proxy in network and
 * mount namespaces the test makes, where a name can lead to a blocked service, an address no interface
 * lists leads back to the machine itself, and a private address on the far side of a link answers.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { networkInterfaces, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { CommandSandbox } from '../../../src/activities/sandbox.js'
import type { NetworkDecision } from '../../../src/exec/index.js'
import { EgressJudge } from '../../../src/exec/sandbox/index.js'
import { Policy } from '../../../src/policy/index.js'
import { tryDestinations } from '../../support/egress.js'

let dir: string
const cleanups: Array<() => Promise<unknown>> = []
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-egress-test-'))
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

async function listen(host: string): Promise<number> {
  const server: Server = createServer((socket) => socket.on('error', () => {}).end('hello from the host\n'))
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  cleanups.push(() => new Promise((resolve) => server.close(resolve)))
  return (server.address() as { port: number }).port
}

/** Sandbox options for `policy`, built by the activities' own CommandSandbox. */
function setup(policy: Policy, blocked: string[] = []) {
  const made = new CommandSandbox({ env: process.env, blocked }).setup(policy, { workspace: dir })
  expect(made.sandbox?.network).toBeDefined()
  return { cwd: dir, env: made.env, sandbox: made.sandbox! }
}

const everyHost = () => Policy.strict().layer('operator').allowNet('*')

function decisionFor(decisions: NetworkDecision[] | undefined, target: string): NetworkDecision | undefined {
  const colon = target.lastIndexOf(':')
  const host = target.slice(0, colon).replace(/^\[(.*)\]$/, '$1')
  const port = Number(target.slice(colon + 1))
  return decisions?.find((decision) => decision.host === host && decision.port === port)
}

describe('a command whose policy allows every host', () => {
  it('reaches the host’s loopback in no spelling and the worker’s own addresses in none, and each refusal names the range', async () => {
    const v4 = await listen('127.0.0.1')
    const v6 = await listen('::1')
    const own = Object.values(networkInterfaces())
      .flat()
      .filter((entry) => entry && !entry.internal && !entry.address.startsWith('fe80'))
      .map((entry) => (entry!.family === 'IPv6' ? `[${entry!.address}]` : entry!.address))
    expect(own.length, 'this machine needs a non-loopback address').toBeGreaterThan(0)

    const expected: Array<[string, RegExp]> = [
      [`127.0.0.1:${v4}`, /^127\.0\.0\.1 is loopback \(127\.0\.0\.0\/8\): the worker itself/],
      [`[::ffff:7f00:1]:${v4}`, /^::ffff:7f00:1 is 127\.0\.0\.1, loopback \(127\.0\.0\.0\/8\)/],
      [`[::FFFF:127.0.0.1]:${v4}`, /is 127\.0\.0\.1, loopback \(127\.0\.0\.0\/8\)/],
      [`[0:0:0:0:0:ffff:7f00:1]:${v4}`, /is 127\.0\.0\.1, loopback \(127\.0\.0\.0\/8\)/],
      [`[::127.0.0.1]:${v4}`, /is 127\.0\.0\.1, loopback \(127\.0\.0\.0\/8\)/],
      [`127.9.9.9:${v4}`, /loopback \(127\.0\.0\.0\/8\)/],
      [`0.0.0.0:${v4}`, /unspecified \(0\.0\.0\.0\/8\)/],
      [`localhost:${v4}`, /^localhost resolves to 127\.0\.0\.1, loopback \(127\.0\.0\.0\/8\)/],
      [`127.1:${v4}`, /"127\.1" is an ambiguous IPv4 address/],
      [`2130706433:${v4}`, /"2130706433" is an ambiguous IPv4 address/],
      [`[::1]:${v6}`, /loopback \(::1\/128\)/],
      [`[0::1]:${v6}`, /^0::1 is ::1, loopback \(::1\/128\)/],
      [`[0::]:${v6}`, /^0:: is ::, unspecified \(::\/128\)/],
      ...own.map((address): [string, RegExp] => [`${address}:${v4}`, /an address of this worker \(\w+\)/]),
    ]
    const urls = [`http://[::ffff:7f00:1]:${v4}/`, `http://2130706433:${v4}/`]
    const { answers, result } = await tryDestinations(
      [...expected.map(([t]) => t), ...urls],
      setup(everyHost()),
    )
    for (const [target, reason] of expected) {
      expect(answers.get(target), target).toBe('403')
      const decision = decisionFor(result.sandbox?.network, target)
      expect(decision, target).toMatchObject({ allowed: false })
      expect(decision?.reason, target).toMatch(reason)
    }
    // Plain HTTP through the same proxy: the URL's host is judged the same way.
    for (const url of urls) expect(answers.get(url), url).toBe('403')
    expect(result.stdout.text).not.toContain('hello from the host')
  })
})

describe('the proxy’s judgement of addresses it must not send traffic to', () => {
  const judge = (policy: Policy, blocked: string[] = []) =>
    new EgressJudge(setup(policy, blocked).sandbox.network!)

  it('refuses every internal range under `allow *`, naming it', async () => {
    const cases: Array<[string, RegExp]> = [
      ['10.1.2.3', /private \(10\.0\.0\.0\/8\)/],
      ['172.16.0.1', /private \(172\.16\.0\.0\/12\)/],
      ['192.168.1.1', /private \(192\.168\.0\.0\/16\)/],
      ['169.254.169.254', /link-local \(169\.254\.0\.0\/16\)/],
      ['[::ffff:a9fe:a9fe]', /^::ffff:a9fe:a9fe is 169\.254\.169\.254, link-local \(169\.254\.0\.0\/16\)/],
      ['[fe80::1]', /link-local \(fe80::\/10\)/],
      ['[fd00:ec2::254]', /unique local \(ULA\) \(fc00::\/7\)/],
      ['100.100.100.200', /shared address space \(CGNAT\) \(100\.64\.0\.0\/10\)/],
      ['[64:ff9b::a9fe:a9fe]', /NAT64 \(64:ff9b::\/96\)/],
      ['[64:ff9b:1::a9fe:a9fe]', /NAT64 \(local use\) \(64:ff9b:1::\/48\)/],
      ['224.0.0.251', /multicast \(224\.0\.0\.0\/4\)/],
      ['[ff02::1]', /multicast \(ff00::\/8\)/],
      ['240.0.0.1', /reserved \(240\.0\.0\.0\/4\)/],
      ['255.255.255.255', /broadcast/],
    ]
    const proxy = judge(everyHost())
    for (const [host, reason] of cases) {
      const judged = await proxy.judge(host, 443)
      expect(judged.allowed, host).toBe(false)
      expect(judged.reason, host).toMatch(reason)
      expect(judged.reason, host).toMatch(/a net allow rule names the address or a range holding it/)
    }
  })

  it('lets a private address through where an allow rule names it or a range holding it — never a glob', async () => {
    const exact = judge(everyHost().allowNet('10.1.2.3:443'))
    expect(await exact.judge('10.1.2.3', 443)).toEqual({
      allowed: true,
      address: '10.1.2.3',
      reason: expect.stringMatching(/is allowed by rule/),
    })
    // The same address in another spelling is the same address, and goes to the address that was judged.
    expect(await exact.judge('[::ffff:a01:203]', 443)).toMatchObject({ allowed: true, address: '10.1.2.3' })
    expect((await exact.judge('10.1.2.3', 80)).allowed).toBe(false)
    expect((await exact.judge('10.1.2.4', 443)).allowed).toBe(false)

    const range = judge(everyHost().allowNet('fd00::/8'))
    expect(await range.judge('[fd00:ec2::254]', 443)).toMatchObject({
      allowed: true,
      address: 'fd00:ec2::254',
    })

    const glob = judge(everyHost().allowNet('10.*').allowNet('169.254.169.254:*'))
    expect((await glob.judge('10.1.2.3', 443)).allowed).toBe(false)
    expect((await glob.judge('169.254.169.254', 80)).allowed).toBe(false)
  })

  it('never lets the worker itself through, whatever a rule names', async () => {
    const proxy = judge(everyHost().allowNet('127.0.0.0/8').allowNet('::/0').allowNet('0.0.0.0/0'))
    for (const host of ['127.0.0.1', '[::ffff:7f00:1]', '[::1]', '0.0.0.0', '[64:ff9b::7f00:1]']) {
      const judged = await proxy.judge(host, 5432)
      expect(judged.allowed, host).toBe(false)
      expect(judged.reason, host).toMatch(/the worker itself/)
    }
  })

  it('judges the IPv4 address behind a NAT64 one too', async () => {
    const proxy = judge(everyHost().allowNet('64:ff9b::/96'))
    expect(await proxy.judge('[64:ff9b::808:808]', 443)).toMatchObject({ allowed: true })
    const inner = await proxy.judge('[64:ff9b::a9fe:a9fe]', 443)
    expect(inner.allowed).toBe(false)
    expect(inner.reason).toMatch(/NAT64 for 169\.254\.169\.254, link-local \(169\.254\.0\.0\/16\)/)
    const denied = judge(everyHost().allowNet('64:ff9b::/96').allowNet('10.0.0.0/8').denyNet('10.0.0.9'))
    expect((await denied.judge('[64:ff9b::a00:9]', 443)).reason).toMatch(/which the policy refuses/)
  })

  it('compares tether’s own services as addresses: every spelling of one meets it, on its port only', async () => {
    const proxy = judge(everyHost().allowNet('10.0.0.0/8'), ['10.9.8.7:7233', '[fd00::7]:5432'])
    for (const host of ['10.9.8.7', '[::ffff:10.9.8.7]', '[::ffff:a09:807]']) {
      const judged = await proxy.judge(host, 7233)
      expect(judged.allowed, host).toBe(false)
      expect(judged.reason, host).toMatch(/tether's own service \(10\.9\.8\.7:7233\)/)
    }
    expect((await proxy.judge('10.9.8.7', 7234)).allowed).toBe(true)
    const v6 = judge(everyHost().allowNet('fd00::/8'), ['[fd00::7]:5432'])
    expect((await v6.judge('[fd00:0::7]', 5432)).reason).toMatch(/tether's own service/)
  })

  it('refuses names that are not names', async () => {
    const proxy = judge(everyHost())
    expect((await proxy.judge('[fe80::1%eth0]', 80)).reason).toMatch(/is not a host name or an IP address/)
    expect((await proxy.judge('a b', 80)).allowed).toBe(false)
    expect((await proxy.judge('0x7f.1', 80)).reason).toMatch(/ambiguous IPv4 address/)
    expect((await proxy.judge('example.com', 0)).allowed).toBe(false)
  })
})

describe('in a network of its own', () => {
  it('reaches a private address a rule names, and meets a blocked service by name and by address, a deny of the address a name leads to, and a route back to the machine', async () => {
    const world = await mkdtemp(join(tmpdir(), 'tether-egress-world-'))
    cleanups.push(() => rm(world, { recursive: true, force: true }))
    const hosts = join(world, 'hosts')
    await writeFile(hosts, '127.0.0.1 localhost\n10.20.30.40 service.test\n10.50.0.2 far.test\n')
    const script = fileURLToPath(new URL('../../support/egress-world.ts', import.meta.url))
    // Root or not, `unshare` makes a network namespace holding only loopback, and a mount namespace in which
    // /etc/hosts is the file above; 10.20.31.0/24 is routed to this (namespaced) machine by a `local` route.
    const child = spawn(
      'unshare',
      [
        '--net',
        '--mount',
        '--map-root-user',
        'sh',
        '-c',
        'ip link set lo up && ip route add local 10.20.31.0/24 dev lo && mount --bind "$1" /etc/hosts && exec "$2" --import tsx "$3" "$4"',
        'egress-world',
        hosts,
        process.execPath,
        script,
        world,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
    const [code] = await once(child, 'exit')
    expect(code, stderr).toBe(0)
    const seen = JSON.parse(stdout) as Record<
      string,
      { answers: Record<string, string>; decisions: NetworkDecision[] }
    >

    const byName = seen.blockedByName!
    expect(byName.answers['10.20.30.40:7233']).toBe('403')
    expect(byName.answers['[::ffff:a14:1e28]:7233']).toBe('403')
    expect(decisionFor(byName.decisions, '10.20.30.40:7233')?.reason).toMatch(
      /tether's own service \(service\.test:7233\)/,
    )
    expect(decisionFor(byName.decisions, '[::ffff:a14:1e28]:7233')?.reason).toMatch(/tether's own service/)
    // Another port of that host is no service of tether's: allowed, and then there is no route to it.
    expect(decisionFor(byName.decisions, '10.20.30.40:7234')).toMatchObject({
      allowed: true,
      address: '10.20.30.40',
    })

    const byAddress = seen.blockedByAddress!
    expect(byAddress.answers['service.test:7233']).toBe('403')
    expect(decisionFor(byAddress.decisions, 'service.test:7233')?.reason).toMatch(
      /^service\.test resolves to 10\.20\.30\.40, tether's own service \(10\.20\.30\.40:7233\)/,
    )

    const denied = seen.deniedAddress!
    expect(denied.answers['service.test:80']).toBe('403')
    expect(decisionFor(denied.decisions, 'service.test:80')?.reason).toMatch(
      /resolves to 10\.20\.30\.40, which the policy refuses: .*denied by rule "10\.20\.30\.40"/,
    )

    const unnamed = seen.unnamedRange!
    expect(decisionFor(unnamed.decisions, 'service.test:80')?.reason).toMatch(
      /^service\.test resolves to 10\.20\.30\.40, private \(10\.0\.0\.0\/8\)/,
    )

    // Traffic to a private address goes through where a rule names it (and only to the port it names), by
    // CONNECT and by plain HTTP, whatever spelling or name leads there; a glob does not open it.
    const named = seen.namedPrivate!
    expect(named.answers).toEqual({
      '10.50.0.2:8080': 'hello from the far side',
      '[::ffff:a32:2]:8080': 'hello from the far side',
      'far.test:8080': 'hello from the far side',
      'http://10.50.0.2:8081/path?q=1': 'plain http from the far side: /path?q=1',
      '10.50.0.2:8082': '403',
    })
    expect(decisionFor(named.decisions, 'far.test:8080')).toMatchObject({
      allowed: true,
      address: '10.50.0.2',
    })
    expect(seen.globOnly!.answers['10.50.0.2:8080']).toBe('403')
    expect(decisionFor(seen.globOnly!.decisions, '10.50.0.2:8080')?.reason).toMatch(
      /private \(10\.0\.0\.0\/8\)/,
    )

    const back = seen.localRoute!
    const [target] = Object.keys(back.answers)
    expect(back.answers[target!]).toBe('403')
    expect(decisionFor(back.decisions, target!)).toMatchObject({ allowed: false, address: '10.20.31.7' })
    expect(decisionFor(back.decisions, target!)?.reason).toMatch(/leads back to this worker/)
  }, 120_000)
})
