/**
 * tether as a platform engineer gets it: the packed tarball, installed into a new TypeScript project outside
 * the checkout that has its own Temporal SDK, and the README's plugin snippet run as written in a real
 * Worker, whose own parent workflow starts `agentRun` as a child.
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { FIX_ADD, npmWorkspace, testPolicy, writeScript } from '../support/agent.js'
import { CHECKOUT, copyOfCheckout } from '../support/checkout.js'
import { uniqueTaskQueue } from '../support/temporal.js'

const run = promisify(execFile)
const SDK = '1.24.0'

/** The README's TypeScript block that shows the plugin, exactly as a reader copies it. */
async function readmeSnippet(): Promise<string> {
  const readme = await readFile(join(CHECKOUT, 'README.md'), 'utf8')
  const block = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].find((m) => m[1]?.includes('tetherPlugin()'))
  if (!block?.[1]) throw new Error('the README has no TypeScript block with tetherPlugin()')
  return block[1]
}

let dir: string
let tarball: string
let files: string[]

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-package-'))
  const source = await copyOfCheckout(join(dir, 'source'))
  // `npm pack` runs the package's prepack (the build), as publishing would: in a copy of the checkout.
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: source,
    maxBuffer: 64 * 1024 * 1024,
  })
  const packed = JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{
    filename: string
    files: Array<{ path: string }>
  }>
  tarball = join(dir, packed[0]?.filename as string)
  files = packed[0]?.files.map((file) => file.path) ?? []
}, 600_000)

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('the published package', () => {
  it('holds the built code, the CLI, the docs and the licence — never tests, benches or sources', () => {
    for (const needed of [
      'package.json',
      'LICENSE',
      'README.md',
      'bin/tether.js',
      'dist/src/embed/index.js',
      'dist/src/embed/index.d.ts',
      'dist/src/workflows/index.js',
      'dist/workflow-bundle.js',
      'dist/worker.js',
      'docs/embedding.md',
    ]) {
      expect(files, needed).toContain(needed)
    }
    expect(
      files.filter((file) => /^(test|bench|src|scripts)\//.test(file) || /\.map$|tsbuildinfo/.test(file)),
    ).toEqual([])
  })

  it('installs next to the project’s own Temporal SDK, and the README’s plugin snippet runs a child agent to verified', async () => {
    const project = join(dir, 'platform')
    await mkdir(project)
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({
        name: 'platform',
        private: true,
        type: 'module',
        dependencies: {
          '@tether-agent/tether': `file:${tarball}`,
          ...Object.fromEntries(
            ['activity', 'client', 'common', 'envconfig', 'plugin', 'worker', 'workflow'].map((name) => [
              `@temporalio/${name}`,
              SDK,
            ]),
          ),
          protobufjs: '^8.8.1',
          tsx: '^4.23.15',
        },
      }),
    )
    await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: project,
      maxBuffer: 64 * 1024 * 1024,
    })
    // One Temporal SDK in the project: tether takes the project's own.
    const { stdout: tree } = await run('npm', ['ls', '@temporalio/workflow', '--all', '--parseable'], {
      cwd: project,
    })
    expect(tree.trim().split('\n')).toHaveLength(1)

    await writeFile(
      join(project, 'workflows.ts'),
      `import { executeChild, workflowInfo } from '@temporalio/workflow'
import type { AgentRunInput, AgentRunResult } from '@tether-agent/tether/workflows'

export async function nightlyFix(input: AgentRunInput): Promise<string> {
  const result = await executeChild<(input: AgentRunInput) => Promise<AgentRunResult>>('agentRun', {
    args: [input],
    workflowId: \`\${workflowInfo().workflowId}-agent\`,
  })
  return \`\${result.runId} \${result.outcome}\`
}
`,
    )
    const snippet = await readmeSnippet()
    const imports = snippet.split('\n').filter((line) => line.startsWith('import '))
    const code = snippet.split('\n').filter((line) => !line.startsWith('import '))
    await writeFile(
      join(project, 'worker.ts'),
      [
        "import { Client, Connection } from '@temporalio/client'",
        "import { NativeConnection, Worker } from '@temporalio/worker'",
        ...imports,
        'const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS })',
        'const taskQueue = process.env.TASK_QUEUE as string',
        "const workflowsPath = new URL('./workflows.ts', import.meta.url).pathname",
        ...code,
        'const client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS }) })',
        'const outcome = await worker.runUntil(',
        "  client.workflow.execute('nightlyFix', { taskQueue, workflowId: process.env.RUN_ID as string, args: [JSON.parse(process.env.INPUT as string)] }),",
        ')',
        "console.log('OUTCOME', outcome)",
        'await connection.close()',
      ].join('\n'),
    )

    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          {
            toolCalls: [FIX_ADD],
          },
          { text: 'fixed' },
        ],
      })}`
      const runId = `package-${Date.now()}`
      const input = {
        contract: { goal: 'fix add', workspace: ws.path, verification: { command: ['npm', 'test'] }, model },
        policy: testPolicy().toSpec(),
      }
      const { stdout } = await run(process.execPath, ['--import', 'tsx', 'worker.ts'], {
        cwd: project,
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          DATABASE_URL: inject('databaseUrl'),
          TASK_QUEUE: uniqueTaskQueue('package'),
          RUN_ID: runId,
          INPUT: JSON.stringify(input),
        },
        maxBuffer: 64 * 1024 * 1024,
      })
      expect(stdout).toContain(`OUTCOME ${runId}-agent verified`)
    } finally {
      await ws.cleanup()
    }
  })
})
