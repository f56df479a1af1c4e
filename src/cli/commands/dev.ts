/**
 * `tether dev`: the whole local stack in one command — the Temporal dev server (on 7233 unless taken, state
 * in `<state>/temporal.db`), the embedded PostgreSQL (on 5433 unless taken, or DATABASE_URL), one worker and
 * the approvals inbox (on 127.0.0.1:7280 unless taken) — until Ctrl-C. It records itself in the per-user state folder, so tether commands in any folder find it.
 */
import { rm, writeFile } from 'node:fs/promises'
import type { Command } from 'commander'
import { type Inbox, startInbox } from '../../inbox/index.js'
import { usualPort } from '../../stack/index.js'
import { startLocalTether } from '../../worker-setup.js'
import {
  cliConfig,
  colour,
  type DevStackRecord,
  devStack,
  devStackFile,
  print,
  stateDir,
} from '../context.js'
import { CliError } from '../errors.js'

export function registerDev(program: Command): void {
  program
    .command('dev')
    .description(
      'Start the local stack (Temporal dev server with its UI, PostgreSQL, one worker, the approvals inbox) until Ctrl-C; ' +
        'tether commands in any folder find it.',
    )
    .option('--headless', 'no Temporal Web UI')
    .option('--no-inbox', 'do not serve the approvals inbox')
    .action(async (options: { headless?: boolean; inbox: boolean }) => {
      const dir = stateDir()
      const running = devStack()
      if (running) {
        throw new CliError(
          `tether dev is already running (pid ${running.pid}, Temporal ${running.temporalAddress}, state ${dir}); ` +
            'use that one, stop it, or give this one its own TETHER_STATE_DIR',
        )
      }
      const { temporal, taskQueue, databaseUrl } = cliConfig()
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
        log: (line) => print(colour.dim(line)),
      })
      const { stack, audit } = local
      const namespace = external?.namespace ?? stack.namespace
      let inbox: Inbox | undefined
      try {
        // On loopback, on its usual port unless that is taken.
        inbox = options.inbox
          ? await startInbox({
              audit,
              client: local.client,
              namespace,
              port: usualPort('inbox'),
              anyPortIfTaken: true,
              temporalUi: stack.uiUrl,
              log: (line) => print(colour.dim(line)),
            })
          : undefined
        const record: DevStackRecord = {
          temporalAddress: stack.temporalAddress,
          namespace,
          taskQueue,
          ...(stack.uiUrl ? { uiUrl: stack.uiUrl } : {}),
          ...(inbox ? { inboxUrl: inbox.url } : {}),
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
        if (inbox) print(`  inbox         ${inbox.url} (approvals and runs, in a browser)`)
        print(`  PostgreSQL    ${audit.target}`)
        print(`  worker        task queue ${taskQueue}`)
        print(`  state         ${dir}`)
        print(colour.dim('  tether commands in any folder find this stack; Ctrl-C stops it'))
        // The Temporal runtime turns SIGINT/SIGTERM into a graceful worker shutdown.
        await local.running
      } finally {
        await rm(devStackFile(dir), { force: true })
        await inbox?.close()
        await local.stop()
        print('tether dev stopped')
      }
    })
}
