/**
 * bench/approvals: latency from `decide` returning to the approved command starting, and of the `decide`
 * Update itself, for runs side by side in one process: runs whose policy trusts names (unsigned) and runs
 * whose approver signs every answer with an Ed25519 key the workflow verifies; each answered either at once
 * (the moment the ask is in the audit, as a script polling for it would: the run is then still recording
 * the ask, and the answer waits for that) or 300 ms after it (as the quickest person would: the run is idle
 * by then). Each run makes 50 approvals; each command is `touch stamp-N` (its file's mtime marks when it
 * ran, to the kernel's clock tick: a few ms). The approvals of the runs alternate, so machine noise hits
 * all alike. Issue 28's target: answer sent → command started, p50 ≤ 30 ms with the sandbox on — a
 * person's answer, so the figure to read is the one answered after 300 ms.
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
/** How long after the ask a person-like answer is sent. */
const READING_MS = 300
const keys = mkdtempSync(join(tmpdir(), 'tether-bench-keys-'))
createKey('bench', keys)
const key = loadKey('bench', keys)
const stack = await startBenchStack()
try {
  const start = async (name: string, policy: Policy, afterMs: number) => {
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
      afterMs,
      ws,
      handle,
      update: [] as number[],
      toStart: [] as number[],
      total: [] as number[],
      sign: [] as number[],
    }
  }
  const unsignedPolicy = Policy.tiered()
  const signedPolicy = Policy.tiered().withApprovers([{ name: 'bench', keys: [key.publicKey] }])
  const runs = [
    await start('unsigned, answered at once', unsignedPolicy, 0),
    await start('signed, answered at once', signedPolicy, 0),
    await start(`unsigned, answered ${READING_MS} ms after the ask`, unsignedPolicy, READING_MS),
    await start(`signed, answered ${READING_MS} ms after the ask`, signedPolicy, READING_MS),
  ]
  for (let i = 0; i < approvals; i++) {
    for (const run of i % 2 === 0 ? runs : [...runs].reverse()) {
      let row = (await stack.audit.pendingApprovals({ runId: run.handle.workflowId }))[0]
      while (!row) {
        await new Promise((r) => setTimeout(r, 5))
        row = (await stack.audit.pendingApprovals({ runId: run.handle.workflowId }))[0]
      }
      if (run.afterMs > 0) await new Promise((r) => setTimeout(r, run.afterMs))
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
    if (run.name.startsWith('signed')) show('signing the answer (client)', run.sign)
    show('decide Update round trip', run.update)
    show('decide returned → approved command started', run.toStart)
    show('answer sent → approved command started', run.total)
  }
  const [unsigned, signed, unsignedRead, signedRead] = runs as [
    (typeof runs)[0],
    (typeof runs)[0],
    (typeof runs)[0],
    (typeof runs)[0],
  ]
  const ratio = (a: number[], b: number[]) => (p(a, 50) / p(b, 50)).toFixed(2)
  console.log(
    `p50 ratios: signed / unsigned, Update ${ratio(signed.update, unsigned.update)} at once and ` +
      `${ratio(signedRead.update, unsignedRead.update)} after ${READING_MS} ms; ` +
      `answered after ${READING_MS} ms / at once, answer → command ${ratio(unsignedRead.total, unsigned.total)} ` +
      `unsigned and ${ratio(signedRead.total, signed.total)} signed`,
  )
} finally {
  await stack.stop()
  rmSync(keys, { recursive: true, force: true })
}
