/**
 * The model-turn activity on a real PostgreSQL: the transcript is read once per turn, and a turn retried
 * after its reply was stored plays that reply back instead of asking the model again.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MockActivityEnvironment } from '@temporalio/testing'
import { DefaultLogger } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createActivities } from '../../src/activities/index.js'
import type { AuditStore } from '../../src/audit/index.js'
import { Policy } from '../../src/policy/index.js'
import { parseContract } from '../../src/run/contract.js'
import { openTestAudit, startedOutsideTemporal } from '../support/agent.js'

let audit: AuditStore
let dir: string
beforeAll(async () => {
  audit = await openTestAudit()
  dir = await mkdtemp(join(tmpdir(), 'tether-model-turn-'))
})
afterAll(async () => {
  await audit?.close()
  await rm(dir, { recursive: true, force: true })
})

describe('a model turn', () => {
  it('retried after its reply was stored, plays that reply back; the next turn reads what came before', async () => {
    const script = join(dir, 'script.json')
    const say = (...texts: string[]) =>
      writeFile(script, JSON.stringify({ turns: texts.map((text) => ({ text })) }))
    await say('first answer', 'second answer')
    const activities = createActivities({ audit, snapshots: { store: 'off' } })
    const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') })
    const contract = parseContract({ goal: 'answer twice', workspace: dir, model: `scripted:${script}` })
    const { runId, turn } = await startedOutsideTemporal(activities, env, contract, Policy.tiered())

    expect((await turn(1)).text).toBe('first answer')
    // The model would answer otherwise now: a retry of the same turn must not ask it.
    await say('asked again', 'second answer after a change')
    expect((await turn(1)).text).toBe('first answer')

    const observation = { role: 'user', content: 'an observation the workflow made' }
    expect((await turn(3, [{ seq: 2, message: observation }])).text).toBe('second answer after a change')
    const stored = await audit.loadMessages(runId)
    expect(stored.map((m) => m.seq)).toEqual([0, 1, 2, 3])
    expect(stored[2]?.content).toEqual(observation)
    expect(JSON.stringify(stored[1]?.content)).toContain('first answer')
  }, 60_000)

  it("tells the model nothing its policy does not let it read: the toolchain's lines leave such files unread", async () => {
    const workspace = await mkdtemp(join(dir, 'project-'))
    await writeFile(
      join(workspace, 'package.json'),
      JSON.stringify({ name: 'p', scripts: { test: 'vitest', lint: 'linter --token=s3cret' } }),
    )
    // A provider of the test's own (an external service to tether), which keeps the system prompt it is sent.
    const systems: string[] = []
    const provider = {
      id: 'capture:model',
      contextTokens: 100_000,
      generate: async ({ system }: { system: string }) => {
        systems.push(system)
        return {
          text: 'done',
          toolCalls: [],
          usage: { inputTokens: 1, outputTokens: 1 },
          finishReason: 'stop',
          modelId: 'm',
        }
      },
    }
    const activities = createActivities({ audit, snapshots: { store: 'off' }, provider: () => provider })
    const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') })
    const turnUnder = async (policy: Policy) => {
      const contract = parseContract({ goal: 'look', workspace, model: 'capture:model' })
      await (await startedOutsideTemporal(activities, env, contract, policy)).turn()
      return systems.at(-1) as string
    }
    const open = await turnUnder(Policy.tiered())
    expect(open).toContain('Project: node (marker file package.json; runs with npm).')
    expect(open).toContain('- lint: npm run lint')
    for (const hidden of [
      Policy.tiered().layer('p').denyRead('package.json'),
      Policy.tiered().layer('p').askRead('package.json'),
    ]) {
      const prompt = await turnUnder(hidden)
      expect(prompt).toContain('Project: node (marker file package.json; runs with npm).')
      expect(prompt).not.toContain('lint')
      expect(prompt).not.toContain('- test:')
    }
  }, 60_000)
})
