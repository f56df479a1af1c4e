/**
 * One line of advice for a failed command whose output shows why it failed in a way the model tends to
 * misread: a permission or read-only file system error (it wrote outside the workspace), or a network
 * failure (the network may be closed to commands). Without it, a model retries, or tries `sudo`.
 */

const READ_ONLY = /\bEROFS\b|read-only file ?system/i
const PERMISSION = /\bEACCES\b|\bEPERM\b|permission denied|operation not permitted/i
const NETWORK = [
  /\bENOTFOUND\b/,
  /\bEAI_AGAIN\b/,
  /\bENETUNREACH\b/,
  /\bEHOSTUNREACH\b/,
  /could not resolve host/i,
  /couldn't resolve host/i,
  /temporary failure in name resolution/i,
  /name or service not known/i,
  /network is unreachable/i,
  /no route to host/i,
  /dial tcp: lookup \S+.*no such host/i,
  /failed to establish a new connection/i,
]
const REFUSED =
  /\bECONNREFUSED\s+\[?([0-9a-fA-F.:]+)\]?:\d+|Failed to connect to (\S+) port \d+.*Connection refused/g
const LOOPBACK = /^(127\.|::1$|0:0:0:0:0:0:0:1$|localhost$|0\.0\.0\.0$|::$|::ffff:127\.)/i

export const ADVICE = {
  readOnly:
    'the file system is read-only where the command wrote: write only inside the workspace, and point caches and temporary files there too',
  permission:
    'permission denied: commands may write only inside the workspace; point outputs, caches and temporary files at a workspace path (no sudo)',
  network:
    'the network may be closed to commands: work offline with what is already installed or vendored instead of retrying',
} as const

/** A connection refused by a non-loopback host: the network is in the way, not a local service that is down. */
function refusedRemotely(output: string): boolean {
  for (const match of output.matchAll(REFUSED)) {
    const host = match[1] ?? match[2] ?? ''
    if (!LOOPBACK.test(host)) return true
  }
  return false
}

/** One line of advice for a failed command's output, or undefined when no marker is found. */
export function adviceFor(output: string): string | undefined {
  if (READ_ONLY.test(output)) return ADVICE.readOnly
  if (PERMISSION.test(output)) return ADVICE.permission
  if (NETWORK.some((marker) => marker.test(output)) || refusedRemotely(output)) return ADVICE.network
  return undefined
}
