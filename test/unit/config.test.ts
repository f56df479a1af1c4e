/**
 * The one configuration reader: defaults, empty variables, the running `tether dev` as a fallback, Temporal's
 * TOML profiles and TLS variables, certificate files checked before connecting, and the one line that says
 * why a server refused (found by probing real loopback servers with real certificates).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer as createTcpServer, type Server, type Socket } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer as createTlsServer } from 'node:tls'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ConfigError,
  connectionProblem,
  credentialFiles,
  readConfig,
  readTemporalTarget,
  readUserSettings,
  temporalAddress,
} from '../../src/stack/config.js'
import { expandVariables, loadMcpServers } from '../../src/stack/mcp-servers.js'
import { tetherStateDir } from '../../src/stack/state.js'
import { type Certificates, makeCertificates } from '../support/certificates.js'

let certs: Certificates
let home: string
let client: { cert: string; key: string }

beforeAll(async () => {
  certs = await makeCertificates()
  home = join(certs.dir, 'home')
  client = await certs.client('worker')
}, 60_000)

afterAll(async () => {
  await certs?.cleanup()
})

/** An environment with no Temporal file in reach unless the test writes one to `home`. */
const env = (variables: Record<string, string> = {}) => ({ HOME: home, XDG_CONFIG_HOME: '', ...variables })

function failure(read: () => unknown): string {
  try {
    read()
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    const message = (error as Error).message
    expect(message.split('\n')).toHaveLength(1)
    return message
  }
  throw new Error('expected a ConfigError')
}

describe('readConfig', () => {
  it('has one default for each setting', () => {
    const config = readConfig({ env: env() })
    expect(config).toEqual({
      temporal: {
        address: '127.0.0.1:7233',
        namespace: 'default',
        connection: { address: '127.0.0.1:7233' },
        security: 'no TLS',
        settings: {},
      },
      taskQueue: 'tether',
      databaseUrl: undefined,
      stateDir: join(homedir(), '.local', 'state', 'tether'),
      mcpServe: { policies: undefined, workspaceRoots: [] },
    })
    expect(readConfig({ env: env({ TETHER_STATE_DIR: '/srv/tether' }) }).stateDir).toBe('/srv/tether')
    const mcp = readConfig({
      env: env({
        TETHER_MCP_SERVERS: '/etc/tether/mcp.yaml',
        TETHER_MCP_POLICIES: '/etc/tether/policies',
        TETHER_MCP_WORKSPACES: '/srv/a:/srv/b',
      }),
    })
    expect(mcp.mcpServers).toBe('/etc/tether/mcp.yaml')
    expect(mcp.mcpServe).toEqual({ policies: '/etc/tether/policies', workspaceRoots: ['/srv/a', '/srv/b'] })
  })

  it('treats an empty variable as unset, for every setting', () => {
    const config = readConfig({
      env: env({
        TEMPORAL_ADDRESS: '',
        TEMPORAL_NAMESPACE: '',
        TEMPORAL_API_KEY: '',
        TETHER_TASK_QUEUE: '',
        DATABASE_URL: '',
        TETHER_STATE_DIR: '',
      }),
    })
    expect(config.temporal.address).toBe('127.0.0.1:7233')
    expect(config.temporal.namespace).toBe('default')
    expect(config.temporal.connection).toEqual({ address: '127.0.0.1:7233' })
    expect(config.taskQueue).toBe('tether')
    expect(config.databaseUrl).toBeUndefined()
    expect(config.stateDir).toBe(join(homedir(), '.local', 'state', 'tether'))
  })

  it('takes the running tether dev as the fallback only where nothing is configured', () => {
    const fallback = {
      temporalAddress: '127.0.0.1:7999',
      namespace: 'dev',
      taskQueue: 'dev-queue',
      databaseUrl: 'postgres://dev@127.0.0.1:5999/dev',
    }
    const unset = readConfig({ env: env({ TEMPORAL_ADDRESS: '' }), fallback })
    expect(unset.temporal).toMatchObject({ address: '127.0.0.1:7999', namespace: 'dev' })
    expect(unset.taskQueue).toBe('dev-queue')
    expect(unset.databaseUrl).toBe(fallback.databaseUrl)
    // Another server is configured: the local stack's namespace and queue do not belong to it.
    const elsewhere = readConfig({ env: env({ TEMPORAL_ADDRESS: 'temporal.internal:7233' }), fallback })
    expect(elsewhere.temporal).toMatchObject({ address: 'temporal.internal:7233', namespace: 'default' })
    expect(elsewhere.taskQueue).toBe('tether')
    expect(elsewhere.databaseUrl).toBe(fallback.databaseUrl)
    const database = readConfig({ env: env({ DATABASE_URL: 'postgres://a@db/b' }), fallback })
    expect(database.databaseUrl).toBe('postgres://a@db/b')
  })
})

describe('Temporal profiles and TLS settings', () => {
  const file = () => join(home, '.config', 'temporalio', 'temporal.toml')

  async function writeProfiles(text: string): Promise<void> {
    const { mkdir } = await import('node:fs/promises')
    await mkdir(join(home, '.config', 'temporalio'), { recursive: true })
    await writeFile(file(), text)
  }

  it('reads the default profile of the user config file, and the one TEMPORAL_PROFILE names; variables win', async () => {
    await writeProfiles(
      [
        '[profile.default]',
        'address = "local.internal:7233"',
        '[profile.prod]',
        'address = "prod.a1b2c.tmprl.cloud:7233"',
        'namespace = "prod.a1b2c"',
        '[profile.prod.tls]',
        `client_cert_path = "${client.cert}"`,
        `client_key_path = "${client.key}"`,
        `server_ca_cert_path = "${certs.ca}"`,
        'server_name = "localhost"',
      ].join('\n'),
    )
    try {
      expect(readTemporalTarget({ env: env() }).address).toBe('local.internal:7233')
      expect(temporalAddress(env())).toBe('local.internal:7233')
      const prod = readTemporalTarget({ env: env({ TEMPORAL_PROFILE: 'prod' }) })
      expect(prod).toMatchObject({
        address: 'prod.a1b2c.tmprl.cloud:7233',
        namespace: 'prod.a1b2c',
        security: 'mutual TLS',
      })
      expect(prod.connection.tls).toEqual({
        serverNameOverride: 'localhost',
        serverRootCACertificate: await readFile(certs.ca),
        clientCertPair: { crt: await readFile(client.cert), key: await readFile(client.key) },
      })
      expect(prod.settings.clientCert).toBe(`tls.client_cert_path in profile "prod" of ${file()}`)
      const overridden = readTemporalTarget({
        env: env({ TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'other', TEMPORAL_ADDRESS: '' }),
      })
      expect(overridden).toMatchObject({ address: 'prod.a1b2c.tmprl.cloud:7233', namespace: 'other' })
      expect(overridden.settings).toMatchObject({ namespace: 'TEMPORAL_NAMESPACE' })

      expect(failure(() => readConfig({ env: env({ TEMPORAL_PROFILE: 'staging' }) }))).toBe(
        `TEMPORAL_PROFILE "staging" is not in ${file()} (it has "default", "prod"); name one it has, or add it there`,
      )
      await writeFile(file(), '[profile.default\naddress = 1')
      expect(failure(() => readConfig({ env: env() }))).toMatch(
        new RegExp(`^${file()} is not a valid Temporal config file: .*\\(line \\d+`),
      )
    } finally {
      await rm(join(home, '.config'), { recursive: true, force: true })
    }
  })

  it('reads TEMPORAL_CONFIG_FILE, and names it when it is missing', async () => {
    const named = join(certs.dir, 'cloud.toml')
    await writeFile(named, '[profile.default]\naddress = "ns.acct.tmprl.cloud:7233"\napi_key = "k"\n')
    const target = readTemporalTarget({ env: env({ TEMPORAL_CONFIG_FILE: named }) })
    expect(target).toMatchObject({ address: 'ns.acct.tmprl.cloud:7233', security: 'API key' })
    expect(target.connection).toEqual({ address: 'ns.acct.tmprl.cloud:7233', apiKey: 'k', tls: true })
    expect(
      failure(() => readConfig({ env: env({ TEMPORAL_CONFIG_FILE: join(certs.dir, 'nope.toml') }) })),
    ).toBe(
      `TEMPORAL_CONFIG_FILE names ${join(certs.dir, 'nope.toml')}, which does not exist; point it at a Temporal TOML file, or unset it`,
    )
    expect(failure(() => readConfig({ env: env({ TEMPORAL_PROFILE: 'prod' }) }))).toMatch(
      /^TEMPORAL_PROFILE "prod" is not in .*temporal\.toml \(that file does not exist\)/,
    )
  })

  it('turns TLS on for an API key, and off only when TEMPORAL_TLS says so', () => {
    expect(readTemporalTarget({ env: env({ TEMPORAL_API_KEY: 'k' }) }).connection).toEqual({
      address: '127.0.0.1:7233',
      apiKey: 'k',
      tls: true,
    })
    const off = readTemporalTarget({ env: env({ TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' }) })
    expect(off.connection.tls).toBe(false)
    expect(off.security).toBe('API key without TLS')
    expect(readTemporalTarget({ env: env({ TEMPORAL_TLS: 'true' }) }).security).toBe('TLS')
  })

  it('says in one line which certificate setting cannot work, before anything connects', async () => {
    const tls = (variables: Record<string, string>) => () => readConfig({ env: env(variables) })
    const missing = join(certs.dir, 'missing.pem')
    expect(
      failure(tls({ TEMPORAL_TLS_CLIENT_CERT_PATH: missing, TEMPORAL_TLS_CLIENT_KEY_PATH: client.key })),
    ).toBe(`TEMPORAL_TLS_CLIENT_CERT_PATH names ${missing}, which does not exist; point it at the PEM file`)
    expect(failure(tls({ TEMPORAL_TLS_CLIENT_CERT_PATH: client.cert }))).toMatch(
      /^TEMPORAL_TLS_CLIENT_CERT_PATH gives a client certificate but no key is set; set TEMPORAL_TLS_CLIENT_KEY_PATH/,
    )
    expect(
      failure(
        tls({
          TEMPORAL_TLS_CLIENT_CERT_PATH: client.cert,
          TEMPORAL_TLS_CLIENT_KEY_PATH: certs.untrusted.key,
        }),
      ),
    ).toBe(
      'TEMPORAL_TLS_CLIENT_KEY_PATH is not the private key of the certificate in TEMPORAL_TLS_CLIENT_CERT_PATH; give the key that belongs to it',
    )
    expect(
      failure(tls({ TEMPORAL_TLS_CLIENT_CERT_PATH: client.key, TEMPORAL_TLS_CLIENT_KEY_PATH: client.key })),
    ).toMatch(/^TEMPORAL_TLS_CLIENT_CERT_PATH does not hold a PEM certificate/)
    expect(
      failure(tls({ TEMPORAL_TLS_CLIENT_CERT_PATH: client.cert, TEMPORAL_TLS_CLIENT_KEY_PATH: client.cert })),
    ).toMatch(/^TEMPORAL_TLS_CLIENT_KEY_PATH does not hold a PEM private key/)
    expect(failure(tls({ TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.dir }))).toBe(
      `TEMPORAL_TLS_SERVER_CA_CERT_PATH names ${certs.dir}, which is a folder; point it at the PEM file`,
    )
    const { execFileSync } = await import('node:child_process')
    const encrypted = join(certs.dir, 'encrypted.key')
    execFileSync('openssl', [
      'pkey',
      '-in',
      client.key,
      '-aes256',
      '-passout',
      'pass:secret',
      '-out',
      encrypted,
    ])
    expect(
      failure(tls({ TEMPORAL_TLS_CLIENT_CERT_PATH: client.cert, TEMPORAL_TLS_CLIENT_KEY_PATH: encrypted })),
    ).toMatch(/^TEMPORAL_TLS_CLIENT_KEY_PATH holds an encrypted key; Temporal's SDK cannot use one/)
    expect(failure(tls({ TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'true' }))).toMatch(
      /^TEMPORAL_TLS_DISABLE_HOST_VERIFICATION is not supported .*set TEMPORAL_TLS_SERVER_NAME/,
    )
  })
})

describe("a person's settings: profiles in tether's config file", () => {
  const folder = () => join(home, '.config', 'tether')
  const settingsFile = () => join(folder(), 'config.toml')
  const write = async (text: string) => {
    await mkdir(folder(), { recursive: true })
    await writeFile(settingsFile(), text)
  }
  const PROFILES = [
    '[profile.default]',
    'policy = "policies/team.yaml"',
    'approver = "alice"',
    'inbox_url = "https://inbox.example.com"',
    '[profile.prod]',
    'policy = "~/strict.yaml"',
    'temporal_profile = "prod"',
  ].join('\n')

  it('reads the default profile, or the one --profile or TETHER_PROFILE names; variables win over it', async () => {
    await write(PROFILES)
    try {
      expect(readUserSettings({ env: env() })).toEqual({
        profile: 'default',
        file: settingsFile(),
        policy: join(folder(), 'policies', 'team.yaml'),
        approver: 'alice',
        inboxUrl: 'https://inbox.example.com',
        sources: {
          policy: `policy in profile "default" of ${settingsFile()}`,
          approver: `approver in profile "default" of ${settingsFile()}`,
          inboxUrl: `inbox_url in profile "default" of ${settingsFile()}`,
        },
      })
      const prod = readUserSettings({ env: env({ TETHER_PROFILE: 'prod' }) })
      expect(prod).toMatchObject({
        profile: 'prod',
        policy: join(home, 'strict.yaml'),
        temporalProfile: 'prod',
      })
      expect(prod.approver).toBeUndefined()
      // The flag over the variable, the variable over the file.
      expect(readUserSettings({ env: env({ TETHER_PROFILE: 'nope' }), profile: 'prod' }).profile).toBe('prod')
      const overridden = readUserSettings({ env: env({ TETHER_APPROVER: 'bob', TETHER_POLICY: 'p.yaml' }) })
      expect(overridden).toMatchObject({ approver: 'bob', policy: join(process.cwd(), 'p.yaml') })
      expect(overridden.sources).toMatchObject({ approver: 'TETHER_APPROVER', policy: 'TETHER_POLICY' })
    } finally {
      await rm(join(home, '.config'), { recursive: true, force: true })
    }
  })

  it('connects with the Temporal profile a profile names, unless TEMPORAL_PROFILE says otherwise', async () => {
    await write(PROFILES)
    await mkdir(join(home, '.config', 'temporalio'), { recursive: true })
    await writeFile(
      join(home, '.config', 'temporalio', 'temporal.toml'),
      '[profile.default]\naddress = "local.internal:7233"\n[profile.prod]\naddress = "prod.internal:7233"\n',
    )
    try {
      const prod = readUserSettings({ env: env({ TETHER_PROFILE: 'prod' }) })
      const temporalProfile = {
        name: prod.temporalProfile as string,
        setting: prod.sources.temporalProfile as string,
      }
      expect(readConfig({ env: env(), temporalProfile }).temporal.address).toBe('prod.internal:7233')
      expect(
        readConfig({ env: env({ TEMPORAL_PROFILE: 'default' }), temporalProfile }).temporal.address,
      ).toBe('local.internal:7233')
      expect(
        failure(() =>
          readConfig({
            env: env(),
            temporalProfile: { name: 'staging', setting: 'temporal_profile in profile "x"' },
          }),
        ),
      ).toMatch(
        /^the Temporal profile "staging" \(temporal_profile in profile "x"\) is not in .*temporal\.toml \(it has "default", "prod"\)/,
      )
    } finally {
      await rm(join(home, '.config'), { recursive: true, force: true })
    }
  })

  it('is nothing without a file; a named profile it lacks, an unknown key or a bad value is one line', async () => {
    expect(readUserSettings({ env: env() })).toEqual({
      profile: 'default',
      file: settingsFile(),
      sources: {},
    })
    expect(failure(() => readUserSettings({ env: env(), profile: 'work' }))).toBe(
      `--profile "work" is not in ${settingsFile()} (that file does not exist); name one it has, or add [profile.work] there`,
    )
    await write(PROFILES)
    try {
      expect(failure(() => readUserSettings({ env: env({ TETHER_PROFILE: 'work' }) }))).toBe(
        `TETHER_PROFILE "work" is not in ${settingsFile()} (it has "default", "prod"); name one it has, or add [profile.work] there`,
      )
      await write('[profile.default]\napprover = "alice"\ninbox = "x"\n')
      expect(failure(() => readUserSettings({ env: env() }))).toBe(
        `${settingsFile()}: profile "default" has an unknown setting "inbox"; it takes policy, approver, inbox_url, temporal_profile`,
      )
      await write('[profile.default]\napprover = 7\n')
      expect(failure(() => readUserSettings({ env: env() }))).toBe(
        `${settingsFile()}: approver in profile "default" must be text in quotes`,
      )
      await write('approver = "alice"\n')
      expect(failure(() => readUserSettings({ env: env() }))).toMatch(
        /settings go in \[profile\.NAME\] tables/,
      )
      await write('[profile.default\n')
      expect(failure(() => readUserSettings({ env: env() }))).toMatch(/is not a valid TOML file: .*\(line 1/)
      expect(
        failure(() => readUserSettings({ env: env({ TETHER_CONFIG_FILE: join(home, 'nope.toml') }) })),
      ).toBe(
        `TETHER_CONFIG_FILE names ${join(home, 'nope.toml')}, which does not exist; point it at tether's config file, or unset it`,
      )
    } finally {
      await rm(join(home, '.config'), { recursive: true, force: true })
    }
  })
})

describe('credentialFiles', () => {
  it('names the config file and the private keys, the worker key among them, never certificates or CAs', async () => {
    const named = join(certs.dir, 'keys.toml')
    await writeFile(named, `[profile.default]\n[profile.default.tls]\nclient_key_path = "${client.key}"\n`)
    expect(
      credentialFiles(
        env({
          TEMPORAL_CONFIG_FILE: named,
          TEMPORAL_TLS_CLIENT_CERT_PATH: client.cert,
          TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
          DATABASE_URL:
            'postgres://a@db/b?sslmode=verify-full&sslkey=/etc/tether/db.key&sslcert=/etc/tether/db.pem',
          PGSSLKEY: '/etc/tether/ignored.key',
        }),
      ),
    ).toEqual([named, client.key, '/etc/tether/db.key', join(tetherStateDir(), 'worker-key.pem')])
    expect(
      credentialFiles(
        env({
          PGSSLKEY: 'relative.key',
          TEMPORAL_TLS_CLIENT_KEY_PATH: '/k/temporal.key',
          TETHER_WORKER_KEY: '/etc/tether/worker.pem',
        }),
      ),
    ).toEqual([
      join(home, '.config', 'temporalio', 'temporal.toml'),
      '/k/temporal.key',
      join(process.cwd(), 'relative.key'),
      '/etc/tether/worker.pem',
    ])
  })
})

describe('connectionProblem', () => {
  const servers: Server[] = []
  const sockets = new Set<Socket>()
  afterAll(async () => {
    for (const socket of sockets) socket.destroy()
    for (const server of servers) await new Promise((resolve) => server.close(resolve))
  })

  async function listen(server: Server): Promise<string> {
    servers.push(server)
    server.on('connection', (socket: Socket) => {
      sockets.add(socket)
      socket.on('close', () => sockets.delete(socket))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return `127.0.0.1:${(server.address() as { port: number }).port}`
  }

  async function tlsServer(requireClientCertificate: boolean): Promise<string> {
    const server = createTlsServer({
      cert: await readFile(certs.server.cert),
      key: await readFile(certs.server.key),
      ca: await readFile(certs.ca),
      requestCert: requireClientCertificate,
      rejectUnauthorized: requireClientCertificate,
    })
    server.on('tlsClientError', () => {})
    server.on('secureConnection', (socket) => socket.on('error', () => {}))
    return listen(server)
  }

  const problem = (variables: Record<string, string>) =>
    connectionProblem(
      new Error('Failed to connect before the deadline'),
      readTemporalTarget({ env: env(variables) }),
    )

  it('names a server that is not there', async () => {
    const server = createTcpServer()
    const address = await listen(server)
    await new Promise((resolve) => server.close(resolve))
    servers.pop()
    expect(await problem({ TEMPORAL_ADDRESS: address })).toBe(
      `cannot reach Temporal at ${address} (connection refused); start \`tether dev\`, or set TEMPORAL_ADDRESS`,
    )
  })

  it('tells TLS on a plain server from no TLS on a TLS server', async () => {
    const plain = await listen(
      createTcpServer((socket) => {
        socket.on('error', () => {})
        socket.end('HTTP/1.1 400 Bad Request\r\n\r\n')
      }),
    )
    expect(await problem({ TEMPORAL_ADDRESS: plain, TEMPORAL_TLS: 'true' })).toBe(
      `Temporal at ${plain} does not speak TLS, and TLS is on (TEMPORAL_TLS); check the port, or set TEMPORAL_TLS=false`,
    )
    const tls = await tlsServer(false)
    expect(await problem({ TEMPORAL_ADDRESS: tls })).toMatch(
      new RegExp(`^Temporal at ${tls} speaks TLS, and TLS is off; set TEMPORAL_TLS=true`),
    )
  })

  it("names a server certificate that is not trusted or not for the server's name", async () => {
    const tls = await tlsServer(false)
    expect(await problem({ TEMPORAL_ADDRESS: tls, TEMPORAL_TLS: 'true' })).toMatch(
      new RegExp(
        `^the certificate of Temporal at ${tls} is not signed by a CA this machine trusts \\(\\w+\\); set TEMPORAL_TLS_SERVER_CA_CERT_PATH`,
      ),
    )
    expect(await problem({ TEMPORAL_ADDRESS: tls, TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.otherCa })).toMatch(
      /is not signed by the CA in TEMPORAL_TLS_SERVER_CA_CERT_PATH \(\w+\); give the CA that signed it$/,
    )
    expect(
      await problem({
        TEMPORAL_ADDRESS: tls,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
        TEMPORAL_TLS_SERVER_NAME: 'temporal.example.com',
      }),
    ).toMatch(
      /^the certificate of Temporal at .* is not for "temporal\.example\.com" \(.*\); set TEMPORAL_TLS_SERVER_NAME to a name it is for$/,
    )
  })

  it('names a client certificate the server asks for or refuses', async () => {
    const mutual = await tlsServer(true)
    expect(await problem({ TEMPORAL_ADDRESS: mutual, TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca })).toMatch(
      new RegExp(
        `^Temporal at ${mutual} asks for a client certificate \\(.+\\); set TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH$`,
      ),
    )
    expect(
      await problem({
        TEMPORAL_ADDRESS: mutual,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: certs.ca,
        TEMPORAL_TLS_CLIENT_CERT_PATH: certs.untrusted.cert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: certs.untrusted.key,
      }),
    ).toMatch(
      new RegExp(
        `^Temporal at ${mutual} refused the client certificate in TEMPORAL_TLS_CLIENT_CERT_PATH \\(.+\\); give one signed by a CA the server trusts$`,
      ),
    )
  })

  it('names the API key a server refused, from the status the SDK reports', async () => {
    const target = readTemporalTarget({ env: env({ TEMPORAL_API_KEY: 'stale', TEMPORAL_NAMESPACE: 'prod' }) })
    const refused = Object.assign(new Error('Failed to connect to Temporal server'), {
      cause: new Error('16 UNAUTHENTICATED: Received HTTP status code 401'),
    })
    expect(await connectionProblem(refused, target)).toBe(
      'Temporal at 127.0.0.1:7233 refused the API key in TEMPORAL_API_KEY (unauthenticated); check that it is current and allowed in namespace prod',
    )
  })
})

/** `${NAME}`, the configuration's placeholder, spelled so that no linter takes it for a template. */
const placeholder = (name: string) => ['$', '{', name, '}'].join('')

describe("the operator's MCP servers file", () => {
  it('reads stdio and HTTP servers with their defaults, and expands the operator variables', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-mcp-config-'))
    const file = join(dir, 'mcp.yaml')
    await writeFile(
      file,
      [
        'servers:',
        '  fs:',
        `    command: [node, server.js, "${placeholder('workspace')}"]`,
        '    workspace: read-only',
        '  gh:',
        '    url: https://mcp.example.com/mcp',
        `    headers: { Authorization: "Bearer ${placeholder('GH_TOKEN')}" }`,
        '    timeout: 2m',
      ].join('\n'),
    )
    const [fs, gh] = loadMcpServers(file)
    expect(fs).toEqual({
      name: 'fs',
      kind: 'stdio',
      command: ['node', 'server.js', placeholder('workspace')],
      workspace: 'read-only',
      env: [],
      readOnly: [],
      timeout: 60_000,
    })
    expect(gh).toMatchObject({ name: 'gh', kind: 'http', timeout: 120_000 })
    const token = placeholder('GH_TOKEN')
    expect(expandVariables(`Bearer ${token}`, { env: { GH_TOKEN: 't0k' } }, 'gh')).toBe('Bearer t0k')
    expect(expandVariables(`${placeholder('workspace')}/x`, { workspace: '/srv/ws', env: {} }, 'fs')).toBe(
      '/srv/ws/x',
    )
    expect(() => expandVariables(token, { env: {} }, "the MCP server gh's header Authorization")).toThrow(
      "the MCP server gh's header Authorization: the variable GH_TOKEN is not set on this worker",
    )
    await writeFile(file, 'servers:\n  Bad Name:\n    command: [x]\n')
    expect(() => loadMcpServers(file)).toThrow(/servers\.Bad Name: a server name is a-z/)
    await rm(dir, { recursive: true, force: true })
  })
})
