/**
 * The audit database over TLS with a client certificate: a real PostgreSQL of the test's own whose
 * pg_hba.conf takes `tether` only over TLS and only with a certificate the test CA signed. The libpq settings
 * work from the URL and from PGSSL* variables; each way of getting them wrong is one line.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { chown, mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AuditConnectionError, openAudit } from '../../../src/audit/index.js'
import {
  type EmbeddedPostgres,
  embeddedPostgresFolders,
  startEmbeddedPostgres,
} from '../../../src/stack/index.js'
import { type Certificates, makeCertificates, type Pair } from '../../support/certificates.js'
import { runStarted, stepRecord } from './support.js'

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url))
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

let stateDir: string
let certs: Certificates
let client: Pair
let server: EmbeddedPostgres
/** The server's URL, without any TLS setting. */
let plain: string

function withTls(settings: Record<string, string>, url = plain): string {
  const parsed = new URL(url)
  for (const [name, value] of Object.entries(settings)) parsed.searchParams.set(name, value)
  return parsed.toString()
}

async function failure(open: () => Promise<unknown>): Promise<string> {
  try {
    await open()
  } catch (error) {
    expect(error).toBeInstanceOf(AuditConnectionError)
    const message = (error as Error).message
    expect(message.split('\n')).toHaveLength(1)
    return message
  }
  throw new Error('expected an AuditConnectionError')
}

/** Temporarily sets process variables (openAudit reads PGSSL* from the process). */
async function withVariables<T>(variables: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const before = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]))
  Object.assign(process.env, variables)
  try {
    return await work()
  } finally {
    for (const [name, value] of Object.entries(before)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'tether-audit-tls-'))
  certs = await makeCertificates()
  // With clientcert=verify-full, the certificate's common name is the user.
  client = await certs.client('tether')
  server = await startEmbeddedPostgres({ dataDir: join(stateDir, 'postgres') })
  plain = server.url
}, 120_000)

afterAll(async () => {
  await server?.stop()
  await certs?.cleanup()
  if (!stateDir) return
  for (const folder of [stateDir, ...embeddedPostgresFolders(join(stateDir, 'postgres'))]) {
    await rm(folder, { recursive: true, force: true })
  }
})

describe('the audit database over TLS', () => {
  it('leaves the embedded server, which tether runs itself, out of the PGSSL* variables', async () => {
    await withVariables({ DATABASE_URL: '', PGSSLMODE: 'verify-full', PGSSLROOTCERT: certs.ca }, async () => {
      const audit = await openAudit({ stateDir, migrate: false })
      try {
        expect(audit.embedded?.started).toBe(false)
      } finally {
        await audit.close()
      }
    })
  })

  it('connects with sslmode, sslrootcert, sslcert and sslkey from the URL or from PGSSL* variables', async () => {
    await requireClientCertificates()
    const runId = `tls-${randomUUID()}`
    const url = withTls({
      sslmode: 'verify-full',
      sslrootcert: certs.ca,
      sslcert: client.cert,
      sslkey: client.key,
    })
    const audit = await openAudit({ databaseUrl: url, migrate: true })
    try {
      expect(await audit.recordRunStarted(runStarted(runId))).toBe(true)
      // A transaction's statements sent together (pipelined, in one write) over TLS.
      const written = await audit.together('tls', (writes) =>
        Promise.all([
          writes.recordStep(stepRecord(runId, 0)),
          writes.appendMessages(runId, 0, [{ role: 'user', content: 'goal' }]),
        ]),
      )
      expect(written).toEqual([true, 1])
      const { rows } = await audit.pool.query<{ ssl: boolean }>(
        'select ssl from pg_stat_ssl where pid = pg_backend_pid()',
      )
      expect(rows).toEqual([{ ssl: true }])
    } finally {
      await audit.close()
    }
    // The variables, and libpq's require (encrypted, the server's certificate not checked).
    await withVariables(
      { PGSSLMODE: 'require', PGSSLROOTCERT: '', PGSSLCERT: client.cert, PGSSLKEY: client.key },
      async () => {
        const fromEnv = await openAudit({ databaseUrl: plain, migrate: false })
        try {
          expect((await fromEnv.runSummary(runId))?.runId).toBe(runId)
        } finally {
          await fromEnv.close()
        }
      },
    )
  })

  it('says in one line what is wrong: no TLS, no certificate, a certificate from another CA, an untrusted server', async () => {
    await requireClientCertificates()
    const at = `PostgreSQL at 127.0.0.1:${server.port}`
    expect(await failure(() => openAudit({ databaseUrl: plain }))).toMatch(
      new RegExp(
        `^${at} accepts user 'tether' only over TLS \\(.*no encryption\\); add sslmode=verify-full \\(with sslrootcert\\) or sslmode=require to DATABASE_URL$`,
      ),
    )
    expect(await failure(() => openAudit({ databaseUrl: withTls({ sslmode: 'require' }) }))).toMatch(
      new RegExp(
        `^${at} refused user 'tether' for want of a valid client certificate \\(.*\\); set sslcert and sslkey in DATABASE_URL`,
      ),
    )
    const intruder = withTls({
      sslmode: 'require',
      sslcert: certs.untrusted.cert,
      sslkey: certs.untrusted.key,
    })
    expect(await failure(() => openAudit({ databaseUrl: intruder }))).toMatch(
      new RegExp(
        `^${at} refused the TLS handshake \\(alert unknown ca\\); check sslcert and sslkey in DATABASE_URL`,
      ),
    )
    const unchecked = withTls({ sslmode: 'verify-full', sslcert: client.cert, sslkey: client.key })
    expect(await failure(() => openAudit({ databaseUrl: unchecked }))).toMatch(
      new RegExp(
        `^the certificate of ${at} is not signed by a CA tether trusts for it \\(\\w+\\); set sslrootcert in DATABASE_URL \\(or PGSSLROOTCERT\\) to the CA that signed it$`,
      ),
    )
    // The CLI prints it as it is, on one line.
    const cli = await tether(['ls'], { DATABASE_URL: withTls({ sslmode: 'require' }) })
    expect(cli.code).toBe(1)
    expect(cli.stderr).toMatch(
      new RegExp(`^error: ${at} refused user 'tether' for want of a valid client certificate [^\\n]*\\n$`),
    )
  }, 60_000)
})

let tlsRequired = false

/**
 * Turns TLS on and makes pg_hba.conf take `tether` only over TLS with a certificate the test CA signed. The
 * files go into the data folder, owned like it (the server refuses a key others can read).
 */
async function requireClientCertificates(): Promise<void> {
  if (tlsRequired) return
  const admin = new pg.Client({ connectionString: plain })
  await admin.connect()
  try {
    const [dataDir, hbaFile] = await Promise.all(
      ['data_directory', 'hba_file'].map(
        async (name) => (await admin.query<Record<string, string>>(`show ${name}`)).rows[0]?.[name] as string,
      ),
    )
    const owner = await stat(dataDir as string)
    const put = async (path: string, data: string | Buffer) => {
      await writeFile(path, data, { mode: 0o600 })
      await chown(path, owner.uid, owner.gid)
    }
    const { readFile } = await import('node:fs/promises')
    await put(join(dataDir as string, 'server.crt'), await readFile(certs.server.cert))
    await put(join(dataDir as string, 'server.key'), await readFile(certs.server.key))
    await put(join(dataDir as string, 'root.crt'), await readFile(certs.ca))
    await put(
      hbaFile as string,
      'hostssl all tether 127.0.0.1/32 scram-sha-256 clientcert=verify-full\nhost all all 127.0.0.1/32 reject\n',
    )
    for (const [name, value] of Object.entries({
      ssl: 'on',
      ssl_cert_file: 'server.crt',
      ssl_key_file: 'server.key',
      ssl_ca_file: 'root.crt',
    })) {
      await admin.query(`alter system set ${name} = '${value}'`)
    }
    await admin.query('select pg_reload_conf()')
  } finally {
    await admin.end()
  }
  // The reload is asynchronous: wait until a TLS connection with the certificate works.
  const ready = withTls({
    sslmode: 'verify-full',
    sslrootcert: certs.ca,
    sslcert: client.cert,
    sslkey: client.key,
  })
  for (let attempt = 0; ; attempt += 1) {
    try {
      const audit = await openAudit({ databaseUrl: ready, migrate: false })
      await audit.close()
      break
    } catch (error) {
      if (attempt > 50) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  tlsRequired = true
}

function tether(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', TSX, join(CHECKOUT, 'src/cli/bin.ts'), ...args], {
    cwd: stateDir,
    env: { ...process.env, TETHER_STATE_DIR: join(stateDir, 'cli'), NO_COLOR: '1', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })))
}
