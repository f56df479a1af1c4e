/**
 * A copy of the checkout for tests that build it (`npm pack`, `npm install <folder>` run its prepack or
 * prepare): the build writes the copy's dist/, never the checkout's, which other test files run meanwhile.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, symlink } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

export const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url))

/**
 * The checkout's own files (tracked, and new ones git does not ignore) copied into `into`, with its installed
 * packages linked for the build's tools. Returns `into`.
 */
export async function copyOfCheckout(into: string): Promise<string> {
  const { stdout } = await promisify(execFile)(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    { cwd: CHECKOUT, maxBuffer: 64 * 1024 * 1024 },
  )
  for (const file of new Set(stdout.split('\0').filter(Boolean))) {
    // A tracked file deleted in the working tree is not part of what is built.
    if (!existsSync(join(CHECKOUT, file))) continue
    await mkdir(dirname(join(into, file)), { recursive: true })
    await copyFile(join(CHECKOUT, file), join(into, file))
  }
  await symlink(join(CHECKOUT, 'node_modules'), join(into, 'node_modules'))
  return into
}
