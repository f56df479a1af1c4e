/**
 * Nothing the model sends fails a run: a call with an argument the OS, the file tools or Temporal history
 * would refuse — too long, not valid Unicode, megabytes big — is an observation for the model, the other
 * calls of the reply still run, and the run ends as it would have. (The durations are printed, not
 * asserted: the 50 MB case finishes in seconds, where it used to hang for twenty minutes.)
 */
import type { WorkflowHandle } from '@temporalio/client'
import { describe, expect, it } from 'vitest'
import type { AuditStore } from '../../src/audit/index.js'
import type { agentRun } from '../../src/workflows/index.js'
import {
  npmWorkspace,
  startRun,
  testPolicy,
  useAgentHarness,
  useAgentWorker,
  writeScript,
} from '../support/agent.js'
import { recordHistory } from '../support/temporal.js'

const harness = useAgentHarness()

const repeat = (times: number) => ({ $repeat: 'x', times })
const exec = (...argv: unknown[]) => ({ name: 'exec', args: { argv } })
const readPackage = { name: 'read_file', args: { path: 'package.json' } }

/** The tool outputs of a run's transcript, in order, and its stored size. */
async function observations(audit: AuditStore, runId: string) {
  const transcript = await audit.loadMessages(runId)
  expect(transcript.map((m) => m.seq)).toEqual(transcript.map((_, i) => i))
  const outputs = transcript.flatMap((m) => {
    const content = m.content as { results?: Array<{ output: string }> }
    return content.results?.map((r) => r.output) ?? []
  })
  return { outputs, stored: JSON.stringify(transcript.map((m) => m.content)).length }
}

async function historyBytes(handle: WorkflowHandle<typeof agentRun>): Promise<number> {
  return Number((await handle.describe()).raw.workflowExecutionInfo?.historySizeBytes ?? 0)
}

describe('calls over a limit', () => {
  it.each([
    {
      what: 'a 200,000-character argument',
      call: exec('node', '-e', repeat(200_000)),
      says:
        '[invalid call] invalid arguments for exec: argv[2] is 200,000 bytes; the limit is 32,768 bytes per ' +
        'argument: write the text to a file with write_file and pass its path instead',
      // Replayed by test/unit/replay.test.ts: a model turn whose call carries the activity's verdict.
      history: 'agent-run-call-over-limit',
    },
    {
      what: 'an unpaired UTF-16 surrogate',
      call: exec('echo', 'ab\ud800cd'),
      says:
        '[invalid call] invalid arguments for exec: argv[1] holds an unpaired UTF-16 surrogate (at character 2), ' +
        'which is not valid Unicode and has no UTF-8 form; send valid text',
    },
    {
      what: 'a 3 MB argument',
      call: exec('node', '-e', repeat(3_000_000)),
      says: '[invalid call] invalid arguments for exec: argv[2] is 3,000,000 bytes; the limit is 32,768 bytes',
    },
    {
      what: 'a 50 MB argument',
      call: exec('node', '-e', repeat(50_000_000)),
      says: '[invalid call] invalid arguments for exec: argv[2] is 50,000,000 bytes; the limit is 32,768 bytes',
    },
    {
      what: '3 MB of file contents',
      call: { name: 'write_file', args: { path: 'src/big.txt', content: repeat(3_000_000) } },
      says: '[invalid call] invalid arguments for write_file: content is 3,000,000 bytes; the limit is 2,097,152 bytes',
    },
  ] as Array<{ what: string; call: { name: string; args: unknown }; says: string; history?: string }>)(
    '$what becomes an observation, and the run goes on to its end',
    async ({ what, call, says, history }) => {
      const ws = await npmWorkspace()
      try {
        const model = `scripted:${await writeScript(ws.path, {
          turns: [
            // Usage given: the estimate would count the megabytes the model sent.
            { toolCalls: [call, readPackage], usage: { inputTokens: 100, outputTokens: 50 } },
            { text: 'Done.' },
          ],
        })}`
        const started = Date.now()
        const handle = await startRun(
          harness.client,
          harness.taskQueue,
          { goal: 'g', workspace: ws.path, model },
          testPolicy(),
        )
        const result = await handle.result()
        console.log(`tool limits: ${what} → run ${result.outcome} in ${Date.now() - started} ms`)
        expect(result).toMatchObject({ outcome: 'finished', steps: 2, reason: 'Done.' })

        const { outputs, stored } = await observations(harness.audit, handle.workflowId)
        expect(outputs).toHaveLength(2)
        expect(outputs[0]?.startsWith(says)).toBe(true)
        // The reply's other call ran.
        expect(outputs[1]).toContain('"name": "tether-fixture"')
        // Neither the transcript nor history holds what was refused.
        expect(stored).toBeLessThan(50_000)
        expect(await historyBytes(handle)).toBeLessThan(60_000)
        const [step] = (await harness.audit.runTimeline(handle.workflowId)).filter((e) => e.type === 'step')
        expect(JSON.stringify(step)).toContain('invalid call')
        if (history) await recordHistory(handle, history)
      } finally {
        await ws.cleanup()
      }
    },
  )
})

describe('a command the OS refuses', () => {
  // The operator passes commands a variable larger than one exec string may be (128 KiB on Linux).
  const worker = useAgentWorker({ env: { ...process.env, LARGE_FIXTURE_VALUE: 'h'.repeat(200_000) } })

  it('is an observation (ExecInputError), and the run goes on', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [{ toolCalls: [exec('node', '--version')] }, { text: 'Done.' }],
      })}`
      const handle = await startRun(
        harness.client,
        worker.taskQueue,
        { goal: 'g', workspace: ws.path, model, env: ['LARGE_FIXTURE_VALUE'] },
        testPolicy().allowExec('node --version'),
      )
      expect(await handle.result()).toMatchObject({ outcome: 'finished', steps: 2 })
      const { outputs } = await observations(worker.audit, handle.workflowId)
      expect(outputs).toEqual([
        '[exec refused] nothing ran: argv: with the environment, is larger than the OS accepts (E2BIG); ' +
          'pass less, e.g. through a file',
      ])
      expect(await worker.audit.executedCommands({ runId: handle.workflowId })).toEqual([])
    } finally {
      await ws.cleanup()
    }
  })
})
