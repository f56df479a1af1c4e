/** `tether policy check`: how a policy judges a command or a path, with the judged tree. A query: exit 0. */
import type { Command } from 'commander'
import type { Act, Policy, Verdict } from '../../policy/index.js'
import { print, printJson } from '../context.js'
import { CliError } from '../errors.js'

interface CheckOptions {
  policy?: string
  json?: boolean
  read: string[]
  write: string[]
  net: string[]
}

const collect = (value: string, previous: string[]): string[] => [...previous, value]

export function registerPolicy(program: Command): void {
  const policy = program.command('policy').description('Inspect policies.')
  policy
    .command('check')
    .description(
      'Show how a policy judges a command (after --) or a read/write/net target, and why. ' +
        'Exits 0 whatever the verdict; 1 when the policy file is invalid.',
    )
    .argument('[argv...]', 'the command to judge, program first (put it after --)')
    .option(
      '--policy <file>',
      "a policy file (JSON or YAML); default: TETHER_POLICY, else your profile's policy, else the tiered preset",
    )
    .option('--read <path>', 'judge reading this workspace path (repeatable)', collect, [])
    .option('--write <path>', 'judge writing this workspace path (repeatable)', collect, [])
    .option('--net <host[:port]>', 'judge connecting to this host (repeatable)', collect, [])
    .option('--json', 'print the verdicts as JSON')
    .addHelpText(
      'after',
      '\nExample:\n  tether policy check --policy policy.yaml -- git -c core.pager=less log',
    )
    .action(async (argv: string[], options: CheckOptions) => {
      const targets: Array<[Act, string]> = [
        ...options.read.map((path): [Act, string] => ['read', path]),
        ...options.write.map((path): [Act, string] => ['write', path]),
        ...options.net.map((host): [Act, string] => ['net', host]),
      ]
      if (argv.length === 0 && targets.length === 0) {
        throw new CliError(
          'nothing to check: give a command after -- (e.g. -- git status) or --read/--write/--net',
        )
      }
      const { Policy, renderExecVerdict } = await import('../../policy/index.js')
      const chosen = (await loadPolicy(options.policy)) ?? Policy.tiered()
      const verdicts: Verdict[] = targets.map(([act, target]) => chosen.check(act, target))
      const exec = argv.length > 0 ? chosen.checkExec(argv) : undefined
      if (options.json) {
        printJson(exec ? [exec, ...verdicts] : verdicts)
        return
      }
      if (exec) print(renderExecVerdict(exec))
      for (const verdict of verdicts) print(`${verdict.effect}: ${verdict.reason}`)
    })
}

/**
 * The policy file a command uses: the flag's, else TETHER_POLICY's, else the profile's (said on stderr, so
 * nobody is surprised by a policy they did not name); undefined when none is set.
 */
export async function loadPolicy(flag: string | undefined): Promise<Policy | undefined> {
  let file = flag
  if (!file) {
    const { userSettings } = await import('../connect.js')
    const settings = userSettings()
    file = settings.policy
    if (file) process.stderr.write(`policy: ${file} (${settings.sources.policy})\n`)
  }
  if (!file) return undefined
  const { loadPolicyFile, PolicyError } = await import('../../policy/index.js')
  try {
    return await loadPolicyFile(file)
  } catch (error) {
    if (error instanceof PolicyError) throw new CliError(error.message)
    throw error
  }
}
