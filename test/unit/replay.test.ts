/** Every recorded history under test/histories replays against today's workflow code without nondeterminism. */
import { readdir, readFile } from 'node:fs/promises'
import { Worker } from '@temporalio/worker'
import { describe, expect, it } from 'vitest'

const historiesDir = new URL('../histories/', import.meta.url)

describe('recorded histories', () => {
  it('replay without nondeterminism', async () => {
    const files = (await readdir(historiesDir)).filter((name) => name.endsWith('.json')).sort()
    expect(files.length).toBeGreaterThan(0)
    const histories = await Promise.all(
      files.map(async (name) => ({
        workflowId: name.replace(/\.json$/, ''),
        history: JSON.parse(await readFile(new URL(name, historiesDir), 'utf8')),
      })),
    )
    const results: Array<{ workflowId: string; error?: unknown }> = []
    for await (const result of Worker.runReplayHistories(
      { workflowsPath: new URL('../support/workflows.ts', import.meta.url).pathname },
      histories,
    )) {
      results.push(result)
    }
    expect(results.map((r) => r.workflowId)).toEqual(histories.map((h) => h.workflowId))
    for (const result of results) expect(result.error, result.workflowId).toBeUndefined()
  }, 120_000)
})
