/**
 * `tether dev`: the whole local stack in one command — the Temporal dev server (state in
 * `<state>/temporal.db`), the embedded PostgreSQL (or DATABASE_URL) and one worker — until Ctrl-C.
 */
import { rm, writeFile } from 'node:fs/promises'
import type { Command } from 'commander'
import { startLocalTether } from '../../worker-setup.js'
import { colour, type DevStackRecord, devStackFile, print, stateDir, temporalTarget } from '../context.js'

export function registerDev(program: Command): void {
  program
    .command('dev')
    .description(
      'Start the local stack (Temporal dev server with its UI, PostgreSQL, one worker) until Ctrl-C.',
    )
    .option('--headless', 'no Temporal Web UI')
    .action(async (options: { headless?: boolean }) => {
      const dir = stateDir()
      const { taskQueue, namespace } = temporalTarget()
      const local = await startLocalTether({
        stateDir: dir,
        temporalAddress: process.env.TEMPORAL_ADDRESS,
        databaseUrl: process.env.DATABASE_URL,
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
          pid: process.pid,
        }
        await writeFile(devStackFile(dir), `${JSON.stringify(record, null, 2)}\n`)
        print(colour.bold('tether dev is running'))
        print(`  Temporal      ${stack.temporalAddress} (namespace ${namespace})`)
        if (stack.uiUrl) print(`  Temporal UI   ${stack.uiUrl}`)
        print(`  PostgreSQL    ${audit.target}`)
        print(`  worker        task queue ${taskQueue}`)
        print(colour.dim('  other tether commands in this folder find this stack; Ctrl-C stops it'))
        // The Temporal runtime turns SIGINT/SIGTERM into a graceful worker shutdown.
        await local.running
      } finally {
        await rm(devStackFile(dir), { force: true })
        await local.stop()
        print('tether dev stopped')
      }
    })
}
