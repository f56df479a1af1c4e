/**
 * The escape chain of the boundary issue, end to end: a run whose own policy allows everything — every
 * command, every host — has a command that tries to reach Temporal (to start a run of its own, with the
 * sandbox off), the audit PostgreSQL and the stack's state. Nothing of the stack is reachable from a run.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { describe, expect, inject, it } from 'vitest'
import { Policy } from '../../src/policy/index.js'
import { tetherStateDir } from '../../src/stack/index.js'
import { npmWorkspace, startRun, useAgentHarness, writeScript } from '../support/agent.js'

const harness = useAgentHarness()
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })
const CLIENT = createRequire(import.meta.url).resolve('@temporalio/client')

/**
 * Run inside the sandbox: every spelling of the worker's loopback, straight and through the egress proxy
 * (the variables the sandbox sets), then a real Temporal client that would start a run with the sandbox off.
 */
const PROBE = `
const net = require('node:net')
const [temporalPort, databasePort, stateFile, clientPath] = process.argv.slice(2)
const proxy = new URL(process.env.HTTPS_PROXY)
const direct = (host, port) => new Promise((done) => {
  const socket = net.connect({ host, port: Number(port) })
  socket.setTimeout(3000, () => { socket.destroy(); done('timeout') })
  socket.on('connect', () => { socket.destroy(); done('CONNECTED') }).on('error', (e) => done(e.code))
})
const viaProxy = (target) => new Promise((done) => {
  const socket = net.connect({ host: proxy.hostname, port: Number(proxy.port) })
  let answer = ''
  socket.setTimeout(5000, () => { socket.destroy(); done('timeout') })
  socket.on('connect', () => socket.write('CONNECT ' + target + ' HTTP/1.1\\r\\nHost: ' + target + '\\r\\n\\r\\n'))
  socket.on('data', (chunk) => { answer += chunk; if (answer.includes('\\r\\n')) { socket.destroy(); done(answer.split('\\r\\n')[0].includes(' 200 ') ? 'CONNECTED' : 'refused') } })
  socket.on('error', (e) => done(e.code))
})
const spellings = (port) => ['127.0.0.1:' + port, 'localhost:' + port, '[::1]:' + port, '[::ffff:7f00:1]:' + port,
  '[::FFFF:127.0.0.1]:' + port, '[0:0:0:0:0:ffff:7f00:1]:' + port, '[0::1]:' + port, '[0::]:' + port,
  '0.0.0.0:' + port, '127.1:' + port, '2130706433:' + port]
;(async () => {
  for (const [name, port] of [['temporal', temporalPort], ['postgres', databasePort]]) {
    console.log(name + ' direct ' + await direct('127.0.0.1', port))
    for (const target of spellings(port)) console.log(name + ' proxy ' + target + ' ' + await viaProxy(target))
  }
  try { require('node:fs').readFileSync(stateFile, 'utf8'); console.log('state READ') } catch (e) { console.log('state ' + e.code) }
  try {
    const { Connection, Client } = require(clientPath)
    const connection = await Connection.connect({ address: '127.0.0.1:' + temporalPort, connectTimeout: '4 seconds' })
    const client = new Client({ connection })
    await client.workflow.start('agentRun', { taskQueue: 'tether', workflowId: 'escaped-' + Date.now(), args: [{}] })
    console.log('workflow STARTED')
  } catch (e) { console.log('workflow refused: ' + String(e.message).split('\\n')[0]) }
})()
`

describe('a run whose own policy allows everything', () => {
  it('cannot start a workflow, reach PostgreSQL or read the stack’s state from inside a command', async () => {
    const ws = await npmWorkspace()
    // A secret where the stack keeps its state (the worker's own state folder).
    const state = tetherStateDir()
    await mkdir(state, { recursive: true })
    const stateFile = join(state, `escape-probe-${process.pid}.json`)
    await writeFile(stateFile, '{"databaseUrl":"postgres://tether:secret@127.0.0.1/tether"}\n', {
      mode: 0o600,
    })
    try {
      await writeFile(join(ws.path, 'probe.cjs'), PROBE)
      const temporalPort = inject('temporalAddress').split(':').at(-1) as string
      const databasePort = new URL(inject('databaseUrl')).port
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          {
            toolCalls: [
              exec('node', 'probe.cjs', temporalPort, databasePort, stateFile, CLIENT),
              exec('env'),
            ],
          },
          { text: 'done' },
        ],
      } as never)}`
      const everything = Policy.permissive().layer('mine').allowNet('*')
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'escape', workspace: ws.path, model, verification: null },
        everything,
      )
      expect((await handle.result()).outcome).toBe('finished')
      const [probe, env] = await harness.audit.executedCommands({ runId: handle.workflowId })
      const lines = probe?.stdout.text.trim().split('\n') ?? []
      expect(lines.length).toBeGreaterThan(20)
      for (const line of lines) {
        expect(line).not.toMatch(/CONNECTED|READ|STARTED/)
      }
      expect(lines).toContain('temporal direct ECONNREFUSED')
      expect(
        lines.filter((line) => line.includes(' proxy ')).every((line) => line.endsWith(' refused')),
      ).toBe(true)
      expect(lines.find((line) => line.startsWith('state '))).toMatch(/^state (ENOENT|EACCES)$/)
      expect(lines.at(-1)).toMatch(/^workflow refused: /)
      expect(env?.stdout.text).not.toMatch(/DATABASE_URL|TEMPORAL_|secret/)
      // The proxy says why, in the command's record.
      const decisions =
        (probe?.sandbox as { network?: Array<{ allowed: boolean; reason: string }> } | undefined)?.network ??
        []
      expect(decisions.length).toBeGreaterThan(0)
      expect(decisions.every((decision) => !decision.allowed)).toBe(true)
    } finally {
      await rm(stateFile, { force: true })
      await ws.cleanup()
    }
  })
})
