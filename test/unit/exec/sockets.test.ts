/**
 * tether's Unix sockets (the launcher's, each sandboxed command's egress proxy) are where no sandbox sees
 * them, whatever TMPDIR says — CI runners point it outside /tmp, at a folder every sandbox sees read-only —
 * and nothing of them is left once a command or its worker ends.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCommand } from '../../../src/exec/index.js'
import { removeSandboxedFolder } from '../../support/folders.js'
import { isLauncher, listeningSockets, liveProcesses } from '../../support/processes.js'

// Set before this file's first command starts the launcher: this process is a worker whose TMPDIR is not /tmp.
const outside = await mkdtemp('/var/tmp/tether-tmpdir-')
process.env.TMPDIR = outside
let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(outside, 'workspace-'))
})
afterAll(() => removeSandboxedFolder(outside))

const allowAll = { allow: () => ({ allowed: true, reason: 'allowed by test' }) }

describe('with the worker’s TMPDIR outside /tmp', () => {
  it('a command’s sandbox sees neither another command’s live proxy socket nor the launcher’s, and reaches neither', async () => {
    const stop = new AbortController()
    const first = runCommand({
      argv: ['sleep', '60'],
      cwd: dir,
      signal: stop.signal,
      timeoutMs: 120_000,
      sandbox: { workspace: dir, network: allowAll },
    })
    // The launcher's socket and the first command's proxy socket, as the kernel lists this process's.
    await expect
      .poll(() => listeningSockets(process.pid).length, { timeout: 20_000 })
      .toBeGreaterThanOrEqual(2)
    const sockets = listeningSockets(process.pid)

    // The second command has no network of its own: another command's proxy would be its way out.
    const probe = `
      const { connect } = require('node:net')
      const { existsSync, readdirSync } = require('node:fs')
      const paths = JSON.parse(process.argv[1])
      // A root worker's command (an identity of its own) may not even list the worker's private TMPDIR.
      let names = []
      try { names = readdirSync(process.argv[2]) } catch (e) { if (e.code !== 'EACCES') throw e }
      console.log('tmpdir: ' + names.filter((name) => name.startsWith('tether')).join(' '))
      let left = paths.length
      for (const path of paths) {
        const s = connect(path)
        s.on('connect', () => { console.log('CONNECTED ' + path); s.destroy(); if (--left === 0) process.exit() })
        s.on('error', (e) => { console.log(e.code + (existsSync(path) ? ' visible ' : ' ') + path); if (--left === 0) process.exit() })
      }`
    const second = await runCommand({
      argv: [process.execPath, '-e', probe, JSON.stringify(sockets), outside],
      cwd: dir,
      timeoutMs: 60_000,
      sandbox: { workspace: dir },
    })
    stop.abort()
    await first
    expect(second.stderr.text).toBe('')
    const lines = second.stdout.text.trim().split('\n').sort()
    expect(lines).toEqual(['tmpdir: ', ...sockets.map((path) => `ENOENT ${path}`)].sort())
    // And the first command's proxy socket went with it.
    for (const path of sockets.filter((path) => path.includes('egress'))) {
      expect(existsSync(dirname(path)), path).toBe(false)
    }
  }, 120_000)

  it('keeps every socket path short, in folders only its owner may enter', async () => {
    await runCommand({ argv: ['true'], cwd: dir })
    const sockets = listeningSockets(process.pid)
    expect(sockets.length).toBeGreaterThan(0)
    for (const path of sockets) {
      expect(Buffer.byteLength(path)).toBeLessThan(108)
      expect(path.startsWith('/tmp/')).toBe(true)
      expect(statSync(dirname(path)).mode & 0o777, path).toBe(0o700)
      expect(statSync(dirname(dirname(path))).mode & 0o777, path).toBe(0o700)
    }
  })
})

describe('a worker that ends mid-command', () => {
  const worker = fileURLToPath(new URL('../../support/socket-worker.ts', import.meta.url))

  for (const ending of ['SIGKILL', 'exit'] as const) {
    it(`leaves no socket and no socket folder behind (${ending})`, async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', worker, dir], {
        stdio: ['pipe', 'pipe', 'inherit'],
        env: { ...process.env, TMPDIR: outside },
      })
      const exited = new Promise((resolve) => child.once('exit', resolve))
      // Its launcher runs, and its launcher's socket and its command's proxy socket are listening.
      await expect
        .poll(() => liveProcesses().some((p) => p.ppid === child.pid && isLauncher(p)), { timeout: 30_000 })
        .toBe(true)
      await expect
        .poll(() => listeningSockets(child.pid as number).length, { timeout: 30_000 })
        .toBeGreaterThanOrEqual(2)
      const sockets = listeningSockets(child.pid as number)
      if (ending === 'SIGKILL') child.kill('SIGKILL')
      else child.stdin.write('exit\n')
      await exited
      await expect
        .poll(() => sockets.flatMap((path) => [path, dirname(path)]).filter((path) => existsSync(path)), {
          timeout: 10_000,
        })
        .toEqual([])
      expect(readdirSync(outside).filter((name) => name.startsWith('tether'))).toEqual([])
    }, 90_000)
  }
})

describe('a worker killed before its launcher could tidy up', () => {
  // A stand-in worker: makes its socket folder as tether names it, for itself or for `pid`, and serves a
  // socket in it until killed.
  const SERVE = `
    const { mkdtempSync } = require('node:fs')
    const folder = mkdtempSync('/tmp/tether-' + (process.argv[1] || process.pid) + '-')
    const socket = mkdtempSync(folder + '/egress-') + '/proxy.sock'
    require('node:net').createServer().listen(socket, () => console.log(folder))`
  const started: ChildProcess[] = []
  const folders: string[] = []
  afterAll(async () => {
    for (const child of started) child.kill('SIGKILL')
    for (const folder of folders) await rm(folder, { recursive: true, force: true })
  })
  async function serve(pid?: number): Promise<{ child: ChildProcess; folder: string }> {
    const child = spawn(process.execPath, ['-e', SERVE, ...(pid ? [String(pid)] : [])], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    started.push(child)
    const [line] = (await once(child.stdout!, 'data')) as [Buffer]
    folders.push(String(line).trim())
    return { child, folder: String(line).trim() }
  }

  it('has its socket folder removed by the next worker, and no folder whose socket someone serves', async () => {
    const dead = await serve()
    dead.child.kill('SIGKILL')
    await once(dead.child, 'exit')
    expect(existsSync(dead.folder)).toBe(true)
    const living = await serve()
    // Named for a process that is gone here, but served: a worker in another PID namespace, as it were.
    const elsewhere = await serve(dead.child.pid)

    const worker = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('../../support/socket-worker.ts', import.meta.url)), dir],
      { stdio: ['pipe', 'ignore', 'inherit'] },
    )
    started.push(worker)
    await expect.poll(() => existsSync(dead.folder), { timeout: 30_000 }).toBe(false)
    expect(existsSync(living.folder)).toBe(true)
    expect(existsSync(elsewhere.folder)).toBe(true)
    worker.stdin!.write('exit\n')
    await once(worker, 'exit')
  }, 90_000)
})
