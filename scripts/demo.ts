/**
 * `npm run demo`: tether doing its whole job on a small npm project whose test fails.
 *
 * It provides the Temporal CLI if needed, starts a local stack (state in `.tether/demo`), starts a worker,
 * and runs the agent through an allowed command, a refused one, an `ask` that a second client (the real
 * `tether approve` command, in another process) answers after a visible wait, a fix, and the verification
 * gate passing; then it prints the audit's answers. With a model configured in the environment
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
import { newRunId, startAgentRun } from '../src/client.js'
import { fingerprintOf } from '../src/identity/index.js'
import { createKey, loadKey } from '../src/identity/keyring.js'
import { providerFromEnv } from '../src/model/index.js'
import { Policy } from '../src/policy/index.js'
import { startLocalTether } from '../src/worker-setup.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const stateDir = resolve(root, '.tether/demo')
const workspace = join(stateDir, 'workspace')
const APPROVER = 'demo-approver'
const say = (line: string) => console.log(line)
const section = (title: string) => say(`\n${colour.bold(`── ${title}`)}`)

Runtime.install({ logger: new DefaultLogger('WARN') })

function realModelConfigured(): boolean {
  try {
    providerFromEnv(process.env)
    return true
  } catch {
    return false
  }
}

/**
 * What an allowed command could do before the sandbox: read the audit database's credentials one folder
 * up, connect to the database, phone home. Each attempt prints what the operating system answered.
 */
const PROBE = `import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
const attempt = (what, run) => run().then((r) => console.log(\`\${what}: \${r}\`), (e) => console.log(\`\${what}: \${e.code ?? e.cause?.code ?? e.message}\`))
await attempt('read ../postgres/tether-credentials.json', async () => readFileSync('../postgres/tether-credentials.json', 'utf8').slice(0, 20))
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
          { name: 'exec', args: { argv: ['node', 'src/telemetry.js', databasePort] } },
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

/** Answers each ask of the run after a visible wait, until the run ends. */
async function approver(audit: AuditStore, runId: string, env: NodeJS.ProcessEnv, done: () => boolean) {
  const answered = new Set<string>()
  while (!done()) {
    for (const approval of await audit.pendingApprovals({ runId })) {
      if (answered.has(approval.approvalId)) continue
      answered.add(approval.approvalId)
      say(
        colour.yellow(`  ⏸  the run is waiting for a human: ${approval.act} \`${visible(approval.target)}\``),
      )
      for (let s = 3; s > 0; s--) {
        say(colour.dim(`     a second client answers in ${s} s …`))
        await new Promise((r) => setTimeout(r, 1000))
      }
      say(colour.dim(`     $ tether approve ${approval.approvalId} --as ${APPROVER} --reason "…"`))
      await approveWithCli(approval.approvalId, env)
    }
    await new Promise((r) => setTimeout(r, 300))
  }
}

async function main(): Promise<number> {
  section('1. the local stack')
  const local = await startLocalTether({
    stateDir,
    taskQueue: 'tether-demo',
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
    await mkdir(stateDir, { recursive: true })
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
    // The approver's key pair, made once like `tether keys new demo-approver` would: the policy lists the
    // public key, and the second client signs its answer with the private one.
    const keys = join(stateDir, 'keys')
    if (!existsSync(join(keys, `${APPROVER}.pem`))) createKey(APPROVER, keys)
    const approverKey = loadKey(APPROVER, keys)
    env.TETHER_KEYS_DIR = keys
    const policy = Policy.tiered()
      .withApprovers([{ name: APPROVER, keys: [approverKey.publicKey] }])
      .layer('operator')
      .denyExec('rm*')
      .layer('project')
      .allowExec('npm test*')
      .allowExec('node src/*')
      .allowWrite('src/*')
    say(
      '  policy: tiered (read allow, write/exec ask, net deny, secrets denied) + operator: deny `rm*` + project: allow `npm test*`, `node src/*`, write `src/*`',
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
    const answering = approver(audit, handle.workflowId, env, () => finished)
    const result = await followRun(client, audit, handle.workflowId, { json: false }).finally(() => {
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
      ['STEP', 'ACTION', 'ANSWER', 'BY', 'VIA', 'WHEN', 'SIGNATURE'],
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
    return result.outcome === 'verified' ? 0 : 1
  } finally {
    await local.stop()
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
