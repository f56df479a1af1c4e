/**
 * Commands start from a small launcher process. Nothing that reaches its streams from elsewhere may pass for
 * a command's output, and its death must end the command it started rather than leave the run waiting.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runCommand } from '../../../src/exec/index.js'
import { isLauncher, type LiveProcess, liveProcesses } from '../../support/processes.js'

/** This process's launchers, each with its socket's address (its last argument). */
function launchers(): (LiveProcess & { address: string })[] {
  return liveProcesses()
    .filter((p) => p.ppid === process.pid && isLauncher(p))
    .map((p) => ({ ...p, address: p.argv.at(-1) as string }))
}

/** The process started for `argv` by one of this process's launchers. */
function launchedAs(argv: string[]): LiveProcess | undefined {
  const ours = new Set(launchers().map((l) => l.pid))
  return liveProcesses().find((p) => ours.has(p.ppid) && p.argv.join(' ') === argv.join(' '))
}

describe('the command launcher', () => {
  const cwd = tmpdir()

  it('cuts a connection that does not carry a command’s token, and its bytes never reach the output', async () => {
    const argv = ['sh', '-c', 'sleep 1; echo real']
    const running = runCommand({ argv, cwd })
    await expect.poll(() => launchedAs(argv), { timeout: 10_000 }).toBeDefined()
    const strangers = launchers().map(({ address }) => {
      const stranger = connect(address)
      stranger.on('error', () => {})
      // Shaped like a real stream's opening (a 16-byte token, then the stream's number), with a made-up token.
      stranger.write(Buffer.concat([randomBytes(16), Buffer.of(0), Buffer.from('forged\n')]))
      return once(stranger, 'close')
    })
    expect(strangers.length).toBeGreaterThan(0)
    await Promise.all(strangers)
    const result = await running
    expect(result).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(result.stdout.text).toBe('real\n')
  })

  it('ends a command whose launcher died, killing it, and starts a new launcher for the next', async () => {
    const argv = ['sh', '-c', 'echo started; exec sleep 30']
    let printed = 0
    const running = runCommand({ argv, cwd, timeoutMs: 60_000, onProgress: ({ bytes }) => (printed = bytes) })
    // Output has arrived: the command is running and its streams are with this process.
    await expect.poll(() => printed, { timeout: 10_000 }).toBeGreaterThan(0)
    const command = liveProcesses().find(
      (p) => p.argv.join(' ') === 'sleep 30' && launchers().some((l) => l.pid === p.ppid),
    )
    expect(command).toBeDefined()
    const { pid, ppid } = command as LiveProcess
    const address = launchers().find((l) => l.pid === ppid)?.address as string
    process.kill(ppid, 'SIGKILL')
    const result = await running
    expect(result).toMatchObject({ status: 'signalled', signal: 'SIGKILL' })
    expect(liveProcesses().some((p) => p.pid === pid)).toBe(false)
    // The dead launcher's socket folder is removed by this side.
    expect(existsSync(dirname(address))).toBe(false)

    const next = await runCommand({ argv: ['echo', 'again'], cwd })
    expect(next).toMatchObject({ status: 'exited', exitCode: 0 })
    expect(next.stdout.text).toBe('again\n')
    expect(launchers().map((l) => l.pid)).not.toContain(ppid)
  })

  it('passes a command no descriptor but its three streams, whatever the worker inherited', async () => {
    const runner = fileURLToPath(new URL('../../support/fd-runner.ts', import.meta.url))
    // The runner gets descriptor 99 as a supervisor might leave it: open, without close-on-exec.
    const child = spawn(
      'bash',
      ['-c', 'exec "$0" --import tsx "$1" 99</dev/null', process.execPath, runner],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let stdout = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk
    })
    const [code] = await once(child, 'exit')
    expect(code).toBe(0)
    expect(JSON.parse(stdout)).toEqual({ runnerHas99: true, bare: [0, 1, 2], sandboxed: [0, 1, 2] })
  })
})
