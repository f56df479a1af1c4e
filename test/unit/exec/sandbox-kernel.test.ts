/**
 * The sandbox's kernel-facing bounds, for real: the system-call filter (tried call by call), the
 * unprivileged identity a root worker's commands run as, in-memory folders sized to the memory limit, and
 * the disk bound. Every test runs actual commands and checks what the kernel let them do.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, statSync } from 'node:fs'
import { chmod, chown, cp, link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { execObservation } from '../../../src/activities/tools.js'
import {
  type ExecResult,
  filterArch,
  handBackWorkspace,
  heldByIdentity,
  IDENTITY_COUNT,
  IDENTITY_FIRST,
  type RunCommandOptions,
  runCommand,
  type SandboxOptions,
  SandboxUnavailableError,
  sandboxEnvironment,
  sandboxRuntime,
  seccompFilter,
  toolchainBinds,
} from '../../../src/exec/index.js'
import { writeFile as writeWorkspaceFile } from '../../../src/workspace/index.js'
import { PROBES_DIR, SYSCALL_PROBE } from '../../fixtures/exec/probes.js'
import { removeSandboxedFolder } from '../../support/folders.js'

const MiB = 1024 * 1024
const isRoot = process.getuid?.() === 0
const sh = (script: string) => ['/bin/sh', '-c', script]
const env = sandboxEnvironment(process.env).env
const binds = toolchainBinds(process.env, 'read-write')

let dir: string
const cleanups: Array<() => Promise<unknown>> = []
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-kernel-'))
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})
afterAll(() => removeSandboxedFolder(dir))

/** A fresh folder for one test's workspace; under /var/tmp when other commands must be able to see it. */
async function workspace(base = dir): Promise<string> {
  const made = await mkdtemp(join(base, 'ws-'))
  cleanups.push(() => removeSandboxedFolder(made))
  return made
}

/** Runs `argv` sandboxed in `cwd` (the workspace) with the worker's toolchains, as the `exec` tool does. */
function sandboxed(
  argv: string[],
  cwd: string,
  extra: Omit<Partial<RunCommandOptions>, 'sandbox'> & { sandbox?: Partial<SandboxOptions> } = {},
): Promise<ExecResult> {
  const { sandbox, ...rest } = extra
  return runCommand({
    argv,
    cwd,
    env,
    timeoutMs: 120_000,
    ...rest,
    sandbox: {
      workspace: cwd,
      readOnly: [...binds.readOnly, PROBES_DIR],
      writable: binds.writable,
      hide: binds.hide,
      ...sandbox,
    },
  })
}

describe('the system-call filter', () => {
  const probe = async (group: string) => {
    const result = await sandboxed(['python3', SYSCALL_PROBE, group], await workspace())
    expect(result.stderr.text).toBe('')
    return JSON.parse(result.stdout.text) as Record<string, string>
  }

  it('refuses new namespaces: unshare and clone with a namespace flag, setns; clone3 answers ENOSYS', async () => {
    expect(await probe('namespaces')).toEqual({
      'unshare(NEWUSER)': 'EPERM',
      'unshare(NEWNS)': 'EPERM',
      'unshare(NEWNET)': 'EPERM',
      'clone(NEWUSER)': 'EPERM',
      'clone(NEWNET)': 'EPERM',
      clone3: 'ENOSYS',
      setns: 'EPERM',
      // libc falls back from clone3 to clone, and a plain fork goes on working.
      'clone(plain)': 'ok',
      'unshare(0)': 'ok',
    })
  })

  it('refuses unshare -U, -m and -n as util-linux spells them', async () => {
    const result = await sandboxed(
      sh('for flag in -U -m -n; do unshare $flag true && echo "$flag made a namespace"; done; exit 0'),
      await workspace(),
    )
    expect(result.stdout.text).toBe('')
    expect(result.stderr.text.match(/unshare failed: Operation not permitted/g)).toHaveLength(3)
  })

  it.each([
    ['mounts', 'the mount calls and the new mount API'],
    ['keyrings', 'kernel keyrings'],
    ['kernel-surface', 'eBPF, perf, userfaultfd, io_uring and the kernel log'],
    ['other-processes', "ptrace and reaching into another process's memory or files"],
    ['kernel-code', 'kexec and kernel modules'],
  ])('refuses %s (%s) with EPERM', async (group) => {
    const outcomes = await probe(group)
    expect(Object.keys(outcomes).length).toBeGreaterThan(0)
    for (const [call, outcome] of Object.entries(outcomes)) expect(outcome, call).toBe('EPERM')
  })

  it.runIf(process.arch === 'x64')('kills a process that calls through the x32 ABI', async () => {
    const result = await sandboxed(['python3', SYSCALL_PROBE, 'x32'], await workspace())
    expect(result).toMatchObject({ status: 'signalled', signal: 'SIGSYS' })
  })

  it('leaves the command no descriptor but stdin, stdout and stderr (the filter’s is closed)', async () => {
    const result = await sandboxed(
      sh("ls -l /proc/self/fd | awk 'NR > 1 { print $9, $11 }'"),
      await workspace(),
    )
    const open = result.stdout.text
      .trim()
      .split('\n')
      .map((line) => line.split(' '))
      // ls's own look at the folder it lists
      .filter(([, target]) => !/^\/proc\/\d+\/fd$/.test(target ?? ''))
    expect(open.map(([fd]) => fd)).toEqual(['0', '1', '2'])
  })

  it('still runs ordinary work: node, python, git', async () => {
    const result = await sandboxed(
      sh(
        `node -e 'require("node:fs").writeFileSync("n", "node")' && python3 -c 'open("p", "w").write("python")' && ` +
          'git init -q . && git add n p && git -c user.name=t -c user.email=t@example.com commit -qm probe && git log --format=%s',
      ),
      await workspace(),
    )
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.stdout.text).toBe('probe\n')
  })
})

/** A classic-BPF machine, enough for the filter: loads of seccomp_data words, jumps, returns. */
function runFilter(program: Buffer, data: { arch: number; nr: number; arg0?: number }): number {
  const words = new Map([
    [0, data.nr],
    [4, data.arch],
    [16, data.arg0 ?? 0],
  ])
  let accumulator = 0
  for (let pc = 0; pc * 8 < program.length; ) {
    const at = pc * 8
    const [code, jt, jf, k] = [
      program.readUInt16LE(at),
      program[at + 2]!,
      program[at + 3]!,
      program.readUInt32LE(at + 4),
    ]
    pc += 1
    if (code === 0x20) accumulator = words.get(k) ?? 0
    else if (code === 0x15) pc += accumulator === k ? jt : jf
    else if (code === 0x35) pc += accumulator >= k ? jt : jf
    else if (code === 0x45) pc += (accumulator & k) >>> 0 !== 0 ? jt : jf
    else if (code === 0x06) return k
    else throw new Error(`unexpected instruction ${code}`)
  }
  throw new Error('the program ran off its end')
}

describe('the filter program, for each architecture', () => {
  const ALLOW = 0x7fff0000
  const EPERM = 0x00050001
  const ENOSYS = 0x00050026
  const KILL = 0x80000000
  const AARCH64 = 0xc00000b7
  const X86_64 = 0xc000003e
  const I386 = 0x40000003
  const NEWUSER = 0x10000000

  it('judges arm64 calls by the arm64 table, and kills any other ABI', () => {
    const arm64 = seccompFilter('arm64')
    const call = (nr: number, arg0 = 0) => runFilter(arm64, { arch: AARCH64, nr, arg0 })
    expect(call(97, NEWUSER)).toBe(EPERM) // unshare
    expect(call(97, 0)).toBe(ALLOW)
    expect(call(220, 0x40000000 | 17)).toBe(EPERM) // clone(NEWNET | SIGCHLD)
    expect(call(220, 17)).toBe(ALLOW)
    expect(call(435)).toBe(ENOSYS) // clone3
    for (const nr of [268, 40, 39, 41, 428, 442, 219, 280, 241, 282, 425, 117, 270, 104, 105])
      expect(call(nr)).toBe(EPERM)
    // getpid, read, openat, execve: ordinary work.
    for (const nr of [172, 63, 56, 221]) expect(call(nr)).toBe(ALLOW)
    expect(runFilter(arm64, { arch: X86_64, nr: 39 })).toBe(KILL)
  })

  it('on x86-64 kills x32 and 32-bit calls, whose numbers mean something else', () => {
    const x64 = seccompFilter('x64')
    expect(runFilter(x64, { arch: X86_64, nr: 272, arg0: NEWUSER })).toBe(EPERM)
    expect(runFilter(x64, { arch: X86_64, nr: 39 })).toBe(ALLOW)
    expect(runFilter(x64, { arch: X86_64, nr: 0x40000000 | 39 })).toBe(KILL)
    expect(runFilter(x64, { arch: I386, nr: 20 })).toBe(KILL)
    expect(runFilter(x64, { arch: AARCH64, nr: 172 })).toBe(KILL)
  })

  it('refuses to start the sandbox on an architecture it has no table for, in one line', () => {
    expect(() => filterArch('riscv64')).toThrow(SandboxUnavailableError)
    expect(() => filterArch('riscv64')).toThrow(/knows x86-64 and arm64, and this worker runs on riscv64; /)
  })
})

describe.runIf(isRoot)("a root worker's commands", () => {
  const secretDir = () => mkdtemp(join('/var/tmp', 'tether-secret-'))

  it('run as an unprivileged identity of their own, which owns the workspace', async () => {
    const ws = await workspace()
    const result = await sandboxed(sh('id -u; id -G'), ws)
    const [uid, groups] = result.stdout.text.trim().split('\n')
    expect(Number(uid)).toBeGreaterThanOrEqual(IDENTITY_FIRST)
    expect(Number(uid)).toBeLessThan(IDENTITY_FIRST + IDENTITY_COUNT)
    expect(groups).toBe(uid)
    expect(result.sandbox?.identity).toEqual({ uid: Number(uid), gid: Number(uid) })
    expect(statSync(ws).uid).toBe(Number(uid))
  })

  it("takes over root's files in the workspace, not another user's, nor a hard link to a file elsewhere", async () => {
    const ws = await workspace()
    const outside = join(dir, `outside-${randomBytes(4).toString('hex')}`)
    await writeFile(outside, 'root secret\n', { mode: 0o600 })
    cleanups.push(() => rm(outside, { force: true }))
    await link(outside, join(ws, 'linked'))
    await mkdir(join(ws, 'theirs'))
    await writeFile(join(ws, 'theirs', 'file'), 'theirs\n')
    await chown(join(ws, 'theirs'), 12345, 12345)
    await writeFile(join(ws, 'own'), 'ours\n')
    const result = await sandboxed(sh('cat linked; touch own'), ws)
    const uid = result.sandbox!.identity!.uid
    expect(result.stderr.text).toMatch(/linked: Permission denied/)
    expect(statSync(join(ws, 'own')).uid).toBe(uid)
    expect(statSync(join(ws, 'theirs')).uid).toBe(12345)
    expect(statSync(join(ws, 'theirs', 'file')).uid).toBe(0)
    expect(statSync(outside).uid).toBe(0)
  })

  it('cannot read a root-only file outside the workspace, and can still write the workspace', async () => {
    const secrets = await secretDir()
    cleanups.push(() => rm(secrets, { recursive: true, force: true }))
    await chmod(secrets, 0o755)
    await writeFile(join(secrets, 'key'), 'root secret\n', { mode: 0o600 })
    const ws = await workspace()
    const result = await sandboxed(sh(`cat ${secrets}/key; echo written > mine && cat mine`), ws)
    expect(result.stdout.text).toBe('written\n')
    expect(result.stderr.text).toMatch(/Permission denied/)
    expect(await readFile(join(ws, 'mine'), 'utf8')).toBe('written\n')
  })

  it("cannot read another run's root-only files: each workspace has its own identity", async () => {
    const [first, second] = [await workspace('/var/tmp'), await workspace('/var/tmp')]
    const wrote = await sandboxed(sh('umask 077; echo second run secret > secret'), second)
    expect(wrote).toMatchObject({ status: 'exited', exitCode: 0 })
    const read = await sandboxed(['cat', join(second, 'secret')], first)
    expect(read.stdout.text).toBe('')
    expect(read.stderr.text).toMatch(/Permission denied/)
    expect(read.sandbox?.identity?.uid).not.toBe(wrote.sandbox?.identity?.uid)
  })

  it("is handed back to root at the run's end, so root's git takes it, and taken over again by the next", async () => {
    const ws = await workspace()
    const since = new Date()
    const first = await sandboxed(
      sh(
        'git init -q . && mkdir -p made/deep && echo x > made/deep/file && ln made/deep/file linked && ' +
          'cp /bin/true made/suid && chmod 4755 made/suid',
      ),
      ws,
    )
    expect(first).toMatchObject({ status: 'exited', exitCode: 0 })
    const uid = first.sandbox!.identity!.uid
    const gitStatus = () =>
      execFileSync('git', ['-C', ws, 'status', '--porcelain'], { encoding: 'utf8', stdio: 'pipe' })
    expect(gitStatus).toThrow(/dubious ownership/)

    // A worker told to keep folders between runs keeps it.
    process.env.TETHER_HAND_BACK = '0'
    try {
      expect(await handBackWorkspace(ws, since)).toBeUndefined()
      expect(statSync(ws).uid).toBe(uid)
    } finally {
      delete process.env.TETHER_HAND_BACK
    }
    expect(await handBackWorkspace(ws, since)).toEqual({ uid, kept: [] })
    for (const path of ['.', '.git', '.git/HEAD', 'made', 'made/deep', 'made/suid']) {
      expect(statSync(join(ws, path)), path).toMatchObject({ uid: 0, gid: 0 })
    }
    // A program a command made setuid is root's now, and not setuid: the kernel clears the bit on chown.
    expect(statSync(join(ws, 'made/suid')).mode & 0o7777).toBe(0o755)
    // A hard-linked file may have its other link in the identity's caches: it stays the identity's.
    expect(statSync(join(ws, 'linked')).uid).toBe(uid)
    expect(gitStatus()).toMatch(/\?\? made\//)
    expect(await handBackWorkspace(ws, since)).toBeUndefined()

    const next = await sandboxed(sh('echo y >> made/deep/file && touch made/deep/more'), ws)
    expect(next).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(next.sandbox?.identity?.uid).toBe(uid)
    expect(statSync(join(ws, 'made/deep/more')).uid).toBe(uid)
  })

  it("keeps a repository a command made to run a program the identity's, so root's git refuses it", async () => {
    const ws = await workspace()
    const since = new Date()
    const marker = join(ws, 'ran-as-root')
    const planted = await sandboxed(
      sh(
        `git init -q plain && git init -q sub && git -C sub config core.fsmonitor "touch ${marker}; false" && ` +
          `echo x > sub/file && git init -q --bare bare.git && git --git-dir=bare.git config core.pager "touch ${marker}"`,
      ),
      ws,
    )
    expect(planted).toMatchObject({ status: 'exited', exitCode: 0 })
    const uid = planted.sandbox!.identity!.uid
    const handedBack = await handBackWorkspace(ws, since)
    expect(handedBack?.kept.sort()).toEqual(['bare.git', 'sub/.git'])
    for (const path of ['sub', 'sub/.git', 'sub/.git/config', 'bare.git', 'bare.git/config'])
      expect(statSync(join(ws, path)).uid, path).toBe(uid)
    for (const path of ['.', 'sub/file', 'plain', 'plain/.git/config'])
      expect(statSync(join(ws, path)).uid, path).toBe(0)
    const git = (repo: string) =>
      execFileSync('git', ['-C', join(ws, repo), 'status', '--porcelain'], {
        encoding: 'utf8',
        stdio: 'pipe',
      })
    expect(git('plain')).toBe('')
    expect(() => git('sub')).toThrow(/dubious ownership/)
    expect(() =>
      execFileSync('git', ['-C', join(ws, 'bare.git'), '-p', 'log'], { encoding: 'utf8', stdio: 'pipe' }),
    ).toThrow(/dubious ownership/)
    expect(existsSync(marker)).toBe(false)
    // What `tether show` reads to say why git refuses them.
    expect(heldByIdentity(join(ws, 'sub/.git/config'))).toBe(true)
    expect(heldByIdentity(join(ws, 'plain/.git/config'))).toBe(false)
  })

  it('gives a copy of a workspace (cp -a keeps owners) an identity of its own', async () => {
    const original = await workspace('/var/tmp')
    const first = await sandboxed(['touch', 'file'], original)
    const copy = `${original}-copy`
    cleanups.push(() => rm(copy, { recursive: true, force: true }))
    await cp(original, copy, { recursive: true, preserveTimestamps: true })
    await chown(copy, first.sandbox!.identity!.uid, first.sandbox!.identity!.gid)
    const second = await sandboxed(['touch', 'file'], copy)
    expect(second).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(second.sandbox?.identity?.uid).not.toBe(first.sandbox?.identity?.uid)
    expect(statSync(join(copy, 'file')).uid).toBe(second.sandbox?.identity?.uid)
  })

  it('can change what the worker itself wrote with write_file, in folders it made', async () => {
    const ws = await workspace()
    await sandboxed(['true'], ws)
    const written = await writeWorkspaceFile(ws, { path: 'notes/deep/todo.txt', content: 'first\n' })
    expect(written.ok).toBe(true)
    const result = await sandboxed(
      sh('echo second >> notes/deep/todo.txt && touch notes/deep/more notes/more'),
      ws,
    )
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(await readFile(join(ws, 'notes/deep/todo.txt'), 'utf8')).toBe('first\nsecond\n')
  })

  it("writes toolchain caches it may not write (root's) to caches of its own", async () => {
    const npmCache = binds.writable.find((path) => path.endsWith('.npm'))
    expect(npmCache, 'this test needs an npm cache folder in the home').toBeDefined()
    const name = `tether-probe-${randomBytes(4).toString('hex')}`
    const result = await sandboxed(
      sh(`touch "${npmCache}/${name}" && ls "${npmCache}/${name}"`),
      await workspace(),
    )
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(existsSync(join(npmCache!, name))).toBe(false)
    const uid = result.sandbox!.identity!.uid
    expect(existsSync(join('/var/cache/tether/sandbox', String(uid), npmCache!, name))).toBe(true)
  })

  it('runs git commit and cargo test on a real crate', async () => {
    const crate = await workspace()
    await mkdir(join(crate, 'src'))
    await writeFile(
      join(crate, 'Cargo.toml'),
      '[package]\nname = "adder"\nversion = "0.1.0"\nedition = "2021"\n',
    )
    await writeFile(
      join(crate, 'src', 'lib.rs'),
      'pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 3), 5); }\n}\n',
    )
    const result = await sandboxed(
      sh(
        'git init -q . && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm crate && ' +
          'cargo test --offline 2>&1 && git log --format=%s',
      ),
      crate,
      { timeoutMs: 300_000 },
    )
    expect(result.stdout.text).toMatch(/test tests::adds \.\.\. ok/)
    expect(result.stdout.text).toMatch(/crate\n$/)
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
  }, 300_000)

  it('refuses, in one line, a workspace that belongs to another user and one that holds the home', async () => {
    const theirs = await workspace()
    await chown(theirs, 12345, 12345)
    await expect(sandboxed(['true'], theirs)).rejects.toThrow(SandboxUnavailableError)
    await expect(sandboxed(['true'], theirs)).rejects.toThrow(
      /^the workspace \S+ belongs to uid 12345; [^\n]+$/,
    )
    expect(statSync(theirs).uid).toBe(12345)

    const holding = await workspace()
    const home = join(holding, 'home')
    await mkdir(home)
    await expect(sandboxed(['true'], holding, { sandbox: { workspace: holding, home } })).rejects.toThrow(
      /^the workspace \S+ holds \S+home; [^\n]+$/,
    )
    expect(statSync(home).uid).toBe(0)
  })

  it('needs setpriv, and says so in one line when it is missing', async () => {
    const bin = await mkdtemp(join(dir, 'bin-'))
    await symlink(sandboxRuntime(process.env.PATH).bwrap, join(bin, 'bwrap'))
    expect(() => sandboxRuntime(bin)).toThrow(SandboxUnavailableError)
    expect(() => sandboxRuntime(bin)).toThrow(
      /^a root worker runs commands as an unprivileged identity with setpriv \(util-linux\), which is not on PATH; [^\n]+$/,
    )
  })

  it('refuses to take over a top-level folder', async () => {
    const top = `/tether-test-${randomBytes(4).toString('hex')}`
    await mkdir(top)
    cleanups.push(() => rm(top, { recursive: true, force: true }))
    await expect(sandboxed(['true'], top)).rejects.toThrow(/is a system folder; /)
    expect(statSync(top).uid).toBe(0)
  })
})

describe('memory', () => {
  const noCgroups = () => ({ ...sandboxRuntime(process.env.PATH), cgroups: undefined })
  const limit = 256 * MiB

  it('without a memory cgroup, sizes /tmp, /run, home and /dev/shm to fit the memory limit together', async () => {
    const result = await sandboxed(
      sh('df -B1 --output=size /tmp /run "$HOME" /dev/shm | tail -n +2'),
      await workspace(),
      {
        sandbox: { limits: { memoryBytes: limit }, runtime: noCgroups() },
      },
    )
    const sizes = result.stdout.text.trim().split('\n').map(Number)
    expect(sizes).toHaveLength(4)
    expect(sizes.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(limit)
  })

  it('without a memory cgroup, a write to /tmp past its share fails and the result names the memory limit', async () => {
    const result = await sandboxed(sh('head -c 300M /dev/zero > /tmp/fill'), await workspace(), {
      sandbox: { limits: { memoryBytes: limit }, runtime: noCgroups() },
    })
    expect(result).toMatchObject({ status: 'exited', exitCode: 1 })
    expect(result.stderr.text).toMatch(/No space left on device/)
    expect(result.sandbox?.limitHit).toBe('memory')
    expect(execObservation(['head'], result)).toMatch(
      /\[sandbox\] the command ran into its memory limit \(256 MiB, which \/tmp, \/run, \/dev\/shm and its home count against/,
    )
  })

  it.runIf(sandboxRuntime(process.env.PATH).cgroups?.memory)(
    'with a memory cgroup, counts what /tmp holds against the memory limit',
    async () => {
      const result = await sandboxed(sh('head -c 300M /dev/zero > /tmp/fill'), await workspace(), {
        sandbox: { limits: { memoryBytes: limit } },
      })
      expect(result.status === 'exited' && result.exitCode === 0).toBe(false)
      expect(result.sandbox?.limitHit).toBe('memory')
    },
  )
})

describe.runIf(isRoot)('the disk bound', () => {
  /** A small file system of the test's own, as the workspace: filling it harms nothing else. */
  async function smallDisk(options: string): Promise<string> {
    const ws = await workspace()
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tether-test-disk', ws])
    cleanups.push(async () => execFileSync('umount', ['-l', ws]))
    return ws
  }

  it('stops a command that fills the workspace disk, then runs nothing there until there is room', async () => {
    const ws = await smallDisk('size=16m')
    const filled = await sandboxed(sh('head -c 20M /dev/zero > big'), ws)
    expect(filled.status === 'exited' && filled.exitCode === 0).toBe(false)
    expect(filled.sandbox?.limitHit).toBe('disk')
    expect(filled.sandbox?.disk).toMatch(
      new RegExp(`^the disk under ${ws} has [^\n]+ free, and [^\n]+ stays free`),
    )

    const refused = await sandboxed(['touch', 'nothing'], ws)
    expect(refused).toMatchObject({ status: 'unavailable', sandbox: { limitHit: 'disk' } })
    expect(refused.reason).toMatch(
      /^the disk under \S+ has [^\n]+ free, and [^\n]+ stays free for the rest of the machine/,
    )
    expect(existsSync(join(ws, 'nothing'))).toBe(false)
    expect(execObservation(['touch', 'nothing'], refused)).toMatch(
      /^\[exec unavailable\] nothing ran: the disk under /,
    )

    // The worker's own file tools keep the same reserve.
    const note = await writeWorkspaceFile(ws, { path: 'note.txt', content: 'hello\n' })
    expect(note).toMatchObject({ ok: false })
    expect(note.output).toMatch(/^refused: note\.txt was not written: the disk under /)

    // Elsewhere, and here once there is room again, commands run as before.
    expect(await sandboxed(['true'], await workspace())).toMatchObject({ status: 'exited', exitCode: 0 })
    await rm(join(ws, 'big'))
    expect(await sandboxed(['touch', 'now'], ws)).toMatchObject({ status: 'exited', exitCode: 0 })
  })

  it('keeps inodes in reserve too', async () => {
    const ws = await smallDisk('size=16m,nr_inodes=400')
    const result = await sandboxed(
      sh('i=0; while [ $i -lt 500 ]; do : > f$i || exit 1; i=$((i+1)); done'),
      ws,
    )
    expect(result.status === 'exited' && result.exitCode === 0).toBe(false)
    expect(result.sandbox?.limitHit).toBe('disk')
    expect(result.sandbox?.disk).toMatch(/free inodes/)
  })
})
