/**
 * Faults, for real: the audit database stopped for a minute in the middle of a run, and the Temporal
 * server stopped and restarted while a command runs. Each test brings its own server (a private
 * PostgreSQL, a private Temporal) so the rest of the suite is not disturbed, and the two run side by side.
 */
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, Connection } from '@temporalio/client'
import { NativeConnection, Worker } from '@temporalio/worker'
import { describe, inject, it } from 'vitest'
import { createActivities, waitThroughOutages } from '../../src/activities/index.js'
import { openAudit } from '../../src/audit/index.js'
import { ensureTemporalCli, startDevServer, startEmbeddedPostgres } from '../../src/stack/index.js'
import { decideUpdate, pendingApprovalsQuery } from '../../src/workflows/index.js'
import { npmWorkspace, startAgentWorker, startRun, testPolicy, writeScript } from '../support/agent.js'
import { startGate } from '../support/gate.js'
import { connectClient, pendingActivity } from '../support/temporal.js'

const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })
const quiet = () => {}

async function privateFolder(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  // A root worker runs the embedded PostgreSQL as its own user, which must be able to enter the folder.
  await chmod(dir, 0o755)
  return dir
}

describe.concurrent('a database outage', () => {
  it('pauses a run for a minute without PostgreSQL; it goes on with every record exactly once', async ({
    expect,
  }) => {
    const dir = await privateFolder('tether-outage-')
    const dataDir = join(dir, 'postgres')
    let postgres = await startEmbeddedPostgres({ dataDir })
    const audit = await openAudit({
      databaseUrl: postgres.url,
      migrate: true,
      outages: waitThroughOutages(quiet),
    })
    const agent = await startAgentWorker(audit)
    const connected = await connectClient()
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          { toolCalls: [exec('touch', 'one.txt')] },
          { toolCalls: [exec('npm', 'test')] },
          { toolCalls: [exec('npm', 'test')] },
          { text: 'done' },
        ],
      } as never)}`
      const handle = await startRun(
        connected.client,
        agent.taskQueue,
        { goal: 'ride out an outage', workspace: ws.path, model, verification: null },
        testPolicy(),
      )
      await expect
        .poll(async () => (await handle.query(pendingApprovalsQuery)).length, { timeout: 60_000 })
        .toBe(1)
      const [pending] = await handle.query(pendingApprovalsQuery)
      // The database goes away; the answer still lands (it needs only Temporal), and the run goes on as far
      // as it can, waiting where it needs the database.
      await postgres.stop()
      await handle.executeUpdate(decideUpdate, {
        args: [{ approvalId: pending?.approvalId as string, decision: 'approve', approver: 'alice' }],
      })
      await new Promise((resolve) => setTimeout(resolve, 60_000))
      postgres = await startEmbeddedPostgres({ dataDir, port: postgres.port })
      const result = await handle.result()
      expect(result).toMatchObject({ outcome: 'finished', steps: 4 })

      const runId = handle.workflowId
      const timeline = await audit.runTimeline(runId)
      expect(timeline.filter((e) => e.type === 'step').map((e) => e.step)).toEqual([1, 2, 3, 4])
      const messages = await audit.loadMessages(runId)
      // The goal, a reply and a result per tool step, the final reply: numbered without gaps, none twice.
      expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 1 + 2 * 3 + 1 }, (_, i) => i))
      const commands = await audit.executedCommands({ runId })
      expect(commands.map((c) => [c.step, c.argv.join(' ')])).toEqual([
        [1, 'touch one.txt'],
        [2, 'npm test'],
        [3, 'npm test'],
      ])
      const approvals = timeline.filter((e) => e.type === 'approval')
      expect(approvals).toEqual([expect.objectContaining({ decision: 'approved', decidedBy: 'alice' })])
      const decisions = timeline.filter((e) => e.type === 'policy' && e.kind === 'decision')
      expect(decisions).toHaveLength(1)
    } finally {
      await ws.cleanup()
      await agent.stop()
      await connected.close()
      await audit.close()
      await postgres.stop()
      await rm(dir, { recursive: true, force: true })
    }
  })
})

/** Records when each attempt of the command starts and ends (also when it is told to stop). */
const PROBE = `
const fs = require('node:fs')
const line = (what) => fs.appendFileSync('attempts.log', what + ' ' + Date.now() + '\\n')
line('start')
process.on('SIGTERM', () => { line('end'); process.exit(143) })
setTimeout(() => { line('end'); process.exit(0) }, 30_000)
`

describe.concurrent('a Temporal restart while a command runs', () => {
  it('never lets the retried attempt overlap the first, and the audit shows both attempts', async ({
    expect,
  }) => {
    const dir = await privateFolder('tether-restart-')
    const cli = await ensureTemporalCli()
    const dbFilename = join(dir, 'temporal.db')
    let server = await startDevServer({ cliPath: cli.path, dbFilename })
    const [host, portText] = server.address.split(':')
    const port = Number(portText)
    // The worker reaches Temporal through a gate, shut while the server is down and until the server has
    // timed the first attempt out: else the worker's first heartbeat after the restart may land before the
    // server's overdue heartbeat timer fires, the first attempt carries on, and there is no retry to test.
    const gate = await startGate({ host: host as string, port })
    const audit = await openAudit({
      databaseUrl: inject('databaseUrl'),
      migrate: true,
      outages: waitThroughOutages(quiet),
    })
    const native = await NativeConnection.connect({ address: gate.address })
    const taskQueue = `restart-${Date.now()}`
    const worker = await Worker.create({
      connection: native,
      taskQueue,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: createActivities({ audit }),
    })
    const running = worker.run()
    const connection = await Connection.connect({ address: server.address })
    const client = new Client({ connection })
    const ws = await npmWorkspace()
    try {
      await writeFile(join(ws.path, 'probe.cjs'), PROBE)
      const model = `scripted:${await writeScript(ws.path, {
        turns: [{ toolCalls: [exec('node', 'probe.cjs')] }, { text: 'done' }],
      } as never)}`
      const handle = await startRun(
        client,
        taskQueue,
        { goal: 'survive a Temporal restart', workspace: ws.path, model, verification: null },
        testPolicy().allowExec('node probe.cjs'),
      )
      const log = async () => (await readFile(join(ws.path, 'attempts.log'), 'utf8').catch(() => '')).trim()
      await expect.poll(log, { timeout: 60_000 }).toMatch(/^start \d+$/)
      gate.shut()
      await server.stop()
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      server = await startDevServer({ cliPath: cli.path, dbFilename, port })
      // No heartbeat reaches the server, so it times the first attempt out and schedules the next; only then
      // may the worker hear of it, while the first attempt's command still runs.
      const execAttempt = async () => (await pendingActivity(handle, 'tetherExec'))?.attempt ?? 0
      await expect.poll(execAttempt, { timeout: 60_000, interval: 500 }).toBeGreaterThanOrEqual(2)
      gate.open()
      expect((await handle.result()).outcome).toBe('finished')

      const events = (await log()).split('\n').map((line) => {
        const [what, at] = line.split(' ')
        return { what, at: Number(at) }
      })
      // start, end, start, end …: each attempt ended before the next began.
      expect(events.map((e) => e.what)).toEqual(
        Array.from({ length: events.length }, (_, i) => (i % 2 === 0 ? 'start' : 'end')),
      )
      for (let i = 1; i < events.length; i++) expect(events[i]!.at).toBeGreaterThanOrEqual(events[i - 1]!.at)
      expect(events.length).toBeGreaterThanOrEqual(4)
      // Both attempts are on record: the first stopped (by the later one, or by its own cancellation),
      // the last one ran the command to the end.
      const attempts = await audit.execAttempts(handle.workflowId)
      expect(attempts.map((a) => a.attempt)).toEqual(attempts.map((_, i) => i + 1))
      expect(attempts.length).toBeGreaterThanOrEqual(2)
      expect(attempts.every((a) => a.endedAt !== undefined)).toBe(true)
      expect(attempts.at(-1)).toMatchObject({ outcome: 'exited' })
    } finally {
      await ws.cleanup()
      worker.shutdown()
      await running.catch(() => undefined)
      await connection.close()
      await native.close()
      await gate.close()
      await audit.close()
      await server.stop()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
