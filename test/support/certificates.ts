/**
 * Throwaway certificates for TLS tests, made with the openssl command: a CA, a server certificate for
 * 127.0.0.1 and localhost, client certificates it signed, and a second CA that nobody trusts. All X.509 v3
 * (rustls, in Temporal's Rust core, refuses v1 certificates).
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface Pair {
  cert: string
  key: string
}

export interface Certificates {
  dir: string
  /** The CA's certificate (trusted by the servers and the clients). */
  ca: string
  /** A CA that signed nothing anyone trusts. */
  otherCa: string
  server: Pair
  /** A client certificate the CA signed, with the common name given. */
  client(name: string): Promise<Pair>
  /** A client certificate signed by the other CA. */
  untrusted: Pair
  cleanup(): Promise<void>
}

const CA_EXTENSIONS = [
  '-addext',
  'basicConstraints=critical,CA:TRUE',
  '-addext',
  'keyUsage=critical,keyCertSign',
]

export async function makeCertificates(): Promise<Certificates> {
  const dir = await mkdtemp(join(tmpdir(), 'tether-certs-'))
  const path = (name: string) => join(dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  const ca = (name: string) =>
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      ...CA_EXTENSIONS,
    )
  const leaf = async (name: string, signer: string, extensions: string): Promise<Pair> => {
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    )
    await writeFile(path(`${name}.ext`), extensions)
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${signer}.pem`,
      '-CAkey',
      `${signer}.key`,
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.pem`,
    )
    return { cert: path(`${name}.pem`), key: path(`${name}.key`) }
  }
  const clientExtensions =
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n'
  ca('test-ca')
  ca('other-ca')
  const server = await leaf(
    'server',
    'test-ca',
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,DNS:localhost\n',
  )
  const untrusted = await leaf('intruder', 'other-ca', clientExtensions)
  return {
    dir,
    ca: path('test-ca.pem'),
    otherCa: path('other-ca.pem'),
    server,
    client: (name) => leaf(name, 'test-ca', clientExtensions),
    untrusted,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  }
}
