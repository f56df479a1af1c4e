/**
 * Providing the Temporal CLI: several first uses at once build it once (a lock in the cache), and what a
 * provider that died left behind — its lock, its half-built folder — is cleared by the next one. A fake `go`
 * on PATH stands in for the real build.
 */
import { spawn } from 'node:child_process'
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ensureTemporalCli } from '../../../src/stack/index.js'

let dir: string
let env: NodeJS.ProcessEnv

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-temporal-cli-'))
  const bin = join(dir, 'bin')
  await mkdir(bin)
  // `go install` that takes a second and writes a `temporal` that answers --version; each build is counted.
  await writeFile(
    join(bin, 'go'),
    `#!/bin/sh
echo build >> "${join(dir, 'builds')}"
sleep 1
printf '#!/bin/sh\\necho "temporal version 1.5.1"\\n' > "$GOBIN/temporal"
chmod +x "$GOBIN/temporal"
`,
  )
  await chmod(join(bin, 'go'), 0o755)
  env = { PATH: `${bin}:/usr/bin:/bin`, XDG_CACHE_HOME: join(dir, 'cache'), HOME: dir }
})

afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('providing the Temporal CLI', () => {
  it('builds once when several first uses come at once, and leaves no work folder or lock', async () => {
    const cache = join(dir, 'cache', 'tether', 'bin')
    const results = await Promise.all([
      ensureTemporalCli({ env }),
      // Another process, as a second clone would be: only a lock in the cache can keep them apart.
      new Promise<string>((resolve, reject) => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            '-e',
            `import('${new URL('../../../src/stack/index.ts', import.meta.url).href}').then(async (s) => console.log((await s.ensureTemporalCli()).path))`,
          ],
          { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] },
        )
        let out = ''
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString()
        })
        child.on('error', reject)
        child.on('close', () => resolve(out.trim()))
      }),
    ])
    expect(results[0].path).toBe(join(cache, 'temporal'))
    expect(results[1]).toBe(join(cache, 'temporal'))
    expect((await readFile(join(dir, 'builds'), 'utf8')).trim().split('\n')).toEqual(['build'])
    expect((await readdir(cache)).sort()).toEqual(['temporal', 'temporal.route'])
  })

  it('takes over the lock of a provider that died, and deletes its half-built folder', async () => {
    const cache = join(dir, 'cache', 'tether', 'bin')
    await mkdir(join(cache, '.go-install-abc123'), { recursive: true })
    await writeFile(join(cache, '.go-install-abc123', 'partial'), 'x')
    // A pid that is not running: the provider that held the lock is gone.
    await writeFile(join(cache, '.bootstrap.lock'), '2147483646\n')
    const found = await ensureTemporalCli({ env })
    expect(found).toEqual({ path: join(cache, 'temporal'), route: 'go-install' })
    expect((await readdir(cache)).sort()).toEqual(['temporal', 'temporal.route'])
  })
})
