/**
 * `tether dev`: the whole local stack in one command — the Temporal dev server (on 7233 unless taken, state
 * in `<state>/temporal.db`), the embedded PostgreSQL (on 5433 unless taken, or DATABASE_URL), one worker and
 * the approvals inbox (on 127.0.0.1:7280 unless taken) — until Ctrl-C, saying what happens to runs a line at
 * a time. It records itself in the per-user state folder, so tether commands in any folder find it.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Command } from 'commander'
import type { TetherConfig } from '../../stack/index.js'
import { colour, print } from '../context.js'
import { CliError } from '../errors.js'
import { mcpEndpoint } from './mcp.js'

interface DevOptions {
  headless?: boolean
  inbox: boolean
  floor?: string
  verbose?: boolean
  reset?: boolean
}

export function registerDev(program: Command): void {
  program
    .command('dev')
    .description(
      'Start the local stack (Temporal dev server with its UI, PostgreSQL, one worker, the approvals inbox) until Ctrl-C; ' +
        'tether commands in any folder find it. It prints what happens to runs, a line each.',
    )
    .option('--headless', 'no Temporal Web UI')
    .option('--no-inbox', 'do not serve the approvals inbox')
    .option(
      '--floor <file>',
      "the operator's floor every run stands on (default: TETHER_FLOOR, else floor.yaml in the state folder, made on first use)",
    )
    .option(
      '--reset',
      "first delete this stack's data — Temporal's history and the audit database (the embedded PostgreSQL's data, wherever it is kept) — then start afresh; floor.yaml and the inbox's tokens stay",
    )
    .option('--verbose', "also print the Temporal SDK's own log, and the stack traces of runs that fail")
    .action(async (options: DevOptions) => {
      const { cliConfig, devStack, stateDir } = await import('../connect.js')
      const dir = stateDir()
      const running = devStack()
      if (running) {
        throw new CliError(
          `tether dev is already running (pid ${running.pid}, Temporal ${running.temporalAddress}, state ${dir}); ` +
            `use that one, stop it${options.reset ? ' before --reset' : ''}, or give this one its own TETHER_STATE_DIR`,
        )
      }
      const config = cliConfig()
      if (options.reset) {
        const { resetLocalStack } = await import('../../stack/index.js')
        const removed = await resetLocalStack(dir)
        print(removed.length ? `reset: deleted ${removed.join(', ')}` : `reset: ${dir} held no stack data`)
      }
      const { quietTemporalLog } = await import('../events.js')
      if (!options.verbose) await quietTemporalLog((line) => print(colour.yellow(line)))
      await serve(options, dir, config)
    })
}

async function serve(
  options: DevOptions,
  dir: string,
  { temporal, taskQueue, databaseUrl, ...config }: TetherConfig,
): Promise<void> {
  const { ConfigError, readTelemetry, startLocalTether, WorkerTelemetry, workerFloor, workerPrices } =
    await import('../../embed/index.js')
  const { localToken, startInbox } = await import('../../inbox/index.js')
  const { ModelConfigError } = await import('../../model/index.js')
  const { PolicyError } = await import('../../policy/index.js')
  const { usualPort } = await import('../../stack/index.js')
  const { devStackFile } = await import('../connect.js')
  const { printEvents } = await import('../events.js')
  let floor: ReturnType<typeof workerFloor>
  let prices: ReturnType<typeof workerPrices>
  let telemetry: InstanceType<typeof WorkerTelemetry>
  try {
    floor = workerFloor(options.floor || config.floor || (await devFloorFile(dir)))
    prices = workerPrices(config.prices)
    telemetry = new WorkerTelemetry(readTelemetry())
  } catch (error) {
    if (error instanceof PolicyError || error instanceof ModelConfigError || error instanceof ConfigError)
      throw new CliError(error.message)
    throw error
  }
  // A configured server (address, TLS, API key) is used as it is; else the stack starts one.
  const external = temporal.settings.address ? temporal : undefined
  const local = await startLocalTether({
    stateDir: dir,
    temporal: external,
    databaseUrl,
    temporalPort: external ? undefined : usualPort('temporal'),
    postgresPort: databaseUrl ? undefined : usualPort('postgres'),
    ui: !options.headless,
    taskQueue,
    floor,
    prices,
    telemetry,
    mcpServers: config.mcpServers,
    log: (line) => print(colour.dim(line)),
  })
  const { stack, audit } = local
  const namespace = external?.namespace ?? stack.namespace
  let inbox: Awaited<ReturnType<typeof startInbox>> | undefined
  let stopEvents: (() => Promise<void>) | undefined
  try {
    // On loopback, on its usual port unless that is taken.
    inbox = options.inbox
      ? await startInbox({
          audit,
          client: local.client,
          namespace,
          access: { mode: 'local', token: localToken(dir) },
          port: usualPort('inbox'),
          anyPortIfTaken: true,
          temporalUi: stack.uiUrl,
          log: (line) => print(colour.dim(line)),
          mcp: await mcpEndpoint(local.client, audit, taskQueue),
        })
      : undefined
    const record = {
      temporalAddress: stack.temporalAddress,
      namespace,
      taskQueue,
      ...(stack.uiUrl ? { uiUrl: stack.uiUrl } : {}),
      // The login link: it carries the stack's token (the record is its owner's only).
      ...(inbox ? { inboxUrl: inbox.loginUrl } : {}),
      databaseUrl: stack.databaseUrl,
      pid: process.pid,
    }
    // Owner-only: the record holds the database URL. A new file, so the mode applies.
    await rm(devStackFile(dir), { force: true })
    await writeFile(devStackFile(dir), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 })
    print(colour.bold('tether dev is running'))
    for (const notice of stack.notices) print(colour.yellow(`  ${notice}`))
    print(
      `  Temporal      ${stack.temporalAddress} (namespace ${namespace}${external ? `, ${external.security}` : ''})`,
    )
    if (stack.uiUrl) print(`  Temporal UI   ${stack.uiUrl}`)
    if (inbox)
      print(
        `  inbox         ${inbox.loginUrl} (approvals and runs, in a browser; the link carries this stack's token)`,
      )
    print(`  PostgreSQL    ${audit.target}`)
    print(`  worker        task queue ${taskQueue}`)
    print(`  floor         ${floor.source} (every run's first layers; a run can only tighten them)`)
    if (telemetry.traces) print('  traces        exported over OTLP (the OTEL_* variables)')
    if (telemetry.prometheusUrl) print(`  metrics       ${telemetry.prometheusUrl}`)
    print(`  state         ${dir}`)
    print(
      colour.dim('  tether commands in any folder find this stack; Ctrl-C stops it. What happens to runs:'),
    )
    stopEvents = printEvents(audit, print, { inboxUrl: inbox?.url })
    // The Temporal runtime turns SIGINT/SIGTERM into a graceful worker shutdown.
    await local.running
  } finally {
    await stopEvents?.()
    await rm(devStackFile(dir), { force: true })
    await inbox?.close()
    await local.stop()
    print('tether dev stopped')
  }
}

/** The floor `tether dev` stands on when none is named: a file in the state folder, written once, then the user's. */
const DEV_FLOOR = `# The operator's floor of this tether dev stack: the first layers of every run its worker serves.
# A run's own policy (tether run --policy FILE) is stacked on it and can only tighten it; the sandbox,
# the approvers with their keys and the identity mode are decided here, never by a run.
# Edit it, then restart tether dev. Reference: docs/policy.md#the-operators-floor
preset: tiered                 # brings the built-in secret denies (.env, keys)
defaults: { read: allow, write: allow, exec: allow, net: allow, mcp: allow }   # each run's policy decides within
layers:
  - name: floor
    sandbox: enforce           # commands run in the sandbox; only a floor may say off
    rules: []
# approvers:                   # who may answer asks, for every run (a run may only narrow the list)
#   - { name: alice, keys: ["ed25519:..."] }    # tether keys new alice prints the entry
`

async function devFloorFile(dir: string): Promise<string> {
  const file = join(dir, 'floor.yaml')
  await mkdir(dir, { recursive: true, mode: 0o700 })
  // 'wx': never overwrite a floor the user edited.
  await writeFile(file, DEV_FLOOR, { flag: 'wx', mode: 0o644 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error
  })
  return file
}
