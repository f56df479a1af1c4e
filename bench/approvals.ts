/**
 * bench/approvals: latency from `decide` returning to the approved command starting, and of the `decide`
 * Update itself, for two runs side by side in one process: one whose policy trusts names (unsigned) and
 * one whose approver signs every answer with an Ed25519 key the workflow verifies. Each run makes 50
 * approvals; each command is `touch stamp-N` (its file's mtime marks when it ran). The approvals of the two
 * runs alternate, so machine noise hits both alike. Issue 28's target: answer sent → command started, p50
 * ≤ 30 ms with the sandbox on.
 */

import { mkdtempSync, rmSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { draftAnswer, newRunId, startAgentRun } from '../src/embed/client.js'
import { createKey, loadKey } from '../src/identity/keyring.js'
import { Policy } from '../src/policy/index.js'
import { decideUpdate } from '../src/workflows/index.js'
import { percentile, startBenchStack } from './support.js'

const approvals = 50
const keys = mkdtempSync(join(tmpdir(), 'tether-bench-keys-'))
createKey('bench', keys)
const key = loadKey('bench', keys)
const stack = await startBenchStack()
try {
  const start = async (name: string, policy: Policy) => {
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
        goal: `bench approvals, ${name}`,
        workspace: ws.path,
        model: ws.model,
        budgets: { maxSteps: approvals + 5 },
      },
      policy,
      taskQueue: stack.taskQueue,
      runId: newRunId(),
    })
    return {
      name,
      ws,
      handle,
      update: [] as number[],
      toStart: [] as number[],
      total: [] as number[],
      sign: [] as number[],
    }
  }
  const runs = [
    await start('unsigned', Policy.tiered()),
    await start('signed', Policy.tiered().withApprovers([{ name: 'bench', keys: [key.publicKey] }])),
  ]
  for (let i = 0; i < approvals; i++) {
    for (const run of i % 2 === 0 ? runs : [...runs].reverse()) {
      let row = (await stack.audit.pendingApprovals({ runId: run.handle.workflowId }))[0]
      while (!row) {
        await new Promise((r) => setTimeout(r, 5))
        row = (await stack.audit.pendingApprovals({ runId: run.handle.workflowId }))[0]
      }
      const signing = performance.now()
      const answer = draftAnswer(row, { decision: 'approve', approver: 'bench' }, key)
      run.sign.push(performance.now() - signing)
      const sent = Date.now()
      await run.handle.executeUpdate(decideUpdate, { args: [answer] })
      const returned = Date.now()
      run.update.push(returned - sent)
      const file = join(run.ws.path, `stamp-${i}`)
      for (;;) {
        const info = await stat(file).catch(() => undefined)
        if (info) {
          run.toStart.push(info.mtimeMs - returned)
          run.total.push(info.mtimeMs - sent)
          break
        }
        await new Promise((r) => setTimeout(r, 2))
      }
    }
  }
  for (const run of runs) {
    const result = await run.handle.result()
    if (result.outcome !== 'finished') throw new Error(`bench run ${run.name} ended ${result.outcome}`)
  }
  const p = (values: number[], q: number) =>
    percentile(
      [...values].sort((a, b) => a - b),
      q,
    )
  const show = (name: string, values: number[]) =>
    console.log(
      `  ${name.padEnd(44)} p50 ${p(values, 50).toFixed(1)} ms   p99 ${p(values, 99).toFixed(1)} ms`,
    )
  console.log(
    `${approvals} approvals per run on the dev server (scripted model, exec default ask), runs interleaved`,
  )
  for (const run of runs) {
    console.log(run.name)
    if (run.name === 'signed') show('signing the answer (client)', run.sign)
    show('decide Update round trip', run.update)
    show('decide returned → approved command started', run.toStart)
    show('answer sent → approved command started', run.total)
  }
  const [unsigned, signed] = runs as [(typeof runs)[0], (typeof runs)[0]]
  console.log(
    `signed / unsigned, p50: Update ${(p(signed.update, 50) / p(unsigned.update, 50)).toFixed(2)}, ` +
      `decide → start ${(p(signed.toStart, 50) / p(unsigned.toStart, 50)).toFixed(2)}`,
  )
} finally {
  await stack.stop()
  rmSync(keys, { recursive: true, force: true })
}
