import { existsSync } from 'node:fs'
import { chmod, mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ExecProgress, runCommand } from '../../../src/exec/index.js'
import { removeSandboxedFolder } from '../../support/folders.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-run-'))
})
afterAll(() => removeSandboxedFolder(dir))

const sh = (script: string) => ['/bin/sh', '-c', script]

// The same statuses and process setup hold bare and in the sandbox.
let sandboxed = false
function run(options: Parameters<typeof runCommand>[0]) {
  return runCommand({ ...options, ...(sandboxed ? { sandbox: { workspace: dir } } : {}) })
}

describe.each(['bare', 'sandboxed'])('runCommand statuses (%s)', (mode) => {
  beforeAll(() => {
    sandboxed = mode === 'sandboxed'
  })

  it('exited, with a non-zero code as data and both streams captured', async () => {
    const result = await run({ argv: sh('echo out; echo err >&2; exit 3'), cwd: dir })
    expect(result).toMatchObject({ status: 'exited', exitCode: 3 })
    expect(result.signal).toBeUndefined()
    expect(result.stdout).toMatchObject({ text: 'out\n', bytes: 4, lines: 1, elided: 0 })
    expect(result.stderr).toMatchObject({ text: 'err\n', bytes: 4, lines: 1 })
  })

  it('signalled, naming the signal', async () => {
    const result = await run({ argv: sh('echo before; kill -KILL $$'), cwd: dir })
    expect(result).toMatchObject({ status: 'signalled', signal: 'SIGKILL' })
    expect(result.exitCode).toBeUndefined()
    expect(result.stdout.text).toBe('before\n')
  })

  it('timed-out, keeping the output printed before the kill', async () => {
    const result = await run({ argv: sh('echo before; exec sleep 30'), cwd: dir, timeoutMs: 300 })
    expect(result).toMatchObject({ status: 'timed-out', signal: 'SIGTERM' })
    expect(result.stdout.text).toBe('before\n')
  })

  it('cancelled by an abort, keeping the partial output', async () => {
    const controller = new AbortController()
    const result = await run({
      argv: sh('echo before; exec sleep 30'),
      cwd: dir,
      signal: controller.signal,
      onProgress: () => controller.abort(),
    })
    expect(result.status).toBe('cancelled')
    expect(result.stdout.text).toBe('before\n')
  })

  it('cancelled without spawning when the signal is already aborted', async () => {
    const marker = join(dir, 'never')
    const result = await run({ argv: ['touch', marker], cwd: dir, signal: AbortSignal.abort() })
    expect(result.status).toBe('cancelled')
    expect(existsSync(marker)).toBe(false)
  })

  it('unavailable for a missing program, a missing path and a file that is not executable', async () => {
    const missing = await run({ argv: ['tether-no-such-program', '--version'], cwd: dir })
    expect(missing).toMatchObject({
      status: 'unavailable',
      reason: 'no program named "tether-no-such-program" on PATH',
    })
    const path = await run({ argv: ['./no-such-script'], cwd: dir })
    expect(path.status).toBe('unavailable')
    expect(path.reason).toMatch(/was not found/)
    const script = join(dir, 'not-executable.sh')
    await writeFile(script, 'echo hi\n')
    await chmod(script, 0o644)
    const denied = await run({ argv: [script], cwd: dir })
    expect(denied).toMatchObject({
      status: 'unavailable',
      reason: `"${script}" is not executable (permission denied)`,
    })
  })
})

describe.each(['bare', 'sandboxed'])('runCommand process setup (%s)', (mode) => {
  beforeAll(() => {
    sandboxed = mode === 'sandboxed'
  })

  it('gives the command the null device as stdin', async () => {
    const result = await run({ argv: ['readlink', '/proc/self/fd/0'], cwd: dir })
    expect(result.stdout.text).toBe('/dev/null\n')
    // A reader of stdin sees end of file at once instead of waiting.
    expect((await run({ argv: ['cat'], cwd: dir, timeoutMs: 10_000 })).status).toBe('exited')
  })

  it('runs the command as the leader of its own session and process group', async () => {
    const result = await run({ argv: sh('echo $$; cat /proc/$$/stat'), cwd: dir })
    const [pid, stat = ''] = result.stdout.text.split('\n')
    const [, , pgid, sid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // In the sandbox the session is led by the sandbox's own init (pid 1 of its PID namespace).
    const leaders = sandboxed ? ['1', pid] : [pid]
    expect(leaders).toContain(pgid)
    expect(leaders).toContain(sid)
  })

  it('runs in cwd', async () => {
    expect((await run({ argv: ['pwd', '-P'], cwd: dir })).stdout.text).toBe(`${dir}\n`)
  })

  it('reports progress with growing byte counts', async () => {
    const progress: ExecProgress[] = []
    const result = await run({
      argv: ['seq', '1', '200000'],
      cwd: dir,
      onProgress: (p) => progress.push(p),
    })
    expect(progress.length).toBeGreaterThan(0)
    expect(progress.map((p) => p.bytes)).toEqual([...progress.map((p) => p.bytes)].sort((a, b) => a - b))
    expect(progress.at(-1)?.bytes).toBe(result.stdout.bytes)
  })

  it('rejects with the error a progress callback threw, after stopping the command', async () => {
    const failure = new Error('progress sink broke')
    const started = Date.now()
    const outcome = run({
      argv: sh('echo tick; exec sleep 30'),
      cwd: dir,
      onProgress: () => {
        throw failure
      },
    })
    await expect(outcome).rejects.toBe(failure)
    expect(Date.now() - started, 'the sleep was not killed').toBeLessThan(20_000)
  })
})

describe('runCommand environment', () => {
  const planted = {
    TETHER_PROBE_TOKEN: 'not-for-children',
    GITHUB_TOKEN: 'ghp_planted',
    DATABASE_URL: 'postgres://u:p@h/db',
    AWS_SECRET_ACCESS_KEY: 'planted',
    LD_PRELOAD: '',
    GIT_EXTERNAL_DIFF: 'evil-diff',
    BASH_ENV: '/tmp/evil-rc',
    TETHER_PROBE_PLAIN: 'visible',
  }

  async function childEnv(env: Parameters<typeof runCommand>[0]['env']): Promise<Record<string, string>> {
    const saved = Object.fromEntries(Object.keys(planted).map((name) => [name, process.env[name]]))
    Object.assign(process.env, planted)
    try {
      const result = await runCommand({
        argv: ['/usr/bin/env', '-0'],
        cwd: dir,
        env,
        outputCeiling: 1_000_000,
      })
      const pairs = result.stdout.text.split('\0').filter(Boolean)
      return Object.fromEntries(
        pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
      )
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }
  }

  it('inherits everything by default', async () => {
    const env = await childEnv(undefined)
    expect(env).toMatchObject(planted)
    expect(env.PATH).toBe(process.env.PATH)
  })

  it('scrubbed drops secrets and hijacks and keeps the rest', async () => {
    const env = await childEnv('scrubbed')
    for (const name of Object.keys(planted).filter((name) => name !== 'TETHER_PROBE_PLAIN')) {
      expect(env, name).not.toHaveProperty(name)
    }
    expect(env.TETHER_PROBE_PLAIN).toBe('visible')
    expect(env.PATH).toBe(process.env.PATH)
  })

  it('a record is the whole environment', async () => {
    expect(await childEnv({ ONLY: 'this one' })).toEqual({ ONLY: 'this one' })
  })
})
