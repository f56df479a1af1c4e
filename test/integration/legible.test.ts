/**
 * A run is legible in Temporal's own tools: its summary is the goal, its details say where it works and how
 * it ended, each activity says what it did (`exec: touch made.txt`, `model turn 1`), and runs are found by
 * outcome and workspace with `temporal workflow list --query`. Checked with the Temporal CLI and with the
 * Web UI in a real browser (its screenshot is kept in test-artefacts/).
 */
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Client, Connection } from '@temporalio/client'
import { NativeConnection, Worker } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { createActivities, unknownNamespace } from '../../src/activities/index.js'
import { startAgentRun } from '../../src/embed/client.js'
import { ReconcilePlugin } from '../../src/embed/reconcile.js'
import { Policy } from '../../src/policy/index.js'
import { type DevServer, ensureTemporalCli, startDevServer } from '../../src/stack/index.js'
import { npmWorkspace, openTestAudit, writeScript } from '../support/agent.js'
import { launchChromium } from '../support/browser.js'
import { uniqueTaskQueue } from '../support/temporal.js'

const run = promisify(execFile)
const ARTEFACTS = fileURLToPath(new URL('../../test-artefacts/', import.meta.url))

let dir: string
let server: DevServer
let cli: string

// A server of this file's own, with its Web UI on, so the browser can look at the run.
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-legible-'))
  cli = (await ensureTemporalCli()).path
  server = await startDevServer({ cliPath: cli, dbFilename: join(dir, 'temporal.db'), ui: true })
}, 180_000)

afterAll(async () => {
  await server?.stop()
  if (dir) await rm(dir, { recursive: true, force: true })
})

async function temporal(...args: string[]): Promise<unknown> {
  const { stdout } = await run(cli, [...args, '--address', server.address, '--output', 'json'], {
    maxBuffer: 64 * 1024 * 1024,
  })
  return JSON.parse(stdout)
}

describe('a run in Temporal’s own tools', () => {
  it('has the goal as summary, its state as details, summarised activities, and is found by outcome', async () => {
    const audit = await openTestAudit()
    const native = await NativeConnection.connect({ address: server.address })
    const connection = await Connection.connect({ address: server.address })
    const client = new Client({ connection })
    const ws = await npmWorkspace()
    const taskQueue = uniqueTaskQueue('legible')
    const namespace = unknownNamespace()
    const worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: createActivities({ audit, namespace }),
      plugins: [new ReconcilePlugin(audit, namespace)],
    })
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [{ toolCalls: [{ name: 'exec', args: { argv: ['touch', 'made.txt'] } }] }, { text: 'done' }],
      } as never)}`
      const handle = await startAgentRun(client, {
        contract: { goal: 'Make a file called made.txt', workspace: ws.path, model, verification: null },
        policy: Policy.tiered().layer('project').allowExec('touch*'),
        taskQueue,
      })
      await worker.runUntil(handle.result())

      const described = (await temporal('workflow', 'describe', '--workflow-id', handle.workflowId)) as {
        executionConfig?: { userMetadata?: { summary?: unknown; details?: unknown } }
        workflowExtendedInfo?: unknown
      }
      const text = JSON.stringify(described)
      expect(text).toContain('Make a file called made.txt')
      expect(text).toContain(ws.path)
      expect(text).toContain('TetherOutcome')

      const events = JSON.stringify(await temporal('workflow', 'show', '--workflow-id', handle.workflowId))
      for (const summary of ['model turn 1', 'exec: touch made.txt', 'record the outcome: finished']) {
        expect(events).toContain(Buffer.from(JSON.stringify(summary)).toString('base64'))
      }

      const found = (await temporal(
        'workflow',
        'list',
        '--query',
        `TetherOutcome = "finished" AND TetherWorkspace = "${ws.path}"`,
      )) as Array<{ execution?: { workflowId?: string } }>
      expect(found.map((row) => row.execution?.workflowId)).toEqual([handle.workflowId])

      // The Web UI shows the same to a person: the summary, and what each activity did.
      const browser = await launchChromium()
      try {
        const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
        await page.goto(`${server.uiUrl}/namespaces/default/workflows/${handle.workflowId}`)
        await page.getByText('Make a file called made.txt').first().waitFor({ timeout: 60_000 })
        await mkdir(ARTEFACTS, { recursive: true })
        await page.screenshot({ path: join(ARTEFACTS, 'temporal-ui-run.png'), fullPage: true })
      } finally {
        await browser.close()
      }
    } finally {
      await native.close()
      await connection.close()
      await audit.close()
      await ws.cleanup()
    }
  })
})
