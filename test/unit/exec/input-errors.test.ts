import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ExecInputError, type RunCommandOptions, runCommand } from '../../../src/exec/index.js'

let dir: string
let workspace: string
let marker: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-input-'))
  workspace = join(dir, 'workspace')
  await mkdir(join(workspace, 'src'), { recursive: true })
  await mkdir(join(dir, 'outside'))
  await symlink(join(dir, 'outside'), join(workspace, 'escape'))
  await symlink(join(workspace, 'src'), join(dir, 'link-to-src'))
  await writeFile(join(dir, 'a-file'), '')
  marker = join(dir, 'spawned')
})

afterAll(() => rm(dir, { recursive: true, force: true }))

/** Runs options that must be refused; proves nothing ran (the command would have created the marker). */
async function refusal(
  options: Omit<Partial<RunCommandOptions>, 'argv'> & { argv?: unknown },
): Promise<ExecInputError> {
  const error = await runCommand({ argv: ['touch', marker], cwd: dir, ...options } as RunCommandOptions).then(
    (result) => {
      throw new Error(`expected a refusal, the command ran: ${JSON.stringify(result)}`)
    },
    (error: unknown) => error,
  )
  expect(error).toBeInstanceOf(ExecInputError)
  expect(existsSync(marker)).toBe(false)
  return error as ExecInputError
}

describe('runCommand refuses bad input before spawning anything', () => {
  it('an empty argv', async () => {
    const error = await refusal({ argv: [] })
    expect(error.field).toBe('argv')
    expect(error.message).toMatch(/empty.*program first/)
  })

  it('an argv that is not an array', async () => {
    expect((await refusal({ argv: 'touch x' })).message).toMatch(/^argv: is a string .*array/)
  })

  it('a non-string element, naming its index', async () => {
    const error = await refusal({ argv: ['touch', marker, 42] })
    expect(error.field).toBe('argv[2]')
    expect(error.message).toBe('argv[2]: is a number (42), not a string; pass every argument as a string')
  })

  it('a NUL byte, naming the element and position', async () => {
    const error = await refusal({ argv: ['touch', marker, 'ab\0c'] })
    expect(error.message).toMatch(/^argv\[2\]: contains a NUL byte at index 2/)
  })

  it('an unpaired surrogate, which would reach the program altered', async () => {
    expect((await refusal({ argv: ['touch', marker, 'x\uD800'] })).field).toBe('argv[2]')
  })

  it('an argv larger than the OS accepts', async () => {
    const error = await refusal({ argv: ['touch', marker, 'x'.repeat(3_000_000)] })
    expect(error.field).toBe('argv')
    expect(error.message).toMatch(/E2BIG/)
  })

  it('an empty program name', async () => {
    expect((await refusal({ argv: ['', marker] })).field).toBe('argv[0]')
  })

  it('a relative, missing or non-directory cwd', async () => {
    expect((await refusal({ cwd: 'relative/dir' })).message).toMatch(/relative; pass an absolute directory/)
    expect((await refusal({ cwd: join(dir, 'missing') })).message).toMatch(/does not exist/)
    expect((await refusal({ cwd: join(dir, 'a-file') })).message).toMatch(/is not a directory/)
  })

  it('a cwd outside the workspace, also when a symlink inside it points out', async () => {
    const outside = await refusal({ cwd: dir, workspace })
    expect(outside.message).toMatch(/outside the workspace/)
    const viaLink = await refusal({ cwd: join(workspace, 'escape'), workspace })
    expect(viaLink.message).toContain(`resolves to "${join(dir, 'outside')}"`)
  })

  it('accepts a cwd that reaches the workspace through a symlink', async () => {
    const result = await runCommand({ argv: ['pwd', '-P'], cwd: join(dir, 'link-to-src'), workspace })
    expect(result.stdout.text).toBe(`${join(workspace, 'src')}\n`)
  })

  it('bad numbers and env records', async () => {
    expect((await refusal({ timeoutMs: 0 })).field).toBe('timeoutMs')
    expect((await refusal({ timeoutMs: 2 ** 31 })).field).toBe('timeoutMs')
    expect((await refusal({ outputCeiling: 1.5 })).field).toBe('outputCeiling')
    expect((await refusal({ killGraceMs: -1 })).field).toBe('killGraceMs')
    expect((await refusal({ env: { PATH: 'a\0b' } })).field).toBe('env["PATH"]')
    expect((await refusal({ env: { 'A=B': 'x' } })).message).toMatch(/"="/)
    expect((await refusal({ env: 'everything' as never })).field).toBe('env')
  })
})
