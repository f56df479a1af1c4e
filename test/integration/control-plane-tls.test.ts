/**
 * A control plane that needs credentials: the production worker (worker.ts) and the CLI reach the test
 * run's Temporal dev server only through nginx terminating TLS — one port that requires a client
 * certificate, one that requires an API key — configured with Temporal's own variables. A run goes from
 * `tether run` to its verified end through the proxy; a wrong certificate or key is one line.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { chmod, copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { openAudit } from '../../src/audit/index.js'
import { FIX_ADD, npmWorkspace, writeScript } from '../support/agent.js'
import { type Certificates, makeCertificates, type Pair } from '../support/certificates.js'
import { type GrpcProxy, startGrpcProxy } from '../support/nginx.js'
import { uniqueTaskQueue } from '../support/temporal.js'

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url))
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const API_KEY = 'test-api-key-7f3a'

let dir: string
let certs: Certificates
let proxy: GrpcProxy
let workerPair: Pair
let cliPair: Pair
let base: NodeJS.ProcessEnv

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-tls-'))
  certs = await makeCertificates()
  workerPair = await certs.client('tether-worker')
  cliPair = await certs.client('tether-cli')
  proxy = await startGrpcProxy({ upstream: inject('temporalAddress'), certs, apiKey: API_KEY, dir })
  // Nothing of the developer's own configuration: no Temporal profile file, no running `tether dev`.
  base = {
    ...process.env,
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, 'config'),
    TETHER_STATE_DIR: join(dir, 'state'),
    TEMPORAL_CONFIG_FILE: '',
    TEMPORAL_PROFILE: '',
    TEMPORAL_NAMESPACE: inject('namespace'),
    DATABASE_URL: inject('databaseUrl'),
    NO_COLOR: '1',
  }
})

afterAll(async () => {
  await proxy?.stop()
  await certs?.cleanup()
  if (dir) await rm(dir, { recursive: true, force: true })
})

/** Through the port that requires a client certificate, trusting the test CA. */
function mutualTls(pair: Pair): NodeJS.ProcessEnv {
  return {
    TEMPORAL_ADDRESS: proxy.mutualTls,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
    TEMPORAL_TLS_CLIENT_CERT_PATH: pair.cert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: pair.key,
  }
}

function apiKey(key: string): NodeJS.ProcessEnv {
  return {
    TEMPORAL_ADDRESS: proxy.apiKey,
    TEMPORAL_API_KEY: key,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
    TEMPORAL_TLS_SERVER_NAME: 'localhost',
  }
}

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

function start(
  args: string[],
  env: NodeJS.ProcessEnv,
): { child: ChildProcess; done: Promise<Ran>; out: () => string } {
  const child = spawn(process.execPath, ['--import', TSX, ...args], {
    cwd: dir,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const done = new Promise<Ran>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })))
  return { child, done, out: () => stdout }
}

const tether = (args: string[], env: NodeJS.ProcessEnv) =>
  start([join(CHECKOUT, 'src/cli/bin.ts'), ...args], env).done
const worker = (env: NodeJS.ProcessEnv) => start([join(CHECKOUT, 'worker.ts')], env)

describe('Temporal behind a TLS terminator that requires a client certificate', () => {
  it('runs a scripted run to its end: the CLI starts and follows it, the production worker runs it', async () => {
    const taskQueue = uniqueTaskQueue('tls')
    // The worker's key where a command could otherwise read it: outside /tmp and home (private to a command
    // anyway), readable by anyone (a command may run as another user than a root worker).
    const keys = await mkdtemp('/var/tmp/tether-tls-keys-')
    const workerKey = join(keys, 'worker.key')
    await copyFile(workerPair.key, workerKey)
    await chmod(keys, 0o755)
    await chmod(workerKey, 0o644)
    const served = worker({
      ...mutualTls({ cert: workerPair.cert, key: workerKey }),
      TETHER_TASK_QUEUE: taskQueue,
    })
    const ws = await npmWorkspace()
    try {
      // The worker bundles tether's workflows from the sources before it says it is ready.
      await expect
        .poll(served.out, { timeout: 150_000, interval: 500 })
        .toContain(
          `tether worker: Temporal ${proxy.mutualTls} (namespace ${inject('namespace')}, mutual TLS), task queue ${taskQueue}`,
        )
      const script = await writeScript(ws.path, {
        turns: [
          { toolCalls: [{ name: 'exec', args: { argv: ['cat', workerKey] } }] },
          {
            toolCalls: [FIX_ADD],
          },
          { text: 'fixed' },
        ],
      })
      const policy = join(ws.path, '.policy.json')
      await writeFile(
        policy,
        JSON.stringify({
          defaults: { read: 'allow', write: 'allow', exec: 'ask', net: 'deny' },
          identity: 'unsigned',
          approvers: ['alice'],
          layers: [
            {
              name: 'project',
              rules: [
                { act: 'exec', effect: 'allow', pattern: 'npm test*' },
                { act: 'exec', effect: 'allow', pattern: 'cat *' },
              ],
            },
          ],
        }),
      )
      const runId = `tls-${taskQueue}`
      const cli = { ...mutualTls(cliPair), TETHER_TASK_QUEUE: taskQueue }
      const ran = await tether(
        [
          'run',
          '--goal',
          'fix add',
          '--workspace',
          ws.path,
          '--verify',
          'npm test',
          '--policy',
          policy,
          '--model',
          `scripted:${script}`,
          '--id',
          runId,
          '--follow',
        ],
        cli,
      )
      expect(ran.stderr).toBe('')
      expect(ran.code).toBe(0)
      expect(ran.stdout.split('\n')[0]).toBe(`run ${runId} started on task queue ${taskQueue}`)
      expect(ran.stdout).toMatch(/outcome\s+verified/)

      const ls = await tether(['ls', '--json'], cli)
      expect(ls.code).toBe(0)
      expect(JSON.parse(ls.stdout)).toContainEqual(expect.objectContaining({ runId, outcome: 'verified' }))
      const followed = await tether(['show', runId, '--follow', '--json'], cli)
      expect(followed).toMatchObject({ code: 0, stderr: '' })
      // One JSON object a line per event; the outcome is the last.
      const events = followed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
      expect(events.at(-1)).toMatchObject({ event: 'outcome', outcome: 'verified' })

      // The command ran, and could not read the worker's key: it is the worker's secret, not the run's.
      const audit = await openAudit({ databaseUrl: inject('databaseUrl'), migrate: false })
      try {
        const [cat] = await audit.executedCommands({ runId })
        expect(cat?.argv).toEqual(['cat', workerKey])
        expect(cat?.stdout.text).toBe('')
        expect(cat?.stderr.text).toMatch(/Permission denied/)
      } finally {
        await audit.close()
      }

      // Both went through the terminator, each with its own certificate.
      const log = await proxy.accessLog()
      const port = proxy.mutualTls.split(':')[1]
      expect(log).toMatch(
        new RegExp(
          `^${port} 200 "CN=tether-worker" /temporal\\.api\\.workflowservice\\.v1\\.WorkflowService/PollWorkflowTaskQueue`,
          'm',
        ),
      )
      expect(log).toMatch(
        new RegExp(
          `^${port} 200 "CN=tether-cli" /temporal\\.api\\.workflowservice\\.v1\\.WorkflowService/StartWorkflowExecution`,
          'm',
        ),
      )
    } finally {
      served.child.kill('SIGTERM')
      const stopped = await served.done
      await ws.cleanup()
      await rm(keys, { recursive: true, force: true })
      // SIGTERM is a clean stop (the SDK logs its state changes on stderr meanwhile).
      expect(stopped.code).toBe(0)
    }
  }, 300_000)

  it('tether dev uses the configured server, with its client certificate, instead of starting one', async () => {
    const dev = start([join(CHECKOUT, 'src/cli/bin.ts'), 'dev', '--headless', '--no-inbox'], {
      ...mutualTls(workerPair),
      TETHER_TASK_QUEUE: uniqueTaskQueue('tls-dev'),
    })
    try {
      await expect.poll(dev.out, { timeout: 150_000, interval: 500 }).toContain('tether dev is running')
      expect(dev.out()).toContain(
        `  Temporal      ${proxy.mutualTls} (namespace ${inject('namespace')}, mutual TLS)\n`,
      )
    } finally {
      dev.child.kill('SIGINT')
    }
    const stopped = await dev.done
    expect(stopped.code).toBe(0)
    expect(stopped.stdout).toContain('tether dev stopped')
  }, 200_000)

  it('says in one line that the client certificate was refused, missing or unreadable', async () => {
    const wrong = mutualTls(certs.untrusted)
    const refused = `Temporal at ${proxy.mutualTls} refused the client certificate in TEMPORAL_TLS_CLIENT_CERT_PATH (HTTP 400 Bad Request); give a certificate signed by a CA the server trusts, with its key in TEMPORAL_TLS_CLIENT_KEY_PATH\n`
    const cli = await tether(['cancel', 'some-run'], wrong)
    expect(cli).toMatchObject({ code: 1, stdout: '', stderr: `error: ${refused}` })
    const served = await worker(wrong).done
    expect(served).toMatchObject({ code: 1, stdout: '', stderr: `tether worker: ${refused}` })

    const { TEMPORAL_TLS_CLIENT_CERT_PATH: _cert, TEMPORAL_TLS_CLIENT_KEY_PATH: _key, ...none } = wrong
    expect(await tether(['cancel', 'some-run'], none)).toMatchObject({
      code: 1,
      stderr: `error: Temporal at ${proxy.mutualTls} asks for a client certificate (HTTP 400 Bad Request); set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH\n`,
    })
    const missing = join(dir, 'worker.pem')
    expect(await worker({ ...wrong, TEMPORAL_TLS_CLIENT_CERT_PATH: missing }).done).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `tether worker: TEMPORAL_TLS_CLIENT_CERT_PATH names ${missing}, which does not exist; point it at the PEM file\n`,
    })
    // Without the test CA, the proxy's certificate is not trusted: named before any request is made.
    const { TEMPORAL_TLS_SERVER_CA_CERT_PATH: _ca, ...untrusting } = mutualTls(cliPair)
    const noCa = await tether(['cancel', 'some-run'], untrusting)
    expect(noCa.code).toBe(1)
    expect(noCa.stderr).toMatch(
      new RegExp(
        `^error: the certificate of Temporal at ${proxy.mutualTls} is not signed by a CA this machine trusts \\(\\w+\\); set TEMPORAL_TLS_SERVER_CA_CERT_PATH to the CA that signed it\\n$`,
      ),
    )
  }, 120_000)
})

describe('Temporal behind a gateway that requires an API key', () => {
  it('reaches the server with the key, and says in one line that a wrong key was refused', async () => {
    // With the key, the CLI gets as far as the server's own answer.
    expect(await tether(['cancel', 'no-such-run'], apiKey(API_KEY))).toMatchObject({
      code: 1,
      stderr: `error: no run no-such-run, neither in the audit nor on Temporal (namespace ${inject('namespace')})\n`,
    })
    const refused = `Temporal at ${proxy.apiKey} refused the API key in TEMPORAL_API_KEY (unauthenticated); check that it is current and allowed in namespace ${inject('namespace')}\n`
    expect(await tether(['cancel', 'no-such-run'], apiKey('stale-key'))).toMatchObject({
      code: 1,
      stderr: `error: ${refused}`,
    })
    expect(await worker(apiKey('stale-key')).done).toMatchObject({
      code: 1,
      stdout: '',
      stderr: `tether worker: ${refused}`,
    })
  }, 120_000)
})
