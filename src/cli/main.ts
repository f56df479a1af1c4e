/**
 * The `tether` command. Each subcommand lives in `commands/` and registers itself on the program; this file
 * only assembles them and turns any failure into one clear line and a non-zero exit.
 */
import { Command, CommanderError } from 'commander'
import { packageVersion } from '../stack/index.js'
import { registerApprovals } from './commands/approvals.js'
import { registerAudit } from './commands/audit.js'
import { registerDb } from './commands/db.js'
import { registerDev } from './commands/dev.js'
import { registerInbox } from './commands/inbox.js'
import { registerPolicy } from './commands/policy.js'
import { registerRuns } from './commands/runs.js'
import { CliError } from './errors.js'

/** A subcommand module adds its commands to the program; list each one here. */
export type Register = (program: Command) => void

const registrations: Register[] = [
  registerDev,
  registerRuns,
  registerApprovals,
  registerInbox,
  registerAudit,
  registerDb,
  registerPolicy,
]

export function buildProgram(): Command {
  const program = new Command('tether')
    .description(
      'A coding agent that runs as a durable Temporal workflow, with policy, approvals and an audit.',
    )
    .version(packageVersion(), '-V, --version', "print tether's version")
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
  for (const register of registrations) register(program)
  return program
}

export async function runCli(argv: readonly string[]): Promise<number> {
  const program = buildProgram()
  try {
    await program.parseAsync([...argv], { from: 'user' })
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed help or the usage error.
      return error.code === 'commander.helpDisplayed' || error.code === 'commander.version'
        ? 0
        : error.exitCode || 2
    }
    const message = error instanceof Error ? error.message : String(error)
    // Our own messages are whole (a YAML error keeps the lines that point at the mistake); anything else
    // is cut to its first line, with the stack under TETHER_DEBUG.
    process.stderr.write(`error: ${error instanceof CliError ? message : message.split('\n')[0]}\n`)
    if (process.env.TETHER_DEBUG && error instanceof Error && !(error instanceof CliError)) {
      process.stderr.write(`${error.stack}\n`)
    }
    return error instanceof CliError ? error.exitCode : 1
  }
}
