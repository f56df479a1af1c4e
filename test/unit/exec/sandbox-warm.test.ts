/**
 * Sandboxes built ahead (src/exec/sandbox/ahead.ts): when a command ends, the next sandbox of its workspace
 * is built and waits, and the next command with the same sandbox starts in it. Every test runs real
 * commands and checks that each one still has a sandbox of its own, and that nothing waits when it should not.
 */
import { execFileSync, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  closeWarmSandboxes,
  type ExecResult,
  type NetworkAccess,
  type RunCommandOptions,
  runCommand,
  type SandboxOptions,
} from '../../../src/exec/index.js'
import { tryDestinations } from '../../support/egress.js'
import {
  type LiveProcess,
  liveProcesses,
  sandboxesWaitingFor as waitingFor,
} from '../../support/processes.js'

const isRoot = process.getuid?.() === 0
const sh = (script: string) => ['/bin/sh', '-c', script]
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' }

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-warm-'))
})
const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  await closeWarmSandboxes()
  for (const cleanup of cleanups.splice(0)) await cleanup()
})
afterAll(() => rm(dir, { recursive: true, force: true }))

async function workspace(): Promise<string> {
  return mkdtemp(join(dir, 'ws-'))
}

function sandboxed(
  argv: string[],
  cwd: string,
  extra: Omit<Partial<RunCommandOptions>, 'sandbox'> & { sandbox?: Partial<SandboxOptions> } = {},
): Promise<ExecResult> {
  const { sandbox, ...rest } = extra
  return runCommand({ argv, cwd, env, timeoutMs: 60_000, ...rest, sandbox: { workspace: cwd, ...sandbox } })
}

/** The shells of the sandboxes waiting for `workspace` that have said they are ready (written their first byte). */
function readyShells(workspace: string): LiveProcess[] {
  const sandboxes = new Set(waitingFor(workspace).map((p) => p.pid))
  return liveProcesses().filter((p) => {
    if (!sandboxes.has(p.ppid) || p.argv[0] !== '/bin/sh') return false
    try {
      return Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${p.pid}/io`, 'utf8'))?.[1]) > 0
    } catch {
      return false
    }
  })
}

/** Waits until a sandbox waits for `workspace`'s next command. */
async function aSandboxWaits(workspace: string): Promise<void> {
  await expect.poll(() => waitingFor(workspace).length, { timeout: 30_000 }).toBeGreaterThan(0)
}

/** This process's egress proxy folders (in its private socket folder in /tmp). */
function proxyFolders(): string[] {
  return readdirSync('/tmp')
    .filter((name) => name.startsWith(`tether-${process.pid}-`))
    .flatMap((name) => {
      try {
        return readdirSync(join('/tmp', name)).filter((entry) => entry.startsWith('egress-'))
      } catch {
        return []
      }
    })
}

describe('the commands of a workspace', () => {
  it('start in a sandbox built when the one before ended, each with its own /tmp and PID namespace', async () => {
    const ws = await workspace()
    const first = await sandboxed(sh('echo first > /tmp/left-behind; echo $$'), ws)
    expect(first).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(first.sandbox?.warm).toBeUndefined()
    await aSandboxWaits(ws)

    const second = await sandboxed(sh('cat /tmp/left-behind; ps -eo pid= | wc -l; echo $$; pwd'), ws)
    expect(second).toMatchObject({ status: 'exited', exitCode: 0, sandbox: { warm: true } })
    const [processes, pid, cwd] = second.stdout.text.trim().split('\n')
    expect(second.stderr.text).toMatch(/left-behind: No such file or directory/)
    // bwrap's init, the shell, ps and wc; the same pid as the first's shell: a namespace of its own.
    expect(Number(processes)).toBeLessThan(6)
    expect(pid).toBe(first.stdout.text.trim())
    expect(cwd).toBe(ws)

    await aSandboxWaits(ws)
    const third = await sandboxed(['true'], ws)
    expect(third).toMatchObject({ status: 'exited', exitCode: 0, sandbox: { warm: true } })
  })

  it('get exactly the environment and arguments of a sandbox built for them, which no waiting process shows', async () => {
    const ws = await workspace()
    await mkdir(join(ws, 'sub dir'))
    const special = {
      ...env,
      QUOTED: 'it\'s "quoted" $HOME `x` \\ done',
      MULTI: 'line one\nline two\n',
      NL: 'a name the trampoline uses',
      OLDPWD: '/somewhere/else',
      EMPTY: '',
    }
    const argv = [
      process.execPath,
      '-e',
      'console.log(JSON.stringify([process.argv.slice(1), process.env, process.cwd()]))',
    ]
    const args = ['--', '-n', "a'b", 'c\nd', '$HOME', '', ' spaced ']
    const run = (warm: boolean) =>
      sandboxed([...argv, ...args], join(ws, 'sub dir'), { env: special, sandbox: { workspace: ws, warm } })
    const cold = await run(false)
    expect(waitingFor(ws)).toEqual([])
    await run(true)
    await aSandboxWaits(ws)
    // The environment waits in the trampoline's memory: no waiting process has it in its own.
    const waiting = waitingFor(ws)
    const trampolines = liveProcesses().filter((p) => waiting.some((w) => w.pid === p.ppid))
    for (const p of [...waiting, ...trampolines]) {
      expect(readFileSync(`/proc/${p.pid}/environ`, 'utf8')).not.toContain('QUOTED')
      expect(p.argv.join(' ')).not.toContain('line two')
    }
    const warm = await run(true)
    expect(warm.sandbox?.warm).toBe(true)
    expect(cold.sandbox?.warm).toBeUndefined()
    expect(JSON.parse(warm.stdout.text)).toEqual(JSON.parse(cold.stdout.text))
    expect(JSON.parse(cold.stdout.text)[0]).toEqual(args.slice(1))
  })

  it('cannot see or signal what the one before left running: its whole tree ended with it', async () => {
    const ws = await workspace()
    const marker = `tether-leftover-${randomBytes(4).toString('hex')}`
    // A daemon in a session of its own (the shell's argv carries the marker) and a plain background job.
    const first = await sandboxed(
      sh(
        `(setsid sh -c 'sleep 1000; :' ${marker} </dev/null >/dev/null 2>&1 &); (sleep 1000 &); echo started`,
      ),
      ws,
    )
    expect(first).toMatchObject({ status: 'exited', exitCode: 0 })
    const leftovers = () => liveProcesses().filter((p) => p.argv.includes(marker))
    expect(leftovers()).toEqual([])
    await aSandboxWaits(ws)
    const second = await sandboxed(sh('ps -eo args; pkill -x sleep; echo "pkill $?"'), ws)
    expect(second.sandbox?.warm).toBe(true)
    expect(second.stdout.text).not.toContain(marker)
    expect(second.stdout.text).not.toMatch(/sleep 1000/)
    // pkill found nothing to signal (status 1).
    expect(second.stdout.text).toMatch(/pkill 1\n$/)
    expect(leftovers()).toEqual([])
  })

  it('under a policy with network and one without: a command without gets no proxy, one with judges by its own policy', async () => {
    const ws = await workspace()
    const allowing: NetworkAccess = { allow: () => ({ allowed: true, reason: 'allowed by the first' }) }
    const denying: NetworkAccess = { allow: () => ({ allowed: false, reason: 'denied by the third' }) }
    // Loopback: the first's policy allows it and the boundary refuses it; the third's policy refuses it first.
    const target = '127.0.0.1:9'
    const first = await tryDestinations([target], {
      cwd: ws,
      env,
      sandbox: { workspace: ws, network: allowing },
    })
    expect(first.result.sandbox?.network?.[0]).toMatchObject({
      host: '127.0.0.1',
      reason: expect.stringMatching(/loopback/),
    })
    await aSandboxWaits(ws)

    const second = await sandboxed(
      [
        process.execPath,
        '-e',
        "const s = require('node:net').connect(3128, '127.0.0.1'); s.on('connect', () => console.log('CONNECTED')); s.on('error', (e) => console.log(process.env.HTTPS_PROXY ?? 'no proxy', e.code))",
      ],
      ws,
    )
    expect(second.sandbox?.warm).toBeUndefined()
    expect(second.sandbox?.network).toBeUndefined()
    expect(second.stdout.text).toBe('no proxy ECONNREFUSED\n')

    const third = await tryDestinations([target], {
      cwd: ws,
      env,
      sandbox: { workspace: ws, network: denying },
    })
    expect(third.result.sandbox?.warm).toBe(true)
    expect(third.answers.get(target)).toBe('403')
    expect(third.result.sandbox?.network).toEqual([
      { host: '127.0.0.1', port: 9, allowed: false, reason: 'denied by the third' },
    ])
  })
})

describe('a sandbox built ahead is not taken', () => {
  it('when a folder to hide appeared since it was built', async () => {
    const ws = await workspace()
    const secrets = join(ws, 'later')
    await sandboxed(['true'], ws, { sandbox: { hide: [secrets] } })
    await aSandboxWaits(ws)
    await mkdir(secrets)
    await writeFile(join(secrets, 'key'), 'secret\n')
    const result = await sandboxed(['ls', '-A', secrets], ws, { sandbox: { hide: [secrets] } })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.sandbox?.warm).toBeUndefined()
    expect(result.stdout.text).toBe('')
  })

  /**
   * Builds a sandbox ahead that hides a folder where the read-only root shows it (not under /tmp, which every
   * sandbox replaces), lets `change` act once it is ready, and expects the next command not to take it.
   */
  async function notTakenAfter(change: (hidden: string, shell: LiveProcess) => Promise<void>): Promise<void> {
    const ws = await workspace()
    const hidden = await mkdtemp('/var/tmp/tether-warm-state-')
    cleanups.push(() => rm(hidden, { recursive: true, force: true }))
    await sandboxed(['true'], ws, { sandbox: { hide: [hidden] } })
    await expect.poll(() => readyShells(ws).length, { timeout: 30_000 }).toBeGreaterThan(0)
    await change(hidden, readyShells(ws)[0]!)
    const result = await sandboxed(['ls', '-A', hidden], ws, { sandbox: { hide: [hidden] } })
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.sandbox?.warm).toBeUndefined()
    expect(result.stdout.text).toBe('')
  }

  it('when a hidden folder was replaced since it was built (its mount went with the old one)', () =>
    notTakenAfter(async (hidden) => {
      await rm(hidden, { recursive: true })
      await mkdir(hidden)
      await writeFile(join(hidden, 'key'), 'secret\n')
    }))

  // What a folder removed on the host does to a mount on it in every namespace, made here by hand: a
  // folder made again may get the old inode number, so its path looks the same.
  it.runIf(isRoot)('when one of its mounts is gone since it was built, whatever the files look like', () =>
    notTakenAfter(async (hidden, shell) => {
      await writeFile(join(hidden, 'key'), 'secret\n')
      execFileSync('nsenter', ['-t', String(shell.pid), '-m', 'umount', hidden])
    }),
  )

  it('when a nested repository appeared since it was built: its configuration is read-only all the same', async () => {
    const ws = await workspace()
    await sandboxed(['git', 'init', '-q', '.'], ws)
    await aSandboxWaits(ws)
    await mkdir(join(ws, 'nested'))
    expect((await runCommand({ argv: ['git', 'init', '-q', 'nested'], cwd: ws })).exitCode).toBe(0)
    const result = await sandboxed(sh('echo "[core]" >> nested/.git/config && echo written'), ws)
    expect(result.sandbox?.warm).toBeUndefined()
    expect(result.stdout.text).toBe('')
    expect(result.stderr.text).toMatch(/Read-only file system|Device or resource busy|Permission denied/)
  })

  it('when its limits or its environment differ', async () => {
    const ws = await workspace()
    await sandboxed(['true'], ws)
    await aSandboxWaits(ws)
    const limited = await sandboxed(['true'], ws, { sandbox: { limits: { processes: 64 } } })
    expect(limited.sandbox?.warm).toBeUndefined()
    const other = await sandboxed(sh('echo $ONLY_HERE'), ws, {
      env: { ...env, ONLY_HERE: 'second' },
      sandbox: { limits: { processes: 64 } },
    })
    expect(other.sandbox?.warm).toBeUndefined()
    expect(other.stdout.text).toBe('second\n')
  })

  it('for a workspace it would make a mount point in, which therefore can be removed right after a command', async () => {
    // A planted commondir is hidden by an empty file bound over it; bwrap makes that file if it is gone.
    for (let round = 0; round < 3; round++) {
      const ws = await workspace()
      await sandboxed(['git', 'init', '-q', '.'], ws, { sandbox: { warm: false } })
      await writeFile(join(ws, '.git', 'commondir'), '../elsewhere\n')
      const result = await sandboxed(['true'], ws)
      expect(result.sandbox?.warm).toBeUndefined()
      await rm(ws, { recursive: true })
      // Long enough for a sandbox being built to have made its mount points.
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(existsSync(ws)).toBe(false)
      expect(waitingFor(ws)).toEqual([])
    }
  })

  it('with warm: false, and nothing is built ahead', async () => {
    const ws = await workspace()
    await sandboxed(['true'], ws, { sandbox: { warm: false } })
    const second = await sandboxed(['true'], ws, { sandbox: { warm: false } })
    expect(second.sandbox?.warm).toBeUndefined()
    expect(waitingFor(ws)).toEqual([])
  })
})

describe('when a sandbox built ahead fails', () => {
  it('is replaced when it was killed while it waited: the next command runs, in a sandbox built for it', async () => {
    const ws = await workspace()
    await sandboxed(['true'], ws)
    await aSandboxWaits(ws)
    for (const { pgid } of waitingFor(ws)) process.kill(-pgid, 'SIGKILL')
    const next = await sandboxed(sh('echo ran'), ws)
    expect(next).toMatchObject({ status: 'exited', exitCode: 0, sandbox: { limits: {} } })
    expect(next.stdout.text).toBe('ran\n')
    expect(next.sandbox?.warm).toBeUndefined()
    await aSandboxWaits(ws)
    expect((await sandboxed(['true'], ws)).sandbox?.warm).toBe(true)
  })

  it('is built once more when its build failed, and the next command takes that one', async () => {
    const ws = await workspace()
    // A bwrap on the commands' PATH that refuses the first sandbox built ahead, then is the real one (outside
    // /tmp, which a sandbox replaces: bwrap is first tried inside one).
    const bin = await mkdtemp('/var/tmp/tether-warm-bin-')
    cleanups.push(() => rm(bin, { recursive: true, force: true }))
    const refused = join(bin, 'refused')
    const bwrap = execFileSync('sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).trim()
    await writeFile(
      join(bin, 'bwrap'),
      `#!/bin/sh\ncase "$*" in *tether_env*) [ -e ${refused} ] || { : > ${refused}; sleep 0.3; exit 1; } ;; esac\nexec ${bwrap} "$@"\n`,
      { mode: 0o755 },
    )
    const path = { ...env, PATH: `${bin}:${env.PATH}` }
    await sandboxed(['true'], ws, { env: path })
    // Not aSandboxWaits: the refusing wrapper's own shell names the workspace and the trampoline too.
    await expect.poll(() => readyShells(ws).length, { timeout: 30_000 }).toBeGreaterThan(0)
    expect(existsSync(refused)).toBe(true)
    const next = await sandboxed(sh('echo ran'), ws, { env: path })
    expect(next).toMatchObject({ status: 'exited', exitCode: 0, sandbox: { warm: true } })
    expect(next.stdout.text).toBe('ran\n')
  })

  it('times the command out when the sandbox never answers, and kills it', async () => {
    const ws = await workspace()
    await sandboxed(['true'], ws)
    await aSandboxWaits(ws)
    await expect.poll(() => readyShells(ws).length, { timeout: 30_000 }).toBeGreaterThan(0)
    // bwrap, and the shell in a session of its own.
    const stopped = [...waitingFor(ws), ...readyShells(ws)]
    for (const { pgid } of stopped) process.kill(-pgid, 'SIGSTOP')
    const result = await sandboxed(sh('echo ran'), ws, { timeoutMs: 1_000, killGraceMs: 100 })
    expect(result.status).toBe('timed-out')
    expect(result.stdout.text).toBe('')
    const pids = new Set(stopped.map((p) => p.pid))
    await expect.poll(() => liveProcesses().filter((p) => pids.has(p.pid)), { timeout: 10_000 }).toEqual([])
    expect(await sandboxed(['true'], ws)).toMatchObject({ status: 'exited', exitCode: 0 })
  })

  it.runIf(isRoot)(
    'starts the command in a sandbox built for it when the waiting one ends without starting it',
    async () => {
      // A folder of another user's that only bwrap's CAP_DAC_READ_SEARCH enters: the waiting sandbox's shell,
      // already the workspace's identity, cannot go there.
      const ws = await workspace()
      await sandboxed(['true'], ws)
      await aSandboxWaits(ws)
      const theirs = join(ws, 'theirs')
      await mkdir(theirs)
      await chown(theirs, 12345, 12345)
      await chmod(theirs, 0o700)
      const result = await sandboxed(sh('echo "in $PWD"'), theirs, { sandbox: { workspace: ws } })
      expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
      expect(result.stdout.text).toBe(`in ${theirs}\n`)
      expect(result.sandbox?.warm).toBeUndefined()
    },
  )
})

describe('taking them down', () => {
  it('at the end of a run: no process and no proxy folder left, and other workspaces keep theirs', async () => {
    const [ws, other] = [await workspace(), await workspace()]
    const network: NetworkAccess = { allow: () => ({ allowed: false, reason: 'denied by test' }) }
    await sandboxed(['true'], ws, { sandbox: { network } })
    await sandboxed(['true'], other)
    await aSandboxWaits(ws)
    await aSandboxWaits(other)
    expect(proxyFolders().length).toBeGreaterThan(0)
    const processes = waitingFor(ws)

    await closeWarmSandboxes(ws)
    expect(waitingFor(ws)).toEqual([])
    expect(liveProcesses().filter((p) => processes.some((q) => q.pid === p.pid))).toEqual([])
    expect(proxyFolders()).toEqual([])
    expect(waitingFor(other).length).toBeGreaterThan(0)
    await closeWarmSandboxes()
    expect(waitingFor(other)).toEqual([])
  })

  const worker = fileURLToPath(new URL('../../support/warm-worker.ts', import.meta.url))
  for (const ending of ['its own end', 'SIGKILL'] as const) {
    it(`when the worker goes (${ending}): a command waiting for its sandbox keeps it alive, a waiting sandbox does not, and nothing is left`, async () => {
      const ws = await workspace()
      const child = spawn(process.execPath, ['--import', 'tsx', worker, ws], {
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      const exited = once(child, 'exit')
      // Its first line; all it said, should it end before one.
      const said = new Promise<string>((resolve) => {
        let text = ''
        child.stdout.on('data', (chunk: Buffer) => {
          text += chunk
          if (text.endsWith('\n')) resolve(text)
        })
        child.once('exit', () => resolve(text))
      })
      expect(await said).toBe('ran exited exited\n')
      await aSandboxWaits(ws)
      // Told to end, it only stops listening: what is left to keep it alive is the waiting sandbox's.
      if (ending === 'SIGKILL') child.kill('SIGKILL')
      else child.stdin.end('end\n')
      const [code, signal] = await exited
      expect(ending === 'SIGKILL' ? signal : code).toBe(ending === 'SIGKILL' ? 'SIGKILL' : 0)
      await expect.poll(() => waitingFor(ws), { timeout: 10_000 }).toEqual([])
    }, 90_000)
  }

  it('when a script closes them right after its last command: the build under way is waited for, and the script ends', async () => {
    const ws = await workspace()
    const child = spawn(process.execPath, ['--import', 'tsx', worker, ws, 'close'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let said = ''
    child.stdout.on('data', (chunk: Buffer) => {
      said += chunk
    })
    const [code] = await once(child, 'exit')
    // Node ends a script whose last await can never settle with 13.
    expect({ code, said }).toEqual({ code: 0, said: 'ran exited exited\nclosed\n' })
    expect(waitingFor(ws)).toEqual([])
  }, 90_000)
})
