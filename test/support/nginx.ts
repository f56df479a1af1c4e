/**
 * nginx (Debian's package; .ci/run installs it) as a TLS-terminating gRPC proxy in front of a Temporal
 * server, on loopback: one port that requires a client certificate signed by the test CA, one that requires
 * an API key (`Authorization: Bearer …`, answered 401 otherwise, as a gateway in front of Temporal would).
 * Its access log records each request's client certificate subject, so a test can see who came through.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { connect, createServer } from 'node:net'
import { join } from 'node:path'
import type { Certificates } from './certificates.js'

export interface GrpcProxy {
  /** `127.0.0.1:port` that requires a client certificate. */
  mutualTls: string
  /** `127.0.0.1:port` that requires `apiKey`. */
  apiKey: string
  accessLog(): Promise<string>
  stop(): Promise<void>
}

export function nginxPath(): string {
  for (const candidate of ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/bin/nginx']) {
    if (existsSync(candidate)) return candidate
  }
  try {
    return execFileSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error('nginx is not installed: apt-get install nginx (.ci/run installs it)')
  }
}

export async function startGrpcProxy(options: {
  upstream: string
  certs: Certificates
  apiKey: string
  dir: string
}): Promise<GrpcProxy> {
  const [mutualPort, keyPort] = [await freePort(), await freePort()]
  const { dir, certs } = options
  await mkdir(join(dir, 'temp'), { recursive: true })
  const tls = `ssl_certificate ${certs.server.cert};\n    ssl_certificate_key ${certs.server.key};`
  const proxy = `grpc_pass grpc://${options.upstream};\n      grpc_read_timeout 1h;\n      grpc_send_timeout 1h;`
  // As root, nginx's worker would switch to `nobody`, which cannot enter the test's private folder.
  const config = `
daemon off;
${process.getuid?.() === 0 ? 'user root root;' : ''}
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections 256; }
http {
  log_format tether '$server_port $status "$ssl_client_s_dn" $request_uri';
  access_log ${join(dir, 'access.log')} tether;
  client_body_temp_path ${join(dir, 'temp')};
  client_max_body_size 0;
  server {
    listen 127.0.0.1:${mutualPort} ssl http2;
    ${tls}
    ssl_client_certificate ${certs.ca};
    ssl_verify_client on;
    location / {
      ${proxy}
    }
  }
  server {
    listen 127.0.0.1:${keyPort} ssl http2;
    ${tls}
    location / {
      if ($http_authorization != "Bearer ${options.apiKey}") { return 401; }
      ${proxy}
    }
  }
}
`
  const file = join(dir, 'nginx.conf')
  await writeFile(file, config)
  const child: ChildProcess = spawn(nginxPath(), ['-c', file, '-p', dir, '-e', join(dir, 'error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const deadline = Date.now() + 15_000
  while (!(await accepts(mutualPort)) || !(await accepts(keyPort))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL')
      const log = await readFile(join(dir, 'error.log'), 'utf8').catch(() => '')
      throw new Error(`nginx did not start: ${stderr}${log}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    mutualTls: `127.0.0.1:${mutualPort}`,
    apiKey: `127.0.0.1:${keyPort}`,
    accessLog: () => readFile(join(dir, 'access.log'), 'utf8').catch(() => ''),
    stop: async () => {
      if (child.exitCode === null) {
        child.kill('SIGTERM')
        await exited
      }
    },
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}
