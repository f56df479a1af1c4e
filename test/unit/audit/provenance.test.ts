/**
 * Provenance pieces without a server: the DSSE envelope (its pre-authentication encoding, key ids as
 * securesystemslib computes them, a signature that fails after any change), the worker key, the workspace
 * tree digest, and the statement made from a run's rows.
 */
import { execFile } from 'node:child_process'
import { chmod, mkdir, mkdtemp, readdir, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  BUILD_TYPE,
  checkProvenance,
  type ProvenanceRows,
  provenanceStatement,
} from '../../../src/audit/index.js'
import { digestOf, keyIdOf, openEnvelope, pae, sealEnvelope } from '../../../src/identity/index.js'
import { publicKeyFrom, type WorkerKey, workerKey } from '../../../src/identity/keyring.js'
import { treeDigest } from '../../../src/workspace/index.js'
import { removeSandboxedFolder } from '../../support/folders.js'

let dir: string
let key: WorkerKey
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-provenance-'))
  key = workerKey(join(dir, 'state', 'worker-key.pem'))
})
afterAll(() => removeSandboxedFolder(dir))

describe('the worker key', () => {
  it('is made once, private, and read again by every later worker', async () => {
    const file = join(dir, 'state', 'worker-key.pem')
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    expect(workerKey(file).publicKey).toBe(key.publicKey)
    expect(publicKeyFrom(file)).toBe(key.publicKey)
    expect(publicKeyFrom(key.publicKey)).toBe(key.publicKey)
    await chmod(file, 0o644)
    expect(() => workerKey(file)).toThrow(/can be read by others; make it private/)
    await chmod(file, 0o600)
  })

  it('is one whole key for workers that start at once, and leaves nothing else beside it', async () => {
    const folder = join(dir, 'racing')
    const file = join(folder, 'worker-key.pem')
    const keyring = new URL('../../../src/identity/keyring.ts', import.meta.url).href
    const script = `import { workerKey } from ${JSON.stringify(keyring)}; console.log(workerKey(${JSON.stringify(file)}).publicKey)`
    const started = Array.from(
      { length: 6 },
      () =>
        new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
          execFile(
            process.execPath,
            ['--import', 'tsx', '--input-type=module', '--eval', script],
            (error, out, err) => resolve({ code: error ? (error.code as number) : 0, out, err }),
          )
        }),
    )
    const workers = await Promise.all(started)
    for (const worker of workers) expect(worker, worker.err).toMatchObject({ code: 0, err: '' })
    expect(new Set(workers.map((worker) => worker.out.trim())).size).toBe(1)
    expect(workers[0]?.out.trim()).toBe(publicKeyFrom(file))
    expect(await readdir(folder)).toEqual(['worker-key.pem'])
  })

  it('has the key id securesystemslib gives an Ed25519 key', () => {
    // sha256 of {"keytype":"ed25519","keyval":{"public":"<hex>"},"scheme":"ed25519"}
    const hex = Buffer.from(key.publicKey.slice('ed25519:'.length), 'base64').toString('hex')
    expect(key.keyid).toBe(digestOf({ keytype: 'ed25519', scheme: 'ed25519', keyval: { public: hex } }))
    expect(keyIdOf('ed25519:nope')).toBeUndefined()
  })
})

describe('a DSSE envelope', () => {
  const payload = new TextEncoder().encode('{"hello":"world"}')

  it('signs the pre-authentication encoding, with lengths in bytes', () => {
    expect(new TextDecoder().decode(pae('application/x', new TextEncoder().encode('é')))).toBe(
      'DSSEv1 13 application/x 2 é',
    )
    const envelope = sealEnvelope('application/vnd.in-toto+json', payload, key)
    expect(envelope.signatures).toEqual([{ keyid: key.keyid, sig: expect.any(String) }])
    expect(openEnvelope(envelope, key.publicKey)).toEqual({ ok: true, payload: { hello: 'world' } })
  })

  it('fails after any one byte of it changes, or for another key or payload type', () => {
    const envelope = sealEnvelope('application/vnd.in-toto+json', payload, key)
    const text = JSON.stringify(envelope)
    // Every character of the payload and the signature, changed one at a time.
    for (const field of ['payload', 'sig'] as const) {
      const value = field === 'payload' ? envelope.payload : (envelope.signatures[0]?.sig as string)
      for (let i = 0; i < value.length; i++) {
        const changed = value.slice(0, i) + (value[i] === 'A' ? 'B' : 'A') + value.slice(i + 1)
        const altered =
          field === 'payload'
            ? { ...envelope, payload: changed }
            : { ...envelope, signatures: [{ keyid: key.keyid, sig: changed }] }
        expect(openEnvelope(altered, key.publicKey).ok, `${field}[${i}]`).toBe(false)
      }
    }
    expect(openEnvelope(JSON.parse(text.replace('in-toto', 'in-totO')), key.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringContaining('payload type'),
    })
    const other = workerKey(join(dir, 'other.pem'))
    expect(openEnvelope(envelope, other.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringContaining('no signature by key'),
    })
  })
})

describe('the workspace tree digest', () => {
  it('names the files, their contents, modes and links, and leaves .git out', async () => {
    const ws = join(dir, 'ws')
    await mkdir(join(ws, 'src'), { recursive: true })
    await mkdir(join(ws, '.git'), { recursive: true })
    await writeFile(join(ws, 'src', 'a.js'), 'a')
    await writeFile(join(ws, 'run.sh'), '#!/bin/sh\n')
    await symlink('src/a.js', join(ws, 'link'))
    const first = await treeDigest(ws)
    expect(first).toMatchObject({ files: 2, bytes: 11, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) })
    await writeFile(join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n')
    expect((await treeDigest(ws)).sha256).toBe(first.sha256)
    await chmod(join(ws, 'run.sh'), 0o755)
    const executable = await treeDigest(ws)
    expect(executable.sha256).not.toBe(first.sha256)
    await writeFile(join(ws, 'src', 'a.js'), 'b')
    expect((await treeDigest(ws)).sha256).not.toBe(executable.sha256)
  })
})

describe('the provenance statement', () => {
  const rows: ProvenanceRows = {
    run: {
      run_id: 'run-1',
      workspace: '/ws',
      contract: { goal: 'g', budgets: { maxCost: 10_000 } },
      policy: { preset: 'tiered' },
      policy_digest: 'a'.repeat(64),
      floor: 'built-in',
      sandbox: 'enforce',
      outcome: 'verified',
      reason: 'npm test passed',
      steps: 2,
      input_tokens: 10,
      output_tokens: 5,
      cost_usd: 0.021,
      started_at: '2026-01-01T00:00:00+00:00',
      finished_at: '2026-01-01T00:01:00+00:00',
    },
    effective: { layers: [{ name: 'builtin-secrets', origin: 'floor', rules: [{}, {}] }] },
    steps: [
      { step: 1, model: 'anthropic:claude-sonnet-4-5' },
      { step: 2, model: 'anthropic:claude-sonnet-4-5' },
    ],
    commands: [
      {
        step: 1,
        call: 0,
        kind: 'tool',
        argv: ['curl', 'https://registry.npmjs.org/'],
        status: 'exited',
        exit_code: 0,
        sandbox: {
          mode: 'enforce',
          envNames: ['PATH'],
          limits: { processes: 256 },
          network: [
            { host: 'registry.npmjs.org', port: 443, allowed: true, reason: 'rule npm', address: '1.2.3.4' },
            { host: '10.0.0.1', port: 5432, allowed: false, reason: 'private' },
          ],
        },
      },
      {
        step: 2,
        call: -1,
        kind: 'gate',
        argv: ['npm', 'test'],
        status: 'exited',
        exit_code: 0,
        sandbox: null,
      },
    ],
    mcpCalls: [
      {
        step: 2,
        call: 0,
        server: 'docs',
        tool: 'search',
        digest: 'd'.repeat(64),
        arguments_sha256: 'e'.repeat(64),
        effect: 'allow',
        rule: null,
        layer: null,
        status: 'ok',
      },
    ],
    approvals: [
      {
        approval_id: 'ap-1',
        step: 1,
        call: 0,
        act: 'exec',
        target: 'curl https://registry.npmjs.org/',
        action_digest: 'b'.repeat(64),
        decision: 'approved',
        decided_by: 'alice',
        channel: 'update',
        identity: 'signed',
      },
    ],
    answers: [
      {
        approval_id: 'ap-1',
        approver: 'alice',
        decision: 'approve',
        channel: 'update',
        answered_at: '2026-01-01T00:00:30+00:00',
        public_key: 'ed25519:k',
        key_fingerprint: 'SHA256:f',
        signature: 'sig',
        statement: { run: 'run-1' },
      },
    ],
    gates: [{ step: 2, kind: 'gate_passed', detail: 'npm test → exit 0\nmore' }],
  }
  const subject = { path: '/ws', format: 'tether-tree-v1', sha256: 'c'.repeat(64), files: 3, bytes: 9 }
  const statement = provenanceStatement(rows, subject, { version: '0.1.0', keyid: 'k'.repeat(64) })

  it('is an in-toto Statement v1 with SLSA provenance: subject, parameters, dependencies', () => {
    expect(statement).toMatchObject({
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'workspace', digest: { sha256: 'c'.repeat(64) } }],
      predicateType: 'https://slsa.dev/provenance/v1',
      predicate: {
        buildDefinition: {
          buildType: BUILD_TYPE,
          externalParameters: { contract: rows.run.contract, policy: rows.run.policy },
          internalParameters: {
            effectivePolicy: {
              digest: 'a'.repeat(64),
              floor: 'built-in',
              layers: [{ name: 'builtin-secrets', origin: 'floor', rules: 2 }],
            },
          },
          resolvedDependencies: [
            { name: 'effective policy', digest: { sha256: 'a'.repeat(64) } },
            { name: 'model', uri: 'urn:tether:model:anthropic:claude-sonnet-4-5' },
          ],
        },
        runDetails: { metadata: { invocationId: 'run-1', finishedOn: '2026-01-01T00:01:00.000Z' } },
      },
    })
  })

  it('records each command by argv digest with its exit and sandbox, each MCP call, the approvals with their proof, the network allowed and the gate', () => {
    const byproducts = (statement.predicate as { runDetails: { byproducts: Array<Record<string, unknown>> } })
      .runDetails.byproducts
    expect(byproducts).toEqual([
      expect.objectContaining({
        name: 'outcome',
        annotations: expect.objectContaining({ outcome: 'verified', costUsd: 0.021 }),
      }),
      {
        name: 'command',
        digest: { sha256: digestOf(['curl', 'https://registry.npmjs.org/']) },
        annotations: {
          step: 1,
          call: 0,
          status: 'exited',
          exitCode: 0,
          sandbox: { mode: 'enforce', limits: { processes: 256 } },
        },
      },
      expect.objectContaining({
        name: 'gate command',
        annotations: expect.objectContaining({ sandbox: { mode: 'off' } }),
      }),
      {
        name: 'mcp call',
        digest: { sha256: 'e'.repeat(64) },
        annotations: {
          step: 2,
          call: 0,
          server: 'docs',
          tool: 'search',
          definition: 'd'.repeat(64),
          effect: 'allow',
          rule: null,
          layer: null,
          status: 'ok',
        },
      },
      expect.objectContaining({
        name: 'approval',
        digest: { sha256: 'b'.repeat(64) },
        annotations: expect.objectContaining({
          decision: 'approved',
          answers: [expect.objectContaining({ approver: 'alice', signature: 'sig', publicKey: 'ed25519:k' })],
        }),
      }),
      {
        name: 'network',
        uri: 'tcp://registry.npmjs.org:443',
        annotations: { step: 1, call: 0, address: '1.2.3.4', reason: 'rule npm' },
      },
      { name: 'gate', annotations: { step: 2, passed: true, detail: 'npm test → exit 0' } },
    ])
  })

  it('verifies offline only as signed, and only as tether provenance', () => {
    const payload = new TextEncoder().encode(JSON.stringify(statement))
    const envelope = sealEnvelope('application/vnd.in-toto+json', payload, key)
    expect(checkProvenance(envelope, key.publicKey)).toMatchObject({ ok: true })
    const other = { ...statement, predicateType: 'https://example.com/other' }
    const foreign = sealEnvelope(
      'application/vnd.in-toto+json',
      new TextEncoder().encode(JSON.stringify(other)),
      key,
    )
    expect(checkProvenance(foreign, key.publicKey)).toMatchObject({
      ok: false,
      error: expect.stringContaining(BUILD_TYPE),
    })
  })
})
