/**
 * The `tether` command. Each subcommand lives in `commands/` and registers itself on the program; this file
 * only assembles them and turns any failure into one clear line and a non-zero exit.
 *
 * Start-up is part of the interface: a command line loads only the module of the command it names (all of
 * them for help, completion or a word tether does not know; none for `--version`), registering a command
 * loads only commander and the words of its help, and a command loads what it needs (Temporal's SDK, the
 * audit, the policy engine) when it runs — so `tether --help` costs little more than Node itself, and
 * `tether ls` does not load Temporal.
 */
import { Command, CommanderError, Help, type Option } from 'commander'
import { packageVersion } from '../stack/index.js'
import { chooseProfile } from './context.js'
import { CliError, EXIT } from './errors.js'

/** A subcommand module adds its commands to the program; list each one here. */
export type Register = (program: Command) => void

interface CommandModule {
  /** The top-level commands it registers. */
  names: readonly string[]
  load: () => Promise<Register>
  /** It needs every other command registered too (a completion script lists them all). */
  needsAll?: true
}

/** In the order `tether --help` lists them. */
const MODULES: readonly CommandModule[] = [
  { names: ['dev'], load: async () => (await import('./commands/dev.js')).registerDev },
  {
    names: ['run', 'ls', 'show', 'cancel'],
    load: async () => (await import('./commands/runs.js')).registerRuns,
  },
  {
    names: ['rewind', 'diff', 'checkout', 'snapshots'],
    load: async () => (await import('./commands/snapshots.js')).registerSnapshots,
  },
  {
    names: ['approvals', 'approve', 'deny', 'keys'],
    load: async () => (await import('./commands/approvals.js')).registerApprovals,
  },
  { names: ['inbox'], load: async () => (await import('./commands/inbox.js')).registerInbox },
  { names: ['audit'], load: async () => (await import('./commands/audit.js')).registerAudit },
  { names: ['db'], load: async () => (await import('./commands/db.js')).registerDb },
  { names: ['policy'], load: async () => (await import('./commands/policy.js')).registerPolicy },
  {
    names: ['completion'],
    load: async () => (await import('./commands/completion.js')).registerCompletion,
    needsAll: true,
  },
  { names: ['mcp'], load: async () => (await import('./commands/mcp.js')).registerMcp },
]

/**
 * The command modules `argv` needs: the one of the command it names (after the global `--profile`); every
 * one when it names none that tether has, asks for help or completion (which list them all); none when it
 * only asks for the version.
 */
export function modulesFor(argv: readonly string[]): readonly CommandModule[] {
  if (argv.length === 1 && (argv[0] === '-V' || argv[0] === '--version')) return []
  let word: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--profile') i++
    else if (!arg.startsWith('--profile=')) {
      word = arg
      break
    }
  }
  const named = MODULES.find((module) => word !== undefined && module.names.includes(word))
  return named && !named.needsAll ? [named] : MODULES
}

const EXIT_HELP = `
Exit status:
  ${EXIT.ok}  done (a query such as \`policy check\` exits 0 whatever it finds)
  ${EXIT.error}  an error, said in one line on stderr; or a check that failed (\`audit verify\`, \`audit approvals --verify\`)
  ${EXIT.usage}  a usage error: an unknown command or option, a missing argument
  ${EXIT.runFailed}  a followed run (\`run --follow\`, \`show --follow\`) ended without success: its outcome is on the last line

Settings: flags, then variables, then the profile of ~/.config/tether/config.toml (--profile, TETHER_PROFILE).`

export function buildProgram(registrations: readonly Register[]): Command {
  const program = new Command('tether')
    .description(
      'A coding agent that runs as a durable Temporal workflow, with policy, approvals and an audit.',
    )
    .version(packageVersion(), '-V, --version', "print tether's version")
    .option(
      '--profile <name>',
      'the profile of your settings file to use (default: TETHER_PROFILE, else "default")',
    )
    .showHelpAfterError('(run with --help for usage)')
    // Commander's help does not say which options a command cannot run without; subcommands inherit this.
    .configureHelp({ optionDescription: describeOption })
    .addHelpText('after', EXIT_HELP)
    .exitOverride()
  program.hook('preAction', () => chooseProfile((program.opts() as { profile?: string }).profile))
  for (const register of registrations) register(program)
  return program
}

const plainHelp = new Help()
function describeOption(option: Option): string {
  const described = plainHelp.optionDescription(option)
  return option.mandatory ? `${described} (required)` : described
}

/** Runs the command line as the `tether` process: its exit code, and the process-wide settings a terminal wants. */
export async function runProcess(argv: readonly string[]): Promise<void> {
  // Node's deprecation notices are for tether's developers, not the person at the terminal (grpc-js, for one,
  // sends an IP address as the TLS server name, which Node warns about on every TLS connection to an IP).
  process.noDeprecation = true
  // A reader that stops reading (`tether ls | head`) ends the command quietly, as other programs do.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0)
    throw error
  })
  process.exitCode = await runCli(argv)
}

/** The program with the commands `argv` needs registered. */
export async function loadProgram(argv: readonly string[]): Promise<Command> {
  return buildProgram(await Promise.all(modulesFor(argv).map((module) => module.load())))
}

export async function runCli(argv: readonly string[]): Promise<number> {
  const program = await loadProgram(argv)
  try {
    await program.parseAsync([...argv], { from: 'user' })
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has already printed help or the usage error.
      return error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
        ? EXIT.ok
        : EXIT.usage
    }
    const message = error instanceof Error ? error.message : String(error)
    // Our own messages are whole (a YAML error keeps the lines that point at the mistake); anything else
    // is cut to its first line, with the stack under TETHER_DEBUG.
    process.stderr.write(`error: ${error instanceof CliError ? message : message.split('\n')[0]}\n`)
    if (process.env.TETHER_DEBUG && error instanceof Error && !(error instanceof CliError)) {
      process.stderr.write(`${error.stack}\n`)
    }
    return error instanceof CliError ? error.exitCode : EXIT.error
  }
}
