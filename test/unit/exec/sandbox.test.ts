/**
 * The command sandbox, for real: bubblewrap, namespaces, cgroups or rlimits, the egress proxy. Every test
 * runs an actual command and checks what the operating system let it do.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, realpathSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  type NetworkAccess,
  type RunCommandOptions,
  runCommand,
  SandboxUnavailableError,
  sandboxEnvironment,
  sandboxRuntime,
  toolchainBinds,
} from '../../../src/exec/index.js'
import { planSandbox, withoutNested } from '../../../src/exec/sandbox/launch.js'
import { PROBE_ID, processesWithProbeId } from '../../fixtures/exec/probes.js'
import { removeSandboxedFolder } from '../../support/folders.js'

let dir: string
const cleanups: Array<() => Promise<unknown>> = []
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-sandbox-'))
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup()
})
afterAll(() => removeSandboxedFolder(dir))

const sh = (script: string) => ['/bin/sh', '-c', script]
function sandboxed(argv: string[], extra: Partial<RunCommandOptions> = {}) {
  const { sandbox, ...rest } = extra
  return runCommand({
    argv,
    cwd: dir,
    timeoutMs: 60_000,
    ...rest,
    sandbox: { workspace: dir, ...sandbox },
  })
}

async function listen(host: string): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.end('hello from the host\n'))
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  cleanups.push(() => new Promise((resolve) => server.close(resolve)))
  return { server, port: (server.address() as { port: number }).port }
}

describe('the filesystem boundary', () => {
  it('lets the command write its workspace and nothing of the host', async () => {
    const outside = join(tmpdir(), `tether-outside-${randomBytes(4).toString('hex')}`)
    const result = await sandboxed(
      sh(`echo inside > "${dir}/written"; echo escape > "${outside}"; echo etc > /etc/tether-probe; echo $?`),
    )
    expect(await readFile(join(dir, 'written'), 'utf8')).toBe('inside\n')
    // /tmp is the sandbox's own: the file landed there, not on the host.
    expect(existsSync(outside)).toBe(false)
    expect(existsSync('/etc/tether-probe')).toBe(false)
    expect(result.stderr.text).toMatch(/Read-only file system/)
  })

  it('shows an empty home: a file planted in the host home cannot be read', async () => {
    const planted = join(homedir(), `.tether-sandbox-probe-${randomBytes(4).toString('hex')}`)
    await writeFile(planted, 'host secret\n')
    cleanups.push(() => rm(planted, { force: true }))
    const result = await sandboxed(['cat', planted])
    expect(result).toMatchObject({ status: 'exited', exitCode: 1 })
    expect(result.stdout.text).not.toContain('host secret')
    expect(result.stderr.text).toMatch(/No such file or directory/)
  })

  it('hides a folder that holds the workspace, all but the workspace', async () => {
    const state = join(dir, 'state')
    const workspace = join(state, 'workspace')
    await mkdir(workspace, { recursive: true })
    await writeFile(join(state, 'temporal.db'), 'history of every run')
    const result = await runCommand({
      argv: sh('ls -A ..; echo mine > file; cat file'),
      cwd: workspace,
      sandbox: { workspace, hide: [state] },
    })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.stdout.text).toBe('workspace\nmine\n')
  })

  it('hides the paths it is told to hide, inside the workspace too', async () => {
    const state = join(dir, '.tether')
    await mkdir(state, { recursive: true })
    await writeFile(join(state, 'credentials.json'), '{"password":"x"}')
    const result = await sandboxed(['ls', '-A', state], { sandbox: { workspace: dir, hide: [state] } })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.stdout.text).toBe('')
  })
})

describe('hidden paths', () => {
  it('are hidden once: a path inside a hidden folder gets no mount of its own, but inside the workspace that folder holds', async () => {
    const state = join(dir, 'hidden-state')
    const workspace = join(state, 'workspace')
    await mkdir(join(state, 'keys'), { recursive: true })
    await mkdir(workspace, { recursive: true })
    await writeFile(join(state, 'keys', 'id'), 'host key')
    await writeFile(join(workspace, '.env'), 'TOKEN=secret')
    cleanups.push(() => rm(state, { recursive: true }))
    const hide = [state, join(state, 'keys'), join(state, 'keys', 'id'), join(workspace, '.env')]
    const plan = await planSandbox({ workspace, hide }, { PATH: process.env.PATH ?? '' })
    expect(plan.hidden.filter((path) => path.startsWith(state))).toEqual([state, join(workspace, '.env')])
    const result = await runCommand({
      argv: sh('ls -A ..; cat .env; cat ../keys/id'),
      cwd: workspace,
      sandbox: { workspace, hide },
    })
    expect(result.stdout.text).toBe('workspace\n')
    expect(result.stderr.text).toMatch(/keys\/id: No such file or directory/)
  })
})

describe('hidden names', () => {
  it('are hidden where they lead: through absolute and relative symlinks and a linked folder', async () => {
    // Outside /tmp and the home, so the sandbox shows it read-only, and readable by any command identity.
    const outside = await mkdtemp('/var/tmp/tether-hidden-')
    cleanups.push(() => rm(outside, { recursive: true }))
    await mkdir(join(outside, 'app'))
    await writeFile(join(outside, 'secret'), 'outside secret\n')
    await writeFile(join(outside, 'app', 'secret'), 'app secret\n')
    await chmod(outside, 0o755)
    await chmod(join(outside, 'app'), 0o755)
    const workspace = join(dir, 'linked-names')
    await mkdir(workspace)
    cleanups.push(() => removeSandboxedFolder(workspace))
    await symlink(join(outside, 'secret'), join(workspace, '.env'))
    await symlink('.env', join(workspace, 'env2'))
    await symlink(join(outside, 'app'), join(workspace, 'config'))
    const run = (hide: string[]) =>
      runCommand({
        argv: sh(`cat env2 .env config/secret ${outside}/app/secret; echo ran`),
        cwd: workspace,
        timeoutMs: 60_000,
        sandbox: { workspace, hide },
      })
    // Nothing hidden: the command reads both (so what follows is the hiding's doing).
    expect((await run([])).stdout.text).toBe('outside secret\noutside secret\napp secret\napp secret\nran\n')
    const hide = [join(workspace, 'env2'), join(workspace, 'config', 'secret')]
    const plan = await planSandbox({ workspace, hide }, { PATH: process.env.PATH ?? '' })
    const real = realpathSync(outside)
    expect(plan.hidden).toEqual(expect.arrayContaining([join(real, 'secret'), join(real, 'app', 'secret')]))
    const result = await run(hide)
    expect(result).toMatchObject({ status: 'exited' })
    expect(result.stdout.text).toBe('ran\n')
    expect(result.stderr.text).not.toMatch(/bwrap/)
  })

  it('keep their folders where they are: a command cannot move a hidden file to a name the next one reads', async () => {
    const workspace = join(dir, 'held-names')
    await mkdir(join(workspace, 'config', 'keys'), { recursive: true })
    cleanups.push(() => removeSandboxedFolder(workspace))
    await writeFile(join(workspace, 'config', 'keys', 'secret'), 'deploy key\n')
    const hide = [join(workspace, 'config', 'keys', 'secret')]
    const run = (script: string) =>
      runCommand({ argv: sh(script), cwd: workspace, timeoutMs: 60_000, sandbox: { workspace, hide } })
    const moved = await run('mv config moved; mv config/keys config/moved; echo $?')
    expect(moved.stderr.text).toMatch(/busy/i)
    const next = await run('cat config/keys/secret moved/keys/secret config/moved/secret; echo ran')
    expect(next.stdout.text).toBe('ran\n')
    // Writes in those folders stay the command's own.
    expect((await run('echo mine > config/keys/note && cat config/keys/note')).stdout.text).toBe('mine\n')
  })

  it('are hidden at their real path and in a bound folder that shows them under another name', async () => {
    // Beside the workspace, not in it: a root worker would not make a home its commands' own.
    const home = await mkdtemp(join(tmpdir(), 'tether-home-'))
    const tool = await mkdtemp('/var/tmp/tether-tool-')
    cleanups.push(
      () => rm(home, { recursive: true }),
      () => rm(tool, { recursive: true }),
    )
    await writeFile(join(tool, 'credentials'), 'tool token\n')
    await chmod(tool, 0o755)
    // ~/.tool leads to a folder the sandbox shows read-only at its own path, and is bound into the empty home.
    await symlink(tool, join(home, '.tool'))
    const options = { workspace: dir, home, readOnly: [join(home, '.tool')] }
    const run = (hide: string[]) =>
      sandboxed(sh(`cat ${home}/.tool/credentials ${tool}/credentials; echo ran`), {
        sandbox: { ...options, hide },
      })
    expect((await run([])).stdout.text).toBe('tool token\ntool token\nran\n')
    const hide = [join(home, '.tool', 'credentials')]
    const plan = await planSandbox({ ...options, hide }, { PATH: process.env.PATH ?? '' })
    expect(plan.hidden).toEqual(
      expect.arrayContaining([join(home, '.tool', 'credentials'), join(realpathSync(tool), 'credentials')]),
    )
    const result = await run(hide)
    expect(result.stdout.text).toBe('ran\n')
    expect(result.stderr.text).not.toMatch(/bwrap/)
  })
})

describe('read-only binds', () => {
  it('binds a folder inside another read-only one once, unless a symlink leads out of it', async () => {
    const tool = join(dir, 'nested-tool')
    const elsewhere = join(dir, 'nested-elsewhere')
    await mkdir(join(tool, 'bin'), { recursive: true })
    await mkdir(elsewhere, { recursive: true })
    await symlink(elsewhere, join(tool, 'linked'))
    cleanups.push(
      () => rm(tool, { recursive: true }),
      () => rm(elsewhere, { recursive: true }),
    )
    const paths = [tool, join(tool, 'bin'), join(tool, 'linked'), join(tool, 'missing'), `${tool}-sibling`]
    expect(withoutNested(paths)).toEqual([
      tool,
      join(tool, 'linked'),
      join(tool, 'missing'),
      `${tool}-sibling`,
    ])
  })

  it('still shows what the inner one named, read-only, in the emptied home', async () => {
    // Outside the workspace, readable by the identity a root worker's commands run as.
    const home = await mkdtemp(join(tmpdir(), 'tether-home-'))
    await chmod(home, 0o755)
    const bin = join(home, '.tool', 'bin')
    await mkdir(bin, { recursive: true })
    await writeFile(join(bin, 'tool.txt'), 'from the toolchain\n')
    cleanups.push(() => rm(home, { recursive: true }))
    const result = await sandboxed(sh(`cat "${bin}/tool.txt"; echo x > "${bin}/new.txt"`), {
      sandbox: { workspace: dir, home, readOnly: [join(home, '.tool'), bin] },
    })
    expect(result.stdout.text).toBe('from the toolchain\n')
    expect(result.stderr.text).toMatch(/Read-only file system/)
    expect(existsSync(join(bin, 'new.txt'))).toBe(false)
  })
})

describe('processes', () => {
  it('sees only its own processes, and none of the worker environment', async () => {
    const result = await sandboxed(
      sh('ps -eo pid,args | wc -l; cat /proc/1/environ | tr "\\0" "\\n" | grep -c TETHER_ || true'),
    )
    const [count, leaked] = result.stdout.text.trim().split('\n').map(Number)
    // bwrap's init, the shell, ps and wc (and the header line): nothing of the host.
    expect(count).toBeLessThan(10)
    expect(leaked).toBe(0)
  })

  it('leaves nothing behind: a daemon that double-forks into its own session is gone when the call returns', async () => {
    const id = randomBytes(6).toString('hex')
    const marker = join(dir, `daemon-${id}`)
    const script = `(setsid sh -c 'sleep 0.3; echo alive >> "$1"; exec sleep 1000' daemon "${marker}" </dev/null >/dev/null 2>&1 &); echo started`
    const result = await sandboxed(sh(script), {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', [PROBE_ID]: id },
    })
    cleanups.push(async () => {
      for (const pid of processesWithProbeId(id)) process.kill(pid, 'SIGKILL')
    })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(processesWithProbeId(id)).toEqual([])
    await new Promise((resolve) => setTimeout(resolve, 600))
    // Had the daemon survived, it would have written its line by now.
    expect(existsSync(marker)).toBe(false)
    expect(processesWithProbeId(id)).toEqual([])
  })

  it('stops a bounded fork bomb at its process limit and says so', async () => {
    const result = await sandboxed(sh('i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); done; wait'), {
      sandbox: { workspace: dir, limits: { processes: 64 } },
      timeoutMs: 20_000,
    })
    expect(result.sandbox?.limitHit).toBe('processes')
    expect(result.status === 'exited' && result.exitCode === 0).toBe(false)
  })

  it('ends a memory hog at its memory limit and says so', async () => {
    const hog = 'const a = []; for (;;) a.push(Buffer.alloc(16 * 1024 * 1024, 1))'
    const result = await sandboxed([process.execPath, '-e', hog], {
      sandbox: { workspace: dir, limits: { memoryBytes: 256 * 1024 * 1024 } },
      timeoutMs: 60_000,
    })
    expect(result.status === 'exited' && result.exitCode === 0).toBe(false)
    expect(result.status).not.toBe('timed-out')
    if (result.sandbox?.limitHit !== 'memory') {
      // Without a memory cgroup the rlimit makes allocation fail instead: the program says so itself.
      expect(result.stderr.text).toMatch(/memory|allocation failed/i)
    }
  })

  it('stops a file that grows past the file-size limit', async () => {
    const result = await sandboxed(sh('head -c 3000000 /dev/zero > big'), {
      sandbox: { workspace: dir, limits: { fileSizeBytes: 1024 * 1024 } },
    })
    expect(result).toMatchObject({ status: 'signalled', signal: 'SIGXFSZ' })
    expect(result.sandbox?.limitHit).toBe('file-size')
  })
})

describe('the environment', () => {
  const planted = {
    DATABASE_URL: 'postgres://tether:pw@127.0.0.1:5432/audit',
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    OPENROUTER_API_KEY: 'sk-or-planted',
    AWS_SECRET_ACCESS_KEY: 'planted',
    GITHUB_TOKEN: 'ghp_planted',
    PGPASSWORD: 'planted',
    DEPLOY_SECRET: 'planted',
  }

  it('passes the allowlist and named variables, never secrets, even when named', async () => {
    const { env, names } = sandboxEnvironment(
      { ...process.env, ...planted, TETHER_EXTRA: 'no', PROJECT_FLAVOUR: 'blue' },
      ['PROJECT_FLAVOUR', 'DATABASE_URL', 'GITHUB_TOKEN'],
    )
    const result = await sandboxed(sh('env; cat /proc/self/environ | tr "\\0" "\\n"'), { env })
    for (const [name, value] of Object.entries(planted)) {
      expect(result.stdout.text, name).not.toContain(value)
      expect(names).not.toContain(name)
    }
    expect(result.stdout.text).toContain('PROJECT_FLAVOUR=blue')
    expect(result.stdout.text).not.toContain('TETHER_EXTRA')
    expect(names).toContain('PATH')
  })
})

describe('the network', () => {
  const connect = (host: string, port: number) =>
    `const s = require('node:net').connect(${port}, ${JSON.stringify(host)}); s.on('data', (d) => { process.stdout.write(d); s.end() }); s.on('error', (e) => { console.log(e.code); process.exitCode = 2 })`

  it('has no way to the host: loopback services (the audit database, Temporal) are unreachable', async () => {
    const { port } = await listen('127.0.0.1')
    const result = await sandboxed([process.execPath, '-e', connect('127.0.0.1', port)])
    expect(result.stdout.text).toBe('ECONNREFUSED\n')
    expect(result.exitCode).toBe(2)
  })

  // What gets through is judged in egress.test.ts: every address spelling, every range, tether's services.
  it('goes out only through the proxy, which refuses what the policy refuses and the host whatever it allows', async () => {
    const network: NetworkAccess = {
      allow: (host) =>
        host === 'example.com'
          ? { allowed: false, reason: 'denied by test' }
          : { allowed: true, reason: 'allowed by test' },
    }
    // A CONNECT through the proxy the sandbox points HTTPS_PROXY at, as npm, pip, go and curl do.
    const tunnel = (target: string) =>
      `const proxy = new URL(process.env.HTTPS_PROXY); const r = require('node:http').request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: ${JSON.stringify(target)} }); r.on('connect', (res, socket, head) => { if (res.statusCode !== 200) { console.log('refused', res.statusCode); socket.destroy(); return } process.stdout.write(head); socket.on('data', (d) => process.stdout.write(d)) }); r.end()`
    const denied = await sandboxed([process.execPath, '-e', tunnel('example.com:443')], {
      sandbox: { workspace: dir, network },
    })
    expect(denied.stdout.text).toBe('refused 403\n')
    expect(denied.sandbox?.network).toEqual([
      { host: 'example.com', port: 443, allowed: false, reason: 'denied by test' },
    ])

    // A name the policy allows but that resolves to loopback is still refused: no way to the audit database.
    const { port: local } = await listen('127.0.0.1')
    const loop = await sandboxed([process.execPath, '-e', tunnel(`localhost:${local}`)], {
      sandbox: { workspace: dir, network },
    })
    expect(loop.stdout.text).toBe('refused 403\n')
    expect(loop.sandbox?.network?.[0]?.reason).toMatch(/loopback/)
  })
})

describe('toolchains still work inside', () => {
  it('runs npm test on a project', async () => {
    const project = join(dir, 'npm-project')
    await mkdir(project, { recursive: true })
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'p', version: '1.0.0', scripts: { test: 'node --test' } }),
    )
    await writeFile(
      join(project, 'add.test.js'),
      "require('node:test')('adds', () => require('node:assert').equal(1 + 1, 2))\n",
    )
    const binds = toolchainBinds(process.env, 'read-write')
    const result = await runCommand({
      argv: ['npm', 'test'],
      cwd: project,
      timeoutMs: 120_000,
      env: sandboxEnvironment(process.env).env,
      sandbox: { workspace: project, ...binds },
    })
    expect(result.stderr.text + result.stdout.text).toMatch(/pass 1/)
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
  }, 120_000)

  it('runs go test ./... on a Go module', async () => {
    const module = join(dir, 'go-module')
    await mkdir(join(module, 'calc'), { recursive: true })
    await writeFile(join(module, 'go.mod'), 'module example.com/calc\n\ngo 1.21\n')
    await writeFile(
      join(module, 'calc', 'calc.go'),
      'package calc\n\nfunc Add(a, b int) int { return a + b }\n',
    )
    await writeFile(
      join(module, 'calc', 'calc_test.go'),
      'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal("wrong")\n\t}\n}\n',
    )
    const binds = toolchainBinds(process.env, 'read-write')
    const result = await runCommand({
      argv: ['go', 'test', './...'],
      cwd: module,
      timeoutMs: 300_000,
      env: sandboxEnvironment(process.env).env,
      sandbox: { workspace: module, ...binds },
    })
    expect(result.stdout.text + result.stderr.text).toMatch(/ok\s+example\.com\/calc\/calc/)
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
  }, 300_000)
})

describe('when the sandbox cannot be built', () => {
  it('says in one line what to install, and runs nothing', async () => {
    expect(() => sandboxRuntime('/nonexistent-tether-path')).toThrow(SandboxUnavailableError)
    expect(() => sandboxRuntime('/nonexistent-tether-path')).toThrow(
      /bwrap, which is not on PATH; install bubblewrap/,
    )
    const marker = join(dir, 'never-run')
    const outcome = runCommand({
      argv: ['touch', marker],
      cwd: dir,
      sandbox: { workspace: dir },
      env: { PATH: '/nonexistent-tether-path' },
    })
    await expect(outcome).rejects.toThrow(SandboxUnavailableError)
    expect(existsSync(marker)).toBe(false)
  })
})
