/**
 * `tether db migrate`: applies the audit schema's pending migrations to DATABASE_URL (or the embedded
 * PostgreSQL under the state folder) and says what it applied. Workers do the same on start; this command
 * lets an operator migrate ahead of a deploy, or check that nothing is pending.
 */
import type { Command } from 'commander'
import type { MigrationReport } from '../../audit/index.js'
import { CliError } from '../errors.js'

interface MigrateOptions {
  json?: boolean
  databaseUrl?: string
  stateDir?: string
}

export function registerDb(program: Command): void {
  const db = program.command('db').description('The audit database (PostgreSQL).')
  db.command('migrate')
    .description(
      'Apply pending audit migrations to DATABASE_URL, or to the embedded PostgreSQL in the state folder.',
    )
    .option('--json', 'print the result as JSON')
    .option('--database-url <url>', 'PostgreSQL connection string (default: $DATABASE_URL)')
    .option(
      '--state-dir <dir>',
      "tether's state folder, for the embedded PostgreSQL (default: $TETHER_STATE_DIR, else ~/.local/state/tether)",
    )
    .action(async (options: MigrateOptions) => {
      const { target, report } = await migrate(options)
      process.stdout.write(
        options.json ? `${JSON.stringify({ target, ...report })}\n` : `${describe(target, report)}\n`,
      )
    })
}

async function migrate(options: MigrateOptions): Promise<{ target: string; report: MigrationReport }> {
  const { AuditError, openAudit } = await import('../../audit/index.js')
  const { stateDir } = await import('../connect.js')
  try {
    const store = await openAudit({
      databaseUrl: options.databaseUrl,
      stateDir: options.stateDir ?? stateDir(),
      migrate: false,
    })
    try {
      return { target: store.target, report: await store.migrate() }
    } finally {
      await store.close()
    }
  } catch (error) {
    if (error instanceof AuditError) throw new CliError(error.message)
    throw error
  }
}

function describe(target: string, report: MigrationReport): string {
  const lines = report.applied.length
    ? report.applied.map((m) => `applied audit migration ${m.version} (${m.name}) on ${target}`)
    : [`nothing to apply: the audit schema on ${target} is at version ${report.version}`]
  if (report.newer.length) {
    lines.push(
      `note: the database also has migrations ${report.newer.join(', ')} from a newer tether; this one keeps working with them`,
    )
  }
  return lines.join('\n')
}
