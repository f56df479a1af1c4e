/**
 * The `tether` command as installed: `bin/tether.js` running the bundled script from dist/ (one CommonJS file
 * with a V8 code cache per command), not the sources the other CLI tests run. Checks what the bundling could
 * break: the version it reports, a command that reads the audit, the code cache it writes, the MCP
 * server (whose SDK the bundle loads partly as CommonJS) and the inbox's prebuilt browser script.
 */
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readdirSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url))
const BIN = join(CHECKOUT, 'bin/tether.js')
const BUNDLE = join(CHECKOUT, 'dist/src/bundle/bin.cjs')

let home: string
let env: Record<string, string>

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'tether-cli-bundle-'))
  env = {
    ...(process.env as Record<string, string>),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('namespace'),
    DATABASE_URL: inject('databaseUrl'),
    XDG_CACHE_HOME: join(home, 'cache'),
    NO_COLOR: '1',
  }
})
// A command that exited 0 may still be writing its code cache (an MCP server ends when its client does).
afterAll(() => rm(home, { recursive: true, force: true, maxRetries: 10 }))

function installed(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env, cwd: home }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

/** Every file under `folder`, as paths relative to it. */
function filesUnder(folder: string): string[] {
  if (!existsSync(folder)) return []
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(folder.length + 1))
}

describe('the installed tether command (the bundle in dist/)', () => {
  it('is built, reports the package version and writes its code cache outside the checkout', async () => {
    expect(existsSync(BUNDLE), `${BUNDLE} is missing: run \`npm run build\``).toBe(true)
    const { version } = JSON.parse(await readFile(join(CHECKOUT, 'package.json'), 'utf8')) as {
      version: string
    }
    const reported = await installed(['--version'])
    expect(reported).toMatchObject({ code: 0, stderr: '' })
    expect(reported.stdout.trim()).toBe(version)
    // `--version` alone is answered without the bundle; a command that runs it writes the cache.
    expect(filesUnder(join(home, 'cache', 'tether'))).toEqual([])
    const first = await installed(['--help'])
    expect(first).toMatchObject({ code: 0, stderr: '' })
    expect(first.stdout).toContain('Usage: tether')
    expect(filesUnder(join(home, 'cache', 'tether')).length).toBeGreaterThan(0)
    // The second start reads the cache it wrote and says the same.
    expect(await installed(['--help'])).toEqual(first)
  })

  it('judges a command under a policy file, and names the field of one zod refuses (zod is bundled as CommonJS)', async () => {
    const team = join(CHECKOUT, 'examples/policies/team.yaml')
    const judged = await installed([
      'policy',
      'check',
      '--policy',
      team,
      '--',
      'git',
      'push',
      'origin',
      'main',
    ])
    expect(judged).toMatchObject({ code: 0, stderr: '' })
    expect(judged.stdout).toMatch(/^deny: /)
    const broken = join(home, 'broken.yaml')
    await writeFile(
      broken,
      'version: 1\nlayers:\n  - name: x\n    rules:\n      - { act: exec, effect: allow, patern: "ls*" }\n',
    )
    const refused = await installed(['policy', 'check', '--policy', broken, '--', 'ls'])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toBe(`error: ${broken}: layers[0].rules[0]: unknown field "patern"\n`)
  })

  it('lists runs from the audit as JSON', async () => {
    const listed = await installed(['ls', '--json', '--limit', '5'])
    expect(listed.stderr).toBe('')
    expect(listed.code).toBe(0)
    expect(Array.isArray(JSON.parse(listed.stdout))).toBe(true)
  })

  it('serves MCP on stdio: an independent client initialises and lists its tools', async () => {
    const client = new McpClient({ name: 'bundle-check', version: '1' })
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp'], env, cwd: home }),
    )
    try {
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name)).toContain('agent_run')
    } finally {
      await client.close()
    }
  })

  it('serves the inbox with its prebuilt browser script', async () => {
    const inbox = spawn(process.execPath, [BIN, 'inbox', '--port', '0'], { env, cwd: home })
    try {
      let printed = ''
      const login = await new Promise<string>((resolve, reject) => {
        inbox.stdout.on('data', (chunk: Buffer) => {
          printed += chunk.toString()
          const link = /open (http:\/\/127\.0\.0\.1:\d+\/login\?token=\S+)/.exec(printed)?.[1]
          if (link) resolve(link)
        })
        inbox.on('exit', (code) => reject(new Error(`tether inbox exited ${code}: ${printed}`)))
      })
      const signedIn = await fetch(login, { redirect: 'manual' })
      const cookie = signedIn.headers.get('set-cookie')?.split(';')[0] ?? ''
      const script = await fetch(new URL('/assets/app.js', login), { headers: { cookie } })
      expect(script.status).toBe(200)
      expect((await script.text()).length).toBeGreaterThan(1_000)
    } finally {
      if (inbox.exitCode === null && inbox.signalCode === null) {
        const exited = once(inbox, 'exit')
        inbox.kill()
        await exited
      }
    }
  })
})
