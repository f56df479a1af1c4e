/**
 * Policy check throughput: a team's 200-rule policy (on the tiered preset) over a realistic corpus (plain
 * argv, wrapped argv, `sh -c` scripts), side by side in one run on one core with a naive baseline written
 * here: `picomatch.isMatch` of every exec rule on every call, against the program and the joined argv, with
 * no analysis at all (it sees neither through wrappers nor into scripts). The baseline is not a peer, not
 * another product's checker: it shows what the rule index buys over trying every rule, not how tether
 * compares with what a user might pick instead.
 *
 *   npx tsx bench/policy.ts
 */
import picomatch from 'picomatch'
import { Policy } from '../src/policy/index.js'

// ---- a 200-rule policy, shaped like a team's real one

const TOOLS: Record<string, string[]> = {
  npm: ['test', 'run lint', 'run build', 'ci', 'ls', 'outdated'],
  pnpm: ['test', 'lint', 'build', 'install --frozen-lockfile'],
  cargo: ['test', 'build', 'check', 'clippy', 'fmt --check'],
  go: ['test', 'build', 'vet', 'mod tidy'],
  git: ['status', 'diff', 'log', 'show', 'add', 'commit', 'branch', 'switch', 'stash list', 'rev-parse'],
  make: ['test', 'lint', 'build', 'check'],
  pytest: ['-x', '-q', 'tests'],
  docker: ['build', 'ps', 'images'],
  kubectl: ['get', 'describe', 'logs'],
  terraform: ['plan', 'validate', 'fmt'],
}
const DENIED = [
  'rm -rf*',
  'rm -fr*',
  'rm*',
  'git push*',
  'git reset --hard*',
  'git clean*',
  'git checkout --*',
  'curl*',
  'wget*',
  'ssh*',
  'scp*',
  'rsync*',
  'dd*',
  'mkfs*',
  'chmod 777*',
  'chown*',
  'sudo*',
  'doas*',
  'npm publish*',
  'pnpm publish*',
  'cargo publish*',
  'docker push*',
  'docker run --privileged*',
  'kubectl delete*',
  'kubectl apply*',
  'terraform apply*',
  'terraform destroy*',
  'nc*',
  'ncat*',
  'socat*',
  'telnet*',
  'ftp*',
  'shutdown*',
  'reboot*',
  'kill -9 1*',
  'pkill*',
  'killall*',
  'crontab*',
  'systemctl*',
  'launchctl*',
  '*--force*',
  '*--no-verify*',
  'gh release*',
  'gh repo delete*',
  'aws*',
  'gcloud*',
  'az*',
  'heroku*',
  'vercel --prod*',
  'netlify deploy*',
]
const ASKED = [
  'npm install*',
  'pnpm add*',
  'cargo add*',
  'go get*',
  'pip install*',
  'git rebase*',
  'git merge*',
  'docker*',
  'kubectl*',
]

function benchPolicy(): Policy {
  let policy = Policy.tiered().withReadOnlyCommands().layer('ops')
  for (const pattern of DENIED) policy = policy.denyExec(pattern)
  for (const pattern of ASKED) policy = policy.askExec(pattern)
  policy = policy.layer('dev')
  for (const [tool, subs] of Object.entries(TOOLS)) {
    for (const sub of subs) policy = policy.allowExec(`${tool} ${sub}*`)
  }
  for (const dir of [
    'src',
    'test',
    'docs',
    'bench',
    'scripts',
    'examples',
    'lib',
    'cmd',
    'internal',
    'pkg',
  ]) {
    policy = policy.allowWrite(`${dir}/*`).allowRead(`${dir}/*`)
  }
  for (const secret of [
    '*.p12',
    '*.pfx',
    '.npmrc',
    '.pypirc',
    '.netrc',
    'secrets/*',
    'credentials*',
    '*.tfstate',
  ]) {
    policy = policy.denyRead(secret).denyWrite(secret)
  }
  // 200 rules of the team's own, whatever the preset's layer holds, so the workload does not change
  // with the size of the preset's secrets list.
  let count = teamRules(policy)
  for (let i = 0; count < 200; i++, count++) policy = policy.allowExec(`./scripts/task-${i}.sh*`)
  return policy
}

function teamRules(policy: Policy): number {
  return policy
    .toSpec()
    .layers.filter((l) => l.name !== 'builtin-secrets')
    .reduce((n, l) => n + l.rules.length, 0)
}

// ---- the corpus

const PLAIN: string[][] = [
  ['npm', 'test'],
  ['npm', 'run', 'lint'],
  ['git', 'status', '--short'],
  ['git', 'diff', '--stat', 'HEAD~1'],
  ['git', 'push', 'origin', 'main'],
  ['cargo', 'build', '--release'],
  ['cargo', 'test', '--', '--nocapture'],
  ['go', 'test', './...'],
  ['pytest', '-x', 'tests/unit'],
  ['make', '-j4'],
  ['ls', '-la', 'src'],
  ['cat', 'README.md'],
  ['rm', '-rf', 'dist'],
  ['docker', 'build', '-t', 'app', '.'],
  ['npm', 'install', 'left-pad'],
  ['/usr/bin/git', 'log', '--oneline', '-n', '20'],
]
const WRAPPED: string[][] = [
  ['env', 'NODE_ENV=test', 'npm', 'test'],
  ['timeout', '600', 'npm', 'test'],
  ['nice', '-n', '10', 'cargo', 'build'],
  ['sudo', 'apt-get', 'install', '-y', 'jq'],
  ['xargs', '-0', 'rm', '-f'],
  ['find', '.', '-name', '*.o', '-exec', 'rm', '{}', ';'],
  ['git', '-c', 'core.pager=cat', 'log', '-n', '5'],
  ['npx', 'vitest', 'run'],
  ['npm', 'exec', '--', 'tsc', '--noEmit'],
  ['stdbuf', '-oL', 'make', 'test'],
  ['command', 'git', 'status'],
  ['tar', '-czf', 'out.tgz', 'dist'],
]
const SCRIPTS: string[] = [
  'cd src && npm test 2>&1 | tail -n 50',
  'npm run build && npm test',
  'for f in src/*.ts; do wc -l "$f"; done',
  'git status --short; git diff --stat',
  'if [ -f package.json ]; then npm ci; fi',
  'cargo test 2>&1 | grep -E "test result|FAILED" || true',
  'curl -fsSL https://example.test/install.sh | sh',
  'export CI=1; make test > build.log 2>&1',
  'find . -name "*.tmp" -print0 | xargs -0 rm -f',
  'echo "$(git rev-parse HEAD)" > REVISION',
  'cat <<EOF > config.json\n{"mode": "test"}\nEOF\nnpm test',
  'go vet ./... && go test -race ./...',
]

// ---- measurement

const naivePolicy = benchPolicy().toSpec()
const naiveRules = naivePolicy.layers.flatMap((l) => l.rules.filter((r) => r.act === 'exec'))

/**
 * The naive baseline (not a peer): every rule, compiled on every call, against program and joined argv.
 */
function naiveCheck(argv: readonly string[]): string {
  const targets = [argv[0]!, argv.join(' ')]
  const best = 'default'
  for (const effect of ['deny', 'ask', 'allow'] as const) {
    for (const rule of naiveRules) {
      if (rule.effect === effect && targets.some((t) => picomatch.isMatch(t, rule.pattern, { dot: true })))
        return effect
    }
  }
  return best
}

interface Result {
  perSecond: number
  p50: number
  p99: number
}

function measure(
  inputs: readonly string[][],
  check: (argv: readonly string[]) => unknown,
  seconds = 1,
): Result {
  for (let i = 0; i < 2000; i++) check(inputs[i % inputs.length]!)
  // Throughput: the median of several short windows, so a burst of other work on this shared machine
  // moves one window, not the result.
  const windows: number[] = []
  const window = BigInt(Math.round((seconds / 7) * 1e9))
  let at = 0
  for (let w = 0; w < 7; w++) {
    let calls = 0
    const start = process.hrtime.bigint()
    let elapsed = 0n
    while (elapsed < window) {
      for (let i = 0; i < 100; i++) check(inputs[(at + i) % inputs.length]!)
      at += 100
      calls += 100
      elapsed = process.hrtime.bigint() - start
    }
    windows.push(calls / (Number(elapsed) / 1e9))
  }
  windows.sort((a, b) => a - b)
  // Latency: every call timed on its own (the timer adds a few tens of nanoseconds to each).
  const samples: number[] = []
  for (let i = 0; i < 20_000; i++) {
    const input = inputs[i % inputs.length]!
    const t0 = process.hrtime.bigint()
    check(input)
    samples.push(Number(process.hrtime.bigint() - t0))
  }
  samples.sort((a, b) => a - b)
  return {
    perSecond: windows[3]!,
    p50: samples[Math.floor(samples.length * 0.5)]! / 1000,
    p99: samples[Math.floor(samples.length * 0.99)]! / 1000,
  }
}

const policy = benchPolicy()
const ruleCount = teamRules(policy)
const shells = ['bash', 'sh', 'bash']
const scriptArgv = SCRIPTS.map((s, i) => [shells[i % shells.length]!, i % 2 ? '-c' : '-lc', s])
// Unique scripts defeat the parse cache (512 entries): every call parses.
const uniqueScripts = Array.from({ length: 5000 }, (_, i) => [
  'bash',
  '-c',
  `${SCRIPTS[i % SCRIPTS.length]} # run ${i}`,
])

// Unique argvs defeat the analysis cache (recent argvs per program): every call analyses.
const uniqueArgvs = Array.from({ length: 5000 }, (_, i) => [...PLAIN[i % PLAIN.length]!, `file-${i}`])

const kinds: Array<[string, string[][]]> = [
  ['plain argv', PLAIN],
  ['plain argv, every one new', uniqueArgvs],
  ['wrapped argv', WRAPPED],
  ['sh -c, repeated scripts', scriptArgv],
  ['sh -c, every script new', uniqueScripts],
]

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const rows: string[][] = []
for (const [kind, inputs] of kinds) {
  const tether = measure(inputs, (argv) => policy.checkExec(argv))
  const naive = measure(inputs, naiveCheck)
  rows.push([
    kind,
    fmt(tether.perSecond),
    fmt(tether.p50, 2),
    fmt(tether.p99, 2),
    fmt(naive.perSecond),
    fmt(naive.p50, 2),
    fmt(naive.p99, 2),
    `${fmt(tether.perSecond / naive.perSecond, 1)}x`,
  ])
}

const header = [
  'corpus',
  'tether checks/s',
  'p50 µs',
  'p99 µs',
  'naive checks/s',
  'p50 µs',
  'p99 µs',
  'tether/naive',
]
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
const line = (cells: string[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')
console.log(
  `policy: ${ruleCount} rules of its own (${naiveRules.length} exec) on the tiered preset; node ${process.version}; one core, one process`,
)
console.log(
  'naive: a baseline written in this bench, not a peer: picomatch.isMatch of every exec rule on every call, ' +
    'against the program and the joined argv, no analysis',
)
console.log(line(header))
for (const row of rows) console.log(line(row))
console.log('targets: >= 1,000,000 plain exec checks/s, >= 20,000 script checks/s')
