/**
 * `npm run demo`: tether doing its whole job on a small npm project whose test fails.
 *
 * It provides the Temporal CLI if needed, starts a local stack (state in `.tether/demo`; the sample project in `demo-workspace`, which a run may not
 * share with tether's state), starts a worker,
 * and runs the agent through an allowed command, a refused one, an `ask` that a second client (the real
 * `tether approve` command, in another process) answers after a visible wait, a fix, and the verification
 * gate passing; then it prints the audit's answers, and the boundary seen from the other side: a run that
 * asks for the sandbox off, and a command of a run that allows everything, against the worker's floor.
 * With a model configured in the environment
 * (OPENROUTER_API_KEY + OPENROUTER_MODEL, or any provider `tether run --model` accepts) the same demo runs
 * with the real model, and the second client approves whatever it asks.
 */
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdir, rm, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DefaultLogger, Runtime } from '@temporalio/worker'
import { type AuditStore, verifyRecordedAnswer } from '../src/audit/index.js'
import { colour, printTable, visible } from '../src/cli/context.js'
import { followRun } from '../src/cli/follow.js'
import { newRunId, startAgentRun } from '../src/embed/client.js'
import { startLocalTether } from '../src/embed/worker.js'
import { fingerprintOf } from '../src/identity/index.js'
import { createKey, loadKey } from '../src/identity/keyring.js'
import { providerFromEnv } from '../src/model/index.js'
import { Policy } from '../src/policy/index.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const stateDir = resolve(root, '.tether/demo')
const workspace = join(root, 'demo-workspace')
/** The audit database's credentials, which the demo's command tries to read. */
const credentials = join(stateDir, 'postgres', 'tether-credentials.json')
const APPROVER = 'demo-approver'
const say = (line: string) => console.log(line)
const section = (title: string) => say(`\n${colour.bold(`── ${title}`)}`)

// Errors only: the runs the demo shows being refused are expected, and the SDK logs each as a warning.
Runtime.install({ logger: new DefaultLogger('ERROR') })

function realModelConfigured(): boolean {
  try {
    providerFromEnv(process.env)
    return true
  } catch {
    return false
  }
}

/**
 * What an allowed command could do before the sandbox: read the audit database's credentials, connect to the database, phone home. Each attempt prints what the operating system answered, in
 * words (the error code after them, for whoever looks it up).
 */
const PROBE = `import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
const WORDS = {
  ENOENT: 'not there: the sandbox does not show it',
  EACCES: 'permission denied',
  EPERM: 'not permitted',
  ECONNREFUSED: 'connection refused: nothing listens there inside the sandbox',
  ENETUNREACH: 'no route: the sandbox has no network',
  EHOSTUNREACH: 'no route: the sandbox has no network',
  EAI_AGAIN: 'no name lookup: the sandbox has no network',
  ENOTFOUND: 'no name lookup: the sandbox has no network',
  ETIMEDOUT: 'no answer',
}
const said = (e) => { const code = e.code ?? e.cause?.code; return WORDS[code] ? \`\${WORDS[code]} (\${code})\` : (e.cause?.message ?? e.message) }
const attempt = (what, run) => run().then((r) => console.log(\`\${what}: \${r}\`), (e) => console.log(\`\${what}: \${said(e)}\`))
await attempt(\`read \${process.argv[3]}\`, async () => readFileSync(process.argv[3], 'utf8').slice(0, 20))
await attempt(\`connect to the audit database (127.0.0.1:\${process.argv[2]})\`, () => new Promise((ok, fail) => connect(Number(process.argv[2]), '127.0.0.1').on('connect', () => ok('CONNECTED')).on('error', fail)))
await attempt('fetch https://example.com', async () => (await fetch('https://example.com')).status)
`

function demoScript(databasePort: string) {
  return {
    turns: [
      {
        text: 'Run the tests to see what fails.',
        toolCalls: [{ name: 'exec', args: { argv: ['npm', 'test'] } }],
      },
      {
        text: 'Add a little telemetry helper and try it.',
        toolCalls: [
          { name: 'write_file', args: { path: 'src/telemetry.js', content: PROBE } },
          { name: 'exec', args: { argv: ['node', 'src/telemetry.js', databasePort, credentials] } },
        ],
      },
      {
        text: 'Start from a clean slate.',
        toolCalls: [{ name: 'exec', args: { argv: ['rm', '-rf', 'test'] } }],
      },
      {
        text: 'Track my change with git.',
        toolCalls: [{ name: 'exec', args: { argv: ['git', 'init', '-q'] } }],
      },
      { toolCalls: [{ name: 'read_file', args: { path: 'src/math.js' } }] },
      {
        toolCalls: [{ name: 'edit_file', args: { path: 'src/math.js', search: 'a - b', replace: 'a + b' } }],
      },
      { text: 'add() subtracted; it now adds, so `npm test` should pass.' },
    ],
  }
}

/** The second client: the real CLI in another process, as an approver in another time zone would use it. */
function approveWithCli(approvalId: string, env: NodeJS.ProcessEnv): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'src/cli/bin.ts'),
      'approve',
      approvalId,
      '--as',
      APPROVER,
      '--reason',
      'safe: git init in the demo workspace',
    ],
    { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] },
  )
  return new Promise((done) => child.on('close', (code) => done(code ?? 1)))
}

/**
 * Answers each ask of the run after a visible wait, until the run ends. While it speaks, `speaking` says so
 * and the run's live line keeps off the terminal.
 */
async function approver(
  audit: AuditStore,
  runId: string,
  env: NodeJS.ProcessEnv,
  done: () => boolean,
  speaking: (now: boolean) => void,
) {
  const answered = new Set<string>()
  while (!done()) {
    for (const approval of await audit.pendingApprovals({ runId })) {
      if (answered.has(approval.approvalId)) continue
      answered.add(approval.approvalId)
      speaking(true)
      say(
        colour.yellow(`  ⏸  the run is waiting for a human: ${approval.act} \`${visible(approval.target)}\``),
      )
      for (let s = 3; s > 0; s--) {
        say(colour.dim(`     a second client answers in ${s} s …`))
        await new Promise((r) => setTimeout(r, 1000))
      }
      say(colour.dim(`     $ tether approve ${approval.approvalId} --as ${APPROVER} --reason "…"`))
      await approveWithCli(approval.approvalId, env)
      speaking(false)
    }
    await new Promise((r) => setTimeout(r, 300))
  }
}

/**
 * Run inside the sandbox by a run whose own policy allows everything: every spelling of the worker's
 * loopback through the egress proxy, for Temporal and the audit database, and a key in the stack's state.
 */
const ESCAPE = `const net = require('node:net')
const [temporal, database, state] = process.argv.slice(2)
const proxy = new URL(process.env.HTTPS_PROXY)
const tryConnect = (target) => new Promise((done) => {
  const socket = net.connect(Number(proxy.port), proxy.hostname)
  socket.on('connect', () => socket.write('CONNECT ' + target + ' HTTP/1.1\\r\\n\\r\\n'))
  socket.on('data', (d) => { socket.destroy(); done(String(d).includes(' 200 ')) }).on('error', () => done(false))
})
;(async () => {
  const spellings = (port) => ['127.0.0.1', 'localhost', '[::1]', '[::ffff:7f00:1]', '[0::1]', '[::FFFF:127.0.0.1]'].map((h) => h + ':' + port)
  const reached = []
  for (const target of [...spellings(temporal), ...spellings(database)]) if (await tryConnect(target)) reached.push(target)
  let stateRead = false
  try { stateRead = require('node:fs').readFileSync(state).length > 0 } catch {}
  console.log(reached.length === 0 && !stateRead ? 'NOTHING REACHED' : 'REACHED ' + reached.join(' ') + (stateRead ? ' state' : ''))
})()
`

async function main(): Promise<number> {
  section('1. the local stack, on the operator’s floor')
  // The approver's key pair, made once like `tether keys new demo-approver` would: the floor lists the
  // public key, and the second client signs its answer with the private one.
  const keys = join(stateDir, 'keys')
  await mkdir(stateDir, { recursive: true })
  if (!existsSync(join(keys, `${APPROVER}.pem`))) createKey(APPROVER, keys)
  const approverKey = loadKey(APPROVER, keys)
  // The operator's floor: every run's first layers, which no run's policy can lower.
  const floor = Policy.tiered()
    .withDefault('write', 'allow')
    .withDefault('exec', 'allow')
    .withDefault('net', 'allow')
    .withApprovers([{ name: APPROVER, keys: [approverKey.publicKey] }])
    .layer('operator')
    .withSandbox('enforce')
    .denyExec('rm*')
  const local = await startLocalTether({
    stateDir,
    taskQueue: 'tether-demo',
    floor,
    log: (line) => say(colour.dim(`  ${line}`)),
  })
  const { stack, audit, client, taskQueue } = local
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: stack.temporalAddress,
    DATABASE_URL: stack.databaseUrl,
    TETHER_STATE_DIR: stateDir,
  }
  try {
    section('2. a sample workspace: a small npm project with a failing test')
    await rm(workspace, { recursive: true, force: true })
    await cp(join(root, 'examples/npm-project'), workspace, { recursive: true })
    say(`  ${workspace}  (src/math.js: add() subtracts; test/math.test.js expects 2 + 3 = 5)`)

    const real = realModelConfigured()
    let model: string | undefined
    if (!real) {
      model = `scripted:${join(stateDir, 'script.json')}`
      const databasePort = new URL(stack.databaseUrl).port || '5432'
      await writeFile(join(stateDir, 'script.json'), JSON.stringify(demoScript(databasePort), null, 2))
    }
    say(
      `  model: ${real ? 'from the environment' : 'scripted (set OPENROUTER_API_KEY and OPENROUTER_MODEL for a real one)'}`,
    )
    env.TETHER_KEYS_DIR = keys
    const policy = Policy.tiered()
      .layer('project')
      .allowExec('npm test*')
      .allowExec('node src/*')
      .allowWrite('src/*')
    say(
      "  floor (the operator's): sandbox enforced, secrets denied, operator: deny `rm*`, approver demo-approver",
    )
    say(
      "  run's policy (stacked on the floor, can only tighten it): tiered (write/exec ask, net deny) + project: allow `npm test*`, `node src/*`, write `src/*`",
    )
    say(`  approver: ${APPROVER}, answers signed with key ${fingerprintOf(approverKey.publicKey)}`)
    say(
      `  sandbox: ${policy.sandbox.mode} — every command runs with the host read-only, the workspace writable, no network and no way to tether's own state or services`,
    )

    section('3. the run')
    const handle = await startAgentRun(client, {
      contract: {
        goal: 'Make `npm test` pass. The bug is in src/math.js.',
        workspace,
        verification: { command: ['npm', 'test'] },
        budgets: { maxSteps: 20 },
        ...(model ? { model } : {}),
      },
      policy,
      taskQueue,
      runId: newRunId(),
    })
    say(`  run ${colour.bold(handle.workflowId)}${stack.uiUrl ? `  (Temporal UI: ${stack.uiUrl})` : ''}`)
    let finished = false
    let speaking = false
    const answering = approver(
      audit,
      handle.workflowId,
      env,
      () => finished,
      (now) => {
        speaking = now
      },
    )
    const result = await followRun(client, audit, handle.workflowId, {
      json: false,
      hold: () => speaking,
    }).finally(() => {
      finished = true
    })
    await answering

    section('4. the audit answers (the same as `tether audit ran|refused --run …` and `tether show …`)')
    say(colour.bold('  what actually ran'))
    printTable(
      ['STEP', 'COMMAND', 'STATUS'],
      (await audit.executedCommands({ runId: handle.workflowId })).map((c) => [
        String(c.step),
        c.argv.join(' '),
        c.status === 'exited' ? `exit ${c.exitCode}` : c.status,
      ]),
    )
    const probe = (await audit.executedCommands({ runId: handle.workflowId })).find(
      (c) => c.argv[1] === 'src/telemetry.js',
    )
    if (probe) {
      say(colour.bold('  what the sandbox stopped (an allowed command, answered by the operating system)'))
      for (const line of probe.stdout.text.trim().split('\n')) say(`    ${visible(line)}`)
    }
    say(colour.bold('  what was refused'))
    printTable(
      ['STEP', 'ACTION', 'BY', 'REASON'],
      (await audit.refusedActions({ runId: handle.workflowId, limit: 20 })).items.map((e) => [
        String(e.step),
        `${e.act} ${e.target}`,
        e.rule !== undefined ? `rule ${e.rule} in layer ${e.layer}` : `default for ${e.act}`,
        e.reason.slice(0, 60),
      ]),
    )
    say(colour.bold('  who approved what, and the proof (the same as `tether audit approvals --verify`)'))
    printTable(
      ['STEP', 'ACTION', 'ANSWER', 'BY', 'VIA', 'WHEN (UTC)', 'SIGNATURE'],
      (await audit.approvalAnswers({ runId: handle.workflowId })).map((record) => {
        const check = verifyRecordedAnswer(record)
        return [
          String(record.approval.step),
          `${record.approval.act} ${record.approval.target}`,
          record.answer.decision,
          record.answer.approver,
          record.answer.channel,
          record.answer.answeredAt.toISOString().slice(11, 19),
          check.status === 'verified'
            ? `verified ${check.fingerprint}`
            : check.status === 'unsigned'
              ? 'unsigned'
              : `FAILED: ${check.reason}`,
        ]
      }),
    )
    say('')
    say(
      `${colour.bold('outcome')}: ${result.outcome === 'verified' ? colour.green('verified') : colour.red(result.outcome)}`,
    )

    section('5. the boundary, from the other side: whoever starts a run cannot lower the floor')
    const boundary = await boundaryLines(client, audit, taskQueue, stack)
    for (const line of boundary.lines) say(`  ${line}`)
    return result.outcome === 'verified' && boundary.held ? 0 : 1
  } finally {
    await local.stop()
  }
}

/**
 * Two lines: a run whose policy turns the sandbox off is refused at its first step, and a command of a run
 * whose own policy allows every command and every host reaches none of the stack.
 */
async function boundaryLines(
  client: Parameters<typeof startAgentRun>[0],
  audit: AuditStore,
  taskQueue: string,
  stack: { temporalAddress: string; databaseUrl: string },
): Promise<{ lines: string[]; held: boolean }> {
  // Both runs play a short script: what is shown is the boundary, not a model's choices.
  const script = join(stateDir, 'escape-script.json')
  const temporalPort = stack.temporalAddress.split(':').at(-1) as string
  const databasePort = new URL(stack.databaseUrl).port || '5432'
  // In the demo stack's state folder: the approver's private key.
  const argv = ['node', 'escape.cjs', temporalPort, databasePort, join(stateDir, 'keys', `${APPROVER}.pem`)]
  await writeFile(join(workspace, 'escape.cjs'), ESCAPE)
  await writeFile(
    script,
    JSON.stringify({ turns: [{ toolCalls: [{ name: 'exec', args: { argv } }] }, { text: 'done' }] }),
  )
  const start = (goal: string, policy: Policy) =>
    startAgentRun(client, {
      contract: { goal, workspace, verification: null, model: `scripted:${script}` },
      policy,
      taskQueue,
    })
  const off = await start('run without the sandbox', Policy.permissive().layer('mine').withSandbox('off'))
  const refused = await off.result().then(
    () => undefined,
    (error: { cause?: { message?: string } }) => error.cause?.message,
  )
  const everything = await start('reach the stack', Policy.permissive().layer('mine').allowNet('*'))
  await everything.result()
  const [command] = await audit.executedCommands({ runId: everything.workflowId })
  const said = command?.stdout.text.trim() ?? ''
  return {
    lines: [
      `a run asking for sandbox: off → refused at its first step: ${refused ?? 'NOT REFUSED'}`,
      `a run allowing every command and host → its command reaches neither Temporal nor PostgreSQL (every loopback spelling, through its proxy) nor the approver's key in the state folder: ${said === 'NOTHING REACHED' ? 'none reached' : said}`,
    ],
    held: refused !== undefined && said === 'NOTHING REACHED',
  }
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error(`demo failed: ${(error as Error).message}`)
    process.exitCode = 1
  },
)
