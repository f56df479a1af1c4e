/**
 * git's part of a command's environment: the configuration every command runs with (GIT_CONFIG_PINS),
 * which holds with the sandbox off too, and git's variables a contract can never pass.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { neverPassed, pinGitConfig, runCommand, sandboxEnvironment } from '../../../src/exec/index.js'
import { parseContract } from '../../../src/run/contract.js'

describe("git's variables", () => {
  it('are never passed, but the commit identity', () => {
    for (const name of [
      'GIT_DIR',
      'GIT_WORK_TREE',
      'GIT_CONFIG_PARAMETERS',
      'GIT_CONFIG_GLOBAL',
      'git_config_count',
    ]) {
      expect(neverPassed(name), name).toBe(true)
    }
    for (const name of ['GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL']) {
      expect(neverPassed(name), name).toBe(false)
    }
    const { env } = sandboxEnvironment({ PATH: '/usr/bin', GIT_DIR: '/elsewhere', GIT_AUTHOR_NAME: 'A' }, [
      'GIT_DIR',
      'GIT_AUTHOR_NAME',
    ])
    expect(env.GIT_DIR).toBeUndefined()
    expect(env.GIT_AUTHOR_NAME).toBe('A')
  })

  it('are refused in a contract, with the reason', () => {
    expect(() => parseContract({ goal: 'g', workspace: '/w', env: ['GIT_CONFIG_GLOBAL'] })).toThrow(
      /never passed/,
    )
  })

  it('carry the pins, and nothing that outranks them', () => {
    const env: Record<string, string> = {
      GIT_CONFIG_PARAMETERS: "'core.fsmonitor'='evil'",
      GIT_CONFIG_COUNT: '9',
      GIT_CONFIG_KEY_8: 'core.fsmonitor',
      GIT_CONFIG_VALUE_8: 'evil',
      GIT_CONFIG_GLOBAL: '/workspace/.gitconfig',
      PATH: '/usr/bin',
    }
    pinGitConfig(env)
    expect(env).toEqual({
      PATH: '/usr/bin',
      GIT_CONFIG_COUNT: '3',
      GIT_CONFIG_KEY_0: 'core.fsmonitor',
      GIT_CONFIG_VALUE_0: 'false',
      GIT_CONFIG_KEY_1: 'safe.bareRepository',
      GIT_CONFIG_VALUE_1: 'explicit',
      GIT_CONFIG_KEY_2: 'repack.updateServerInfo',
      GIT_CONFIG_VALUE_2: 'false',
    })
    expect(sandboxEnvironment({ PATH: '/usr/bin' }).names).toContain('GIT_CONFIG_COUNT')
  })
})

describe('with the sandbox off, the pins alone', () => {
  let ws: string
  beforeEach(async () => {
    ws = await mkdtemp(join(tmpdir(), 'tether-env-git-'))
  })
  afterEach(() => rm(ws, { recursive: true, force: true }))

  const plain = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1' }
  const run = (argv: string[], cwd: string, env: Record<string, string>) =>
    runCommand({ argv, cwd, timeoutMs: 30_000, env: { ...env, GIT_CONFIG_NOSYSTEM: '1' } })

  it('keep a repository’s fsmonitor from running on git status', async () => {
    execFileSync('git', ['init', '-q'], { cwd: ws, env: plain })
    execFileSync('git', ['config', 'core.fsmonitor', `touch ${join(ws, 'pwned')}; false`], {
      cwd: ws,
      env: plain,
    })
    await run(['git', 'status'], ws, plain)
    expect(existsSync(join(ws, 'pwned'))).toBe(true)
    await rm(join(ws, 'pwned'))
    await run(['git', 'status'], ws, sandboxEnvironment(plain).env)
    expect(existsSync(join(ws, 'pwned'))).toBe(false)
  })

  it('keep git from taking a folder of plain files for a repository', async () => {
    const evil = join(ws, 'evil')
    await mkdir(join(evil, 'objects'), { recursive: true })
    await mkdir(join(evil, 'refs'), { recursive: true })
    await writeFile(join(evil, 'HEAD'), 'ref: refs/heads/main\n')
    await writeFile(join(evil, 'config'), '[core]\n\tbare = true\n')
    expect((await run(['git', 'rev-parse', '--git-dir'], evil, plain)).stdout.text).toBe('.\n')
    const pinned = await run(['git', 'rev-parse', '--git-dir'], evil, sandboxEnvironment(plain).env)
    expect(pinned.exitCode).not.toBe(0)
    expect(pinned.stderr.text).toMatch(/cannot use bare repository/)
  })
})
