/** The durable agent run end to end: real dev server, real Postgres, real commands, a scripted model. */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  FIX_ADD,
  npmWorkspace,
  startRun,
  testPolicy,
  useAgentHarness,
  writeScript,
} from '../support/agent.js'
import { recordHistory } from '../support/temporal.js'

const harness = useAgentHarness()

describe('agentRun', () => {
  it('fixes a failing test and ends verified, with every step, command and gate result in the audit', async () => {
    const ws = await npmWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          { text: 'Run the tests first.', toolCalls: [{ name: 'exec', args: { argv: ['npm', 'test'] } }] },
          { toolCalls: [{ name: 'exec', args: { argv: ['rm', '-rf', 'test'] } }] },
          { toolCalls: [{ name: 'read_file', args: { path: 'src/math.js' } }] },
          {
            toolCalls: [FIX_ADD],
          },
          { text: 'Fixed: add now adds.' },
        ],
      })}`
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'make npm test pass', workspace: ws.path, verification: { command: ['npm', 'test'] }, model },
        testPolicy(),
      )
      const result = await handle.result()
      expect(result).toMatchObject({ runId: handle.workflowId, outcome: 'verified', steps: 5 })
      await recordHistory(handle, 'agent-run-verified')
      expect(await readFile(join(ws.path, 'src/math.js'), 'utf8')).toContain('return a + b')

      const summary = await harness.audit.runSummary(handle.workflowId)
      expect(summary).toMatchObject({ outcome: 'verified', steps: 5 })

      const ran = await harness.audit.executedCommands({ runId: handle.workflowId })
      // The model's command, then the gate's (call -1 of the last step), in "what ran".
      expect(ran.map((c) => [c.step, c.call, c.kind, c.argv.join(' '), c.status, c.exitCode])).toEqual([
        [1, 0, 'tool', 'npm test', 'exited', 1],
        [5, -1, 'gate', 'npm test', 'exited', 0],
      ])

      const refused = await harness.audit.refusedActions({ runId: handle.workflowId, limit: 10 })
      expect(refused.items).toHaveLength(1)
      expect(refused.items[0]).toMatchObject({
        step: 2,
        act: 'exec',
        target: 'rm -rf test',
        layer: 'base',
        rule: 'rm*',
      })

      const timeline = await harness.audit.runTimeline(handle.workflowId)
      const kinds = timeline.map((entry) => entry.type)
      expect(kinds.filter((k) => k === 'step')).toHaveLength(5)
      expect(kinds).toContain('gate')

      // The model was told which rule in which layer refused it, and the run carried on.
      const transcript = (await harness.audit.loadMessages(handle.workflowId)).map((m) =>
        JSON.stringify(m.content),
      )
      expect(
        transcript.some(
          (m) => m.includes('[exec refused] rm -rf test') && m.includes('rule `rm*` in layer `base`'),
        ),
      ).toBe(true)
      expect(transcript.map((_, i) => i)).toEqual(
        (await harness.audit.loadMessages(handle.workflowId)).map((m) => m.seq),
      )
    } finally {
      await ws.cleanup()
    }
  })
})
