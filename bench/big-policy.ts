/**
 * A policy of many rules shaped like a real team's: commands of the usual tools with varied subcommands and
 * arguments, paths under varied folders, hosts of varied services, allowed and denied. Deterministic, so
 * each bench (and test) that asks for N rules gets the same policy. None of its rules matches `true`.
 */
import { Policy } from '../src/policy/index.js'

const TOOLS = [
  'npm run',
  'pnpm',
  'cargo',
  'go test',
  'make',
  'pytest',
  'docker compose',
  'kubectl',
  'terraform',
]
const VERBS = ['build', 'lint', 'check', 'deploy', 'release', 'migrate', 'seed', 'bench', 'e2e', 'watch']
const DENIED = ['git push --force', 'rm -rf', 'curl', 'ssh', 'scp', 'aws s3 rm', 'gcloud', 'helm uninstall']
const FOLDERS = ['src', 'lib', 'pkg', 'internal', 'services', 'apps', 'packages', 'tools', 'docs', 'test']
const HOSTS = ['registry', 'api', 'cdn', 'auth', 'metrics', 'artifacts', 'mirror', 'hooks']

/** Policy.tiered() with a `team` layer of `count` rules on top, then `allowExec('true')` (the benches' command). */
export function policyOfRules(count: number): Policy {
  let policy = Policy.tiered().layer('team')
  for (let i = 0; i < count; i++) {
    const tool = TOOLS[i % TOOLS.length] as string
    const verb = VERBS[Math.floor(i / TOOLS.length) % VERBS.length] as string
    const folder = FOLDERS[i % FOLDERS.length] as string
    switch (i % 6) {
      case 0:
        policy = policy.allowExec(`${tool} ${verb}-${i}*`)
        break
      case 1:
        policy = policy.denyExec(`${DENIED[i % DENIED.length]} ${folder}/${verb}-${i}*`)
        break
      case 2:
        policy = policy.allowWrite(`${folder}/${verb}/module-${i}/*`)
        break
      case 3:
        policy = policy.denyRead(`${folder}/secrets/${verb}-${i}.key`)
        break
      case 4:
        policy = policy.allowRead(`${folder}/${verb}/fixtures-${i}/*`)
        break
      default:
        policy = policy.allowNet(`${HOSTS[i % HOSTS.length]}-${i}.${verb}.example.com`)
    }
  }
  return policy.allowExec('true')
}
