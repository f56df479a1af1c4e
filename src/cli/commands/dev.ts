/**
 * `tether dev`: the whole local stack in one command — the Temporal dev server (on 7233 unless taken, state
 * in `<state>/temporal.db`), the embedded PostgreSQL (on 5433 unless taken, or DATABASE_URL) and one worker —
 * until Ctrl-C. It records itself in the per-user state folder, so tether commands in any folder find it.
 */
import { rm, writeFile } from 'node:fs/promises'
import type { Command } from 'commander'
import { usualPort } from '../../stack/index.js'
import { startLocalTether } from '../../worker-setup.js'
import {
  colour,
  type DevStackRecord,
  devStack,
  devStackFile,
  print,
  stateDir,
  temporalTarget,
} from '../context.js'
import { CliError } from '../errors.js'

export function registerDev(program: Command): void {
  program
    .command('dev')
    .description(
      'Start the local stack (Temporal dev server with its UI, PostgreSQL, one worker) until Ctrl-C; ' +
        'tether commands in any folder find it.',
    )
    .option('--headless', 'no Temporal Web UI')
    .action(async (options: { headless?: boolean }) => {
      const dir = stateDir()
      const running = devStack()
      if (running) {
        throw new CliError(
          `tether dev is already running (pid ${running.pid}, Temporal ${running.temporalAddress}, state ${dir}); ` +
            'use that one, stop it, or give this one its own TETHER_STATE_DIR',
        )
      }
      const { taskQueue, namespace } = temporalTarget()
      const temporalAddress = process.env.TEMPORAL_ADDRESS || undefined
      const databaseUrl = process.env.DATABASE_URL || undefined
      const local = await startLocalTether({
        stateDir: dir,
        temporalAddress,
        databaseUrl,
        temporalPort: temporalAddress ? undefined : usualPort('temporal'),
        postgresPort: databaseUrl ? undefined : usualPort('postgres'),
        ui: !options.headless,
        taskQueue,
        log: (line) => print(colour.dim(line)),
      })
      const { stack, audit } = local
      try {
        const record: DevStackRecord = {
          temporalAddress: stack.temporalAddress,
          namespace,
          taskQueue,
          ...(stack.uiUrl ? { uiUrl: stack.uiUrl } : {}),
          databaseUrl: stack.databaseUrl,
          pid: process.pid,
        }
        // Owner-only: the record holds the database URL. A new file, so the mode applies.
        await rm(devStackFile(dir), { force: true })
        await writeFile(devStackFile(dir), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 })
        print(colour.bold('tether dev is running'))
        for (const notice of stack.notices) print(colour.yellow(`  ${notice}`))
        print(`  Temporal      ${stack.temporalAddress} (namespace ${namespace})`)
        if (stack.uiUrl) print(`  Temporal UI   ${stack.uiUrl}`)
        print(`  PostgreSQL    ${audit.target}`)
        print(`  worker        task queue ${taskQueue}`)
        print(`  state         ${dir}`)
        print(colour.dim('  tether commands in any folder find this stack; Ctrl-C stops it'))
        // The Temporal runtime turns SIGINT/SIGTERM into a graceful worker shutdown.
        await local.running
      } finally {
        await rm(devStackFile(dir), { force: true })
        await local.stop()
        print('tether dev stopped')
      }
    })
}
