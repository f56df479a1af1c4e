/**
 * Destinations tried from inside the sandbox, through the egress proxy, as npm, pip, go and curl reach it:
 * a CONNECT to the proxy HTTPS_PROXY names for `host:port`, an absolute-form GET for `http://…` URLs.
 * Each prints one line, `TARGET ANSWER`: what the far end said, or the proxy's status, or the error code.
 */
import { type ExecEnv, type ExecResult, runCommand, type SandboxOptions } from '../../src/exec/index.js'

const CLIENT = `
const http = require('node:http')
const proxy = new URL(process.env.HTTPS_PROXY)
const targets = JSON.parse(process.argv[1])
const tryOne = (target) => new Promise((resolve) => {
  const say = (answer) => resolve(target + ' ' + String(answer).trim())
  if (target.startsWith('http://')) {
    const r = http.get({ host: proxy.hostname, port: proxy.port, path: target }, (res) => {
      let body = ''
      res.on('data', (d) => (body += d))
      res.on('end', () => say(res.statusCode === 200 ? body : res.statusCode))
    })
    r.on('error', (e) => say(e.code))
    return
  }
  const r = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target })
  r.on('connect', (res, socket, head) => {
    if (res.statusCode !== 200) { socket.destroy(); return say(res.statusCode) }
    let data = head.toString()
    socket.on('data', (d) => (data += d))
    socket.on('end', () => say(data))
    socket.on('error', (e) => say(e.code))
  })
  r.on('error', (e) => say(e.code))
  r.end()
})
;(async () => { for (const target of targets) console.log(await tryOne(target)) })()
`

/** Runs one sandboxed command that tries every target in turn; its lines by target, and its result. */
export async function tryDestinations(
  targets: readonly string[],
  options: { cwd: string; env: ExecEnv; sandbox?: SandboxOptions | undefined },
): Promise<{ answers: Map<string, string>; result: ExecResult }> {
  const result = await runCommand({
    argv: [process.execPath, '-e', CLIENT, JSON.stringify(targets)],
    cwd: options.cwd,
    env: options.env,
    timeoutMs: 60_000,
    ...(options.sandbox ? { sandbox: options.sandbox } : {}),
  })
  const answers = new Map<string, string>()
  for (const line of result.stdout.text.split('\n')) {
    const space = line.indexOf(' ')
    if (space > 0) answers.set(line.slice(0, space), line.slice(space + 1))
  }
  return { answers, result }
}
