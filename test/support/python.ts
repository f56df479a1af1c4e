/**
 * A Python with the packages of a requirements file (the official Temporal SDK for the tests that embed
 * tether from Python, LangGraph for bench/peers): a venv built with `python3 -m venv` and pip, cached per
 * user (`$XDG_CACHE_HOME/tether/<folder>`, default `~/.cache/tether/python`) under a key of the requirements
 * and the Python version, so every clone and CI's fresh one reuse it. Built in a private folder and renamed
 * into place, so two runs building at once never see half a venv.
 */
import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The venv's python for `requirements` (a path), built on first use. */
export async function pythonVenv(requirements: string, folder = 'python'): Promise<string> {
  const python = process.env.TETHER_TEST_PYTHON || 'python3'
  let version: string
  try {
    version = (await run(python, ['--version'])).stdout.trim()
  } catch (error) {
    throw new Error(
      `a Python venv needs ${python} with the venv module (${(error as Error).message.split('\n')[0]}); ` +
        'install python3 and python3-venv, or point TETHER_TEST_PYTHON at one',
    )
  }
  const key = createHash('sha256')
    .update(`${version}\n${await readFile(requirements, 'utf8')}`)
    .digest('hex')
    .slice(0, 16)
  const root = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tether', folder)
  const venv = join(root, `venv-${key}`)
  const bin = join(venv, 'bin', 'python')
  if (existsSync(join(venv, 'ready'))) return bin

  await mkdir(root, { recursive: true })
  const work = await mkdtemp(join(root, '.building-'))
  try {
    await run(python, ['-m', 'venv', work])
    // Only `bin/python` is used afterwards: it finds the venv from its own location, so the rename is safe.
    await run(
      join(work, 'bin', 'python'),
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '-r', requirements],
      { maxBuffer: 16 * 1024 * 1024 },
    )
    await writeFile(join(work, 'ready'), `${version}\n`)
    await rename(work, venv).catch(async (error: NodeJS.ErrnoException) => {
      // Another run finished first: use its venv.
      if (!existsSync(join(venv, 'ready'))) throw error
      await rm(work, { recursive: true, force: true })
    })
  } catch (error) {
    await rm(work, { recursive: true, force: true })
    throw new Error(
      `could not build the Python venv for ${requirements}: ${(error as Error).message.split('\n')[0]}`,
    )
  }
  return bin
}
