/**
 * bench/approvals: latency from `decide` returning to the approved command starting, over 50 approvals of
 * one run (each command is `touch stamp-N`; its file's mtime marks when the command ran), plus the
 * latency of the `decide` Update itself.
 */
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { newRunId, startAgentRun } from '../src/client.js'
import { Policy } from '../src/policy/index.js'
import { decideUpdate, pendingApprovalsQuery } from '../src/workflows/index.js'
import { percentile, startBenchStack } from './support.js'

const approvals = 50
const stack = await startBenchStack()
try {
  const ws = await stack.workspace({
    turns: [
      ...Array.from({ length: approvals }, (_, i) => ({
        toolCalls: [{ name: 'exec', args: { argv: ['touch', `stamp-${i}`] } }],
      })),
      { text: 'done' },
    ],
  })
  const handle = await startAgentRun(stack.client, {
    contract: {
      goal: 'bench approvals',
      workspace: ws.path,
      model: ws.model,
      budgets: { maxSteps: approvals + 5 },
    },
    policy: Policy.tiered(),
    taskQueue: stack.taskQueue,
    runId: newRunId(),
  })
  const toStart: number[] = []
  const update: number[] = []
  for (let i = 0; i < approvals; i++) {
    let pending = await handle.query(pendingApprovalsQuery)
    while (pending.length === 0) {
      await new Promise((r) => setTimeout(r, 5))
      pending = await handle.query(pendingApprovalsQuery)
    }
    const sent = Date.now()
    await handle.executeUpdate(decideUpdate, {
      args: [{ approvalId: pending[0]!.approvalId, decision: 'approve', approver: 'bench' }],
    })
    const returned = Date.now()
    update.push(returned - sent)
    const file = join(ws.path, `stamp-${i}`)
    for (;;) {
      const info = await stat(file).catch(() => undefined)
      if (info) {
        toStart.push(info.mtimeMs - returned)
        break
      }
      await new Promise((r) => setTimeout(r, 2))
    }
  }
  const result = await handle.result()
  if (result.outcome !== 'finished') throw new Error(`bench run ended ${result.outcome}`)
  const show = (name: string, values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b)
    console.log(
      `${name.padEnd(44)} p50 ${percentile(sorted, 50).toFixed(1)} ms   p99 ${percentile(sorted, 99).toFixed(1)} ms`,
    )
  }
  console.log(`${approvals} approvals on the dev server (scripted model, exec default ask)`)
  show('decide Update round trip', update)
  show('decide returned → approved command started', toStart)
} finally {
  await stack.stop()
}
