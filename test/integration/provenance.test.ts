/**
 * Every run's signed provenance, on a real dev server and PostgreSQL: a run with a command, a signed
 * approval and a passing gate ends with an in-toto Statement in a DSSE envelope signed by the worker's key,
 * naming the final workspace tree. The Python `in-toto` and `securesystemslib` packages — an independent
 * implementation — verify it, and refuse it after one byte changes; so does `tether audit provenance --verify`.
 */
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { MockActivityEnvironment } from '@temporalio/testing'
import { DefaultLogger } from '@temporalio/worker'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { createActivities } from '../../src/activities/index.js'
import { type ApprovalRow, checkProvenance } from '../../src/audit/index.js'
import { draftAnswer } from '../../src/embed/client.js'
import { digestOf } from '../../src/identity/index.js'
import { type ApproverKey, createKey, loadKey, workerKey } from '../../src/identity/keyring.js'
import { Policy } from '../../src/policy/index.js'
import { workerKeyFile } from '../../src/stack/index.js'
import { decideUpdate } from '../../src/workflows/index.js'
import { treeDigest } from '../../src/workspace/index.js'
import { startScriptedRun, useAgentHarness } from '../support/agent.js'
import { pythonVenv } from '../support/python.js'
import { recordHistory } from '../support/temporal.js'

const harness = useAgentHarness()
const run = promisify(execFile)
const FIXTURE = fileURLToPath(new URL('../fixtures/provenance-python/', import.meta.url))
const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url))
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

let dir: string
let alice: ApproverKey
let python: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-provenance-'))
  createKey('alice', dir)
  alice = loadKey('alice', dir)
  python = await pythonVenv(join(FIXTURE, 'requirements.txt'))
}, 600_000)
afterAll(() => rm(dir, { recursive: true, force: true }))

/** Exit code and output of a program; never throws for a non-zero exit. */
async function exited(program: string, args: string[], env: Record<string, string> = {}) {
  return run(program, args, { env: { ...process.env, ...env } }).then(
    (done) => ({ code: 0, stdout: done.stdout, stderr: done.stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      code: error.code ?? -1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? '',
    }),
  )
}

const tether = (args: string[]) =>
  exited(process.execPath, ['--import', TSX, join(CHECKOUT, 'src/cli/bin.ts'), ...args], {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('namespace'),
    DATABASE_URL: inject('databaseUrl'),
    NO_COLOR: '1',
  })

describe('a run’s provenance', () => {
  it('is signed by the worker, names the final tree, verifies with in-toto’s Python, and fails after one byte changes', async () => {
    const policy = Policy.tiered()
      .withApprovers([{ name: 'alice', keys: [alice.publicKey] }])
      .layer('project')
      .allowExec('npm test*')
      .allowExec('echo *')
      .allowWrite('src/*')
    const { ws, handle } = await startScriptedRun(
      harness,
      [
        { toolCalls: [{ name: 'exec', args: { argv: ['echo', 'looking'] } }] },
        { toolCalls: [{ name: 'exec', args: { argv: ['touch', 'NOTES'] } }] },
        {
          toolCalls: [
            {
              name: 'write_file',
              args: { path: 'src/math.js', content: 'export function add(a, b) {\n  return a + b\n}\n' },
            },
          ],
        },
        { text: 'fixed' },
      ],
      // The history's name: its signed answer names the run, so it replays only under that id.
      {
        policy,
        contract: { verification: { command: ['npm', 'test'] } },
        workflowId: 'provenance-signed-approval',
      },
    )
    try {
      const runId = handle.workflowId
      let approval: ApprovalRow | undefined
      await expect
        .poll(async () => (approval = (await harness.audit.pendingApprovals({ runId }))[0]), {
          timeout: 60_000,
        })
        .toBeDefined()
      await handle.executeUpdate(decideUpdate, {
        args: [draftAnswer(approval as ApprovalRow, { decision: 'approve', approver: 'alice' }, alice)],
      })
      expect(await handle.result()).toMatchObject({ outcome: 'verified' })
      await recordHistory(handle, 'provenance-signed-approval')

      let envelope: Awaited<ReturnType<typeof harness.audit.provenance>>
      await expect
        .poll(async () => (envelope = await harness.audit.provenance(runId)), { timeout: 30_000 })
        .toBeDefined()
      const key = workerKey(workerKeyFile())
      const check = checkProvenance(envelope, key.publicKey)
      if (!check.ok) throw new Error(check.error)
      const { statement } = check
      const tree = await treeDigest(ws.path)
      expect(statement.subject[0]?.digest.sha256).toBe(tree.sha256)
      expect(statement.predicate.runDetails.metadata.invocationId).toBe(runId)
      const byproducts = statement.predicate.runDetails.byproducts
      expect(byproducts.filter((b) => b.name === 'command')).toEqual([
        expect.objectContaining({
          digest: { sha256: digestOf(['echo', 'looking']) },
          annotations: expect.objectContaining({
            status: 'exited',
            exitCode: 0,
            sandbox: expect.objectContaining({ mode: 'enforce' }),
          }),
        }),
        expect.objectContaining({ digest: { sha256: digestOf(['touch', 'NOTES']) } }),
      ])
      expect(byproducts.find((b) => b.name === 'approval')?.annotations).toMatchObject({
        decision: 'approved',
        answers: [{ approver: 'alice', publicKey: alice.publicKey, signature: expect.any(String) }],
      })
      expect(byproducts.find((b) => b.name === 'gate')?.annotations).toMatchObject({ passed: true })
      expect(byproducts.find((b) => b.name === 'outcome')?.annotations).toMatchObject({ outcome: 'verified' })
      const digest = await harness.audit.pool.query('select policy_digest from runs where run_id = $1', [
        runId,
      ])
      expect(statement.predicate.buildDefinition).toMatchObject({
        resolvedDependencies: expect.arrayContaining([
          {
            name: 'effective policy',
            uri: 'urn:tether:policy',
            digest: { sha256: digest.rows[0]?.policy_digest },
          },
        ]),
      })

      // The envelope as `tether audit provenance RUN` prints it, checked by an independent implementation.
      const printed = await tether(['audit', 'provenance', runId])
      expect(printed.code).toBe(0)
      const file = join(dir, 'provenance.json')
      await writeFile(file, printed.stdout)
      const verified = await exited(python, [join(FIXTURE, 'verify.py'), file, key.publicKey])
      expect(verified.code, verified.stdout + verified.stderr).toBe(0)
      expect(JSON.parse(verified.stdout)).toEqual({
        verified: true,
        keyid: key.keyid,
        type: 'https://in-toto.io/Statement/v1',
        predicateType: 'https://slsa.dev/provenance/v1',
        subject: tree.sha256,
        invocationId: runId,
      })
      /** `tether audit provenance --verify` of the saved envelope against the workspace as it is now. */
      const verifyOffline = () =>
        tether(['audit', 'provenance', '--verify', file, '--key', key.publicKey, '--workspace', ws.path])
      const offline = await verifyOffline()
      expect(offline.code, offline.stderr).toBe(0)
      expect(offline.stdout).toContain(`subject: workspace sha256:${tree.sha256}`)
      expect(offline.stdout).toContain(`${ws.path} is the subject`)

      // One byte of the payload changed: neither verifier accepts it.
      const text = printed.stdout
      const at = text.indexOf('"payload":"') + '"payload":"'.length + 40
      const altered = join(dir, 'altered.json')
      await writeFile(altered, text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1))
      const refused = await exited(python, [join(FIXTURE, 'verify.py'), altered, key.publicKey])
      expect(refused.code).toBe(1)
      expect(refused.stdout).toContain('signature does not verify')
      const ours = await tether(['audit', 'provenance', '--verify', altered, '--key', key.publicKey])
      expect(ours.code).toBe(1)
      expect(ours.stderr).toMatch(/does NOT verify: .*(signature|base64)/)

      // A workspace that changed after the run is not the subject.
      await writeFile(join(ws.path, 'later.txt'), 'x')
      const moved = await verifyOffline()
      expect(moved.code).toBe(1)
      expect(moved.stderr).toContain('is NOT the subject')
    } finally {
      await ws.cleanup()
    }
  })

  it('of a run whose workspace this worker no longer has, names the tree restored from its snapshots', async () => {
    const policy = Policy.tiered().layer('project').allowWrite('src/*')
    const { ws, handle } = await startScriptedRun(
      harness,
      [
        {
          toolCalls: [
            { name: 'write_file', args: { path: 'src/added.js', content: 'export const x = 1\n' } },
          ],
        },
        { text: 'done' },
      ],
      { policy },
    )
    try {
      const runId = handle.workflowId
      expect(await handle.result()).toMatchObject({ outcome: 'finished' })
      let envelope: Awaited<ReturnType<typeof harness.audit.provenance>>
      await expect
        .poll(async () => (envelope = await harness.audit.provenance(runId)), { timeout: 30_000 })
        .toBeDefined()
      const check = checkProvenance(envelope, workerKey(workerKeyFile()).publicKey)
      if (!check.ok) throw new Error(check.error)
      const [subject] = check.statement.subject
      const tree = await treeDigest(ws.path)
      // The statement names the tree twice: by the digest anyone recomputes, and by its snapshot root.
      expect(subject).toMatchObject({
        digest: { sha256: tree.sha256 },
        annotations: { snapshot: expect.stringMatching(/^[0-9a-f]{64}$/) },
      })
      const snapshot = String(subject?.annotations?.snapshot)

      // The folder is gone from this worker: the provenance activity restores it at the recorded tree.
      await rm(ws.path, { recursive: true, force: true })
      const activities = createActivities({ audit: harness.audit })
      const env = new MockActivityEnvironment({}, { logger: new DefaultLogger('ERROR') })
      const signed = (await env.run(activities.tetherRecordProvenance, { runId, tree: snapshot })) as {
        subject: string
      }
      expect(signed.subject).toBe(tree.sha256)
      expect(existsSync(join(ws.path, 'src', 'added.js'))).toBe(true)
    } finally {
      await ws.cleanup()
    }
  })
})
