/** Policy files, remembered rules and `tether policy check`. */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa } from 'execa'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadPolicyFile, PolicyError, parsePolicyText, rememberRule } from '../../../src/policy/index.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-policy-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, text)
  return path
}

async function loadError(path: string): Promise<PolicyError> {
  const error = await loadPolicyFile(path).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(PolicyError)
  return error as PolicyError
}

const YAML_POLICY = `# team policy
preset: tiered
include: [read-only]
identity: unsigned
approvers: [alice, bob]
layers:
  - name: ops
    rules:
      - act: exec
        effect: deny
        pattern: "git push*"
        match: ["git push origin main", "env git push", "sh -c 'git status && git push'"]
        not_match: ["git status"]
      - { act: net, effect: allow, pattern: registry.npmjs.org }
`

describe('policy files', () => {
  it('loads YAML and JSON (by extension or content) into the same policy', async () => {
    const fromYaml = await loadPolicyFile(await file('policy.yaml', YAML_POLICY))
    const json = JSON.stringify(fromYaml.toSpec())
    const fromJson = await loadPolicyFile(await file('policy.json', json))
    const sniffed = await loadPolicyFile(await file('policy.conf', json))
    expect(fromJson.toSpec()).toEqual(fromYaml.toSpec())
    expect(sniffed.toSpec()).toEqual(fromYaml.toSpec())
    expect(fromYaml.approvers).toEqual(['alice', 'bob'])
    expect(fromYaml.checkExec(['git', 'push']).effect).toBe('deny')
    expect(fromYaml.checkExec(['ls']).effect).toBe('allow')
    expect(fromYaml.check('net', 'registry.npmjs.org:443').effect).toBe('allow')
  })

  it('names the file, the field and what was expected', async () => {
    const error = await loadError(
      await file(
        'bad.yaml',
        'preset: tiered\nlayers:\n  - name: x\n    rules:\n      - { act: exec, effect: perhaps, pattern: a }\n',
      ),
    )
    expect(error.message).toBe(
      `${join(dir, 'bad.yaml')}: layers[0].rules[0].effect: expected one of "allow", "ask", "deny"`,
    )
    expect(error.field).toBe('layers[0].rules[0].effect')
    expect(error.file).toBe(join(dir, 'bad.yaml'))
  })

  it('reports unknown fields, syntax errors, empty files and missing files', async () => {
    expect((await loadError(await file('extra.json', '{"preset":"tiered","layer":[]}'))).message).toMatch(
      /extra\.json: \(the policy itself\): unknown field "layer"/,
    )
    expect((await loadError(await file('broken.json', '{"preset":'))).message).toMatch(
      /broken\.json: not valid JSON/,
    )
    expect((await loadError(await file('broken.yaml', 'layers: [\n'))).message).toMatch(
      /broken\.yaml: not valid YAML/,
    )
    expect((await loadError(await file('empty.yaml', ''))).message).toMatch(
      /empty\.yaml: \(the policy itself\): expected object/,
    )
    expect((await loadError(join(dir, 'missing.yaml'))).message).toMatch(
      /missing\.yaml: cannot read the policy file \(no such file\)/,
    )
  })

  it('refuses a file whose rule examples do not hold', async () => {
    const text = YAML_POLICY.replace(
      'not_match: ["git status"]',
      'not_match: ["git status", "/usr/bin/git push"]',
    )
    const error = await loadError(await file('examples.yaml', text))
    expect(error.field).toBe('layers[0].rules[0].not_match[1]')
    expect(error.message).toContain('should not decide "/usr/bin/git push"')
  })

  it('parses text without touching the disk', () => {
    expect(parsePolicyText('{"preset":"strict"}', 'inline.json').checkExec(['ls']).effect).toBe('deny')
  })
})

describe('the example policies', () => {
  const examples = new URL('../../../examples/policies/', import.meta.url)

  it('all load, with every rule example holding', async () => {
    const names = await readdir(examples)
    expect(names.length).toBeGreaterThanOrEqual(3)
    for (const name of names)
      await expect(loadPolicyFile(new URL(name, examples).pathname)).resolves.toBeDefined()
  })

  it('judge as their comments say', async () => {
    const team = await loadPolicyFile(new URL('team.yaml', examples).pathname)
    expect(team.checkExec(['npm', 'test']).effect).toBe('allow')
    expect(team.checkExec(['git', 'log']).effect).toBe('allow')
    expect(team.checkExec(['sh', '-c', 'npm test && git push']).effect).toBe('deny')
    expect(team.check('write', 'src/a.ts').effect).toBe('allow')
    expect(team.check('write', 'src/.env').effect).toBe('deny')
    const gate = await loadPolicyFile(new URL('gate.json', examples).pathname)
    expect(gate.checkExec(['npm', 'test']).effect).toBe('allow')
    expect(gate.checkExec(['npm', 'test', '--', '-u']).effect).toBe('deny')
    const sandbox = await loadPolicyFile(new URL('sandbox.yaml', examples).pathname)
    expect(sandbox.checkExec(['make', 'all']).effect).toBe('allow')
    expect(sandbox.checkExec(['sh', '-c', 'eval "$x"']).effect).toBe('ask')
    expect(sandbox.checkExec(['sh', '-c', 'eval "ssh $host"']).effect).toBe('deny')
  })
})

describe('remembered rules: never broader than what was approved', () => {
  it.each([
    // [argv, exact, wider offered]
    [['npm', 'test'], 'npm test', 'npm test*'],
    [['cargo', 'build', '--release'], 'cargo build --release', 'cargo build*'],
    [['go', 'test', './...'], 'go test ./...', 'go test*'],
    [['git', 'status', '--short'], 'git status --short', 'git status*'],
    [['./gradlew', 'test'], './gradlew test', './gradlew test*'],
    // The arguments choose what runs, is deleted, installed or sent: exactly this, or nothing.
    [['git', 'push', 'origin', 'feature'], 'git push origin feature', undefined],
    [['git', 'clean', '-n'], 'git clean -n', undefined],
    [['git', '-C', 'repo', 'log'], 'git -C repo log', undefined],
    [['npm', 'run', 'build'], 'npm run build', undefined],
    [['npm', 'publish'], 'npm publish', undefined],
    [['npm', 'install', 'left-pad'], 'npm install left-pad', undefined],
    [['cargo', 'run'], 'cargo run', undefined],
    [['docker', 'build', '.'], 'docker build .', undefined],
    [['rm', 'build.log'], 'rm build.log', undefined],
    [['pytest', 'tests/unit'], 'pytest tests/unit', undefined],
    [['ls', '-la'], 'ls -la', undefined],
  ])('%j is remembered as %j (wider: %j)', (argv, exact, wider) => {
    expect(rememberRule('exec', argv)).toEqual({ ok: true, act: 'exec', exact, ...(wider ? { wider } : {}) })
  })

  it('an exact rule allows the approved command and nothing else', async () => {
    const { Policy } = await import('../../../src/policy/index.js')
    const remembered = rememberRule('exec', ['git', 'push', 'origin', 'feature'])
    expect(remembered.ok).toBe(true)
    const policy = Policy.tiered()
      .layer('remembered')
      .allowExec(remembered.ok ? remembered.exact : '')
    expect(policy.checkExec(['git', 'push', 'origin', 'feature']).effect).toBe('allow')
    expect(policy.checkExec(['git', 'push', '--force', 'origin', 'main']).effect).toBe('ask')
    expect(policy.checkExec(['git', 'push', 'origin', 'feature', '--force']).effect).toBe('ask')
  })

  it.each([
    [['sh', '-c', 'npm test']],
    [['bash', 'build.sh']],
    [['python3', 'x.py']],
    [['node', 'x.js']],
    [['ruby', 'x.rb']],
    [['perl', 'x.pl']],
    [['php', 'x.php']],
    [['deno', 'run', 'x.ts']],
    [['bun', 'x.ts']],
    [['env', 'npm', 'test']],
    [['sudo', 'apt', 'update']],
    [['doas', 'ls']],
    [['xargs', 'rm']],
    [['git']],
    [['git', '-c', 'core.pager=less', 'log']],
    [['npx', 'vitest']],
    [['ls', '*.ts']],
    [['git', 'push', 'origin main']],
    [['r\u200bm']],
  ])('%j is refused, with a reason', (argv) => {
    const remembered = rememberRule('exec', argv)
    expect(remembered.ok).toBe(false)
    expect(remembered.ok === false && remembered.reason.length).toBeGreaterThan(10)
  })

  it('refuses every program the analysis unwraps or reads code for: the list cannot drift from it', async () => {
    const { analyseArgv, handledPrograms } = await import('../../../src/commands/index.js')
    const remembered: string[] = []
    for (const name of handledPrograms()) {
      const nodes = analyseArgv([name, 'true'])
      const runsOthers = nodes[0]?.kind === 'wrapper' || nodes.some((node) => node.interpreter)
      if (runsOthers && rememberRule('exec', [name, 'true']).ok) remembered.push(name)
    }
    expect(remembered).toEqual([])
    for (const name of ['nodemon', 'concurrently', 'fakeroot', 'entr', 'strace', 'unshare', 'xvfb-run']) {
      expect(rememberRule('exec', [name, 'make']).ok, name).toBe(false)
    }
  })

  it('paths and hosts are remembered exactly', () => {
    expect(rememberRule('write', 'src/./a.ts')).toEqual({ ok: true, act: 'write', exact: 'src/a.ts' })
    expect(rememberRule('net', 'Registry.npmjs.org:443')).toEqual({
      ok: true,
      act: 'net',
      exact: 'registry.npmjs.org:443',
    })
    expect(rememberRule('read', 'src/*').ok).toBe(false)
  })
})

describe('tether policy check', () => {
  const cli = (args: string[]) =>
    execa('node', ['--import', 'tsx', 'src/cli/bin.ts', 'policy', 'check', ...args], {
      reject: false,
      cwd: process.cwd(),
    })

  it('prints the verdict and the judged tree, exit 0 whatever the verdict', async () => {
    const path = await file('cli.yaml', YAML_POLICY)
    const result = await cli(['--policy', path, '--', 'sh', '-c', 'git status && git push'])
    expect(result.exitCode).toBe(0)
    expect(result.stdout.split('\n')).toEqual([
      'deny: "git push" is denied by rule "git push*" in layer "ops".',
      `  allow wrapper  sh -c 'git status && git push'  -- sh runs a shell script; what it runs is judged.`,
      '    allow command  git status  -- "git status" is allowed: it is on the read-only list (git status).',
      '    deny  command  git push  -- "git push" is denied by rule "git push*" in layer "ops".',
    ])
  })

  it('uses the tiered preset by default, judges --read/--write/--net, and prints JSON', async () => {
    const result = await cli(['--json', '--read', 'config/.env', '--net', 'example.com', '--', 'npm', 'test'])
    expect(result.exitCode).toBe(0)
    const verdicts = JSON.parse(result.stdout) as Array<{ effect: string; act: string }>
    expect(verdicts.map((v) => [v.act, v.effect])).toEqual([
      ['exec', 'ask'],
      ['read', 'deny'],
      ['net', 'deny'],
    ])
  })

  it('exits 1 with one line naming the file and field for a bad policy', async () => {
    const path = await file('cli-bad.json', '{"preset":"tiered","defaults":{"exec":"sometimes"}}')
    const result = await cli(['--policy', path, '--', 'ls'])
    expect(result.exitCode).toBe(1)
    expect(result.stderr.trim()).toBe(`error: ${path}: defaults.exec: expected one of "allow", "ask", "deny"`)
  })
})
