import { describe, expect, it } from 'vitest'
import { describeToolchain, detectEcosystem, detectToolchain } from '../../../src/workspace/index.js'
import { sandbox } from './fixture.js'

/** The toolchain of a workspace of `files`; the ecosystem found from the markers alone must agree. */
async function detect(files: Record<string, string>) {
  const box = await sandbox()
  await box.files(files)
  const toolchain = await detectToolchain(box.root)
  expect(await detectEcosystem(box.root)).toBe(toolchain?.ecosystem)
  return toolchain
}

const packageJson = (scripts: Record<string, string>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name: 'fixture', scripts, ...extra })

describe('detectToolchain', () => {
  it('reads no file it is told not to: what a policy hides from the model stays out of its prompt', async () => {
    const box = await sandbox()
    await box.files({
      'package.json': packageJson(
        { test: 'vitest', lint: 'secret-linter --token=abc' },
        { packageManager: 'pnpm@9' },
      ),
      Makefile: 'check:\n\ttrue\n',
    })
    const asked: string[] = []
    const hidden = await detectToolchain(box.root, (path) => {
      asked.push(path)
      return false
    })
    // The marker still names the ecosystem; nothing read from it shows.
    expect(hidden).toEqual({
      ecosystem: 'node',
      marker: 'package.json',
      manager: 'npm',
      commands: { install: ['npm', 'install'] },
    })
    expect(asked).toEqual(['package.json'])
    const shown = await detectToolchain(box.root, () => true)
    expect(shown).toMatchObject({
      manager: 'pnpm',
      commands: { test: ['pnpm', 'test'], lint: ['pnpm', 'run', 'lint'] },
    })
  })

  it('finds nothing in a workspace without markers', async () => {
    expect(await detect({ 'notes.txt': '' })).toBeUndefined()
  })

  it.each([
    ['package-lock.json', 'npm', ['npm', 'test']],
    ['pnpm-lock.yaml', 'pnpm', ['pnpm', 'test']],
    ['yarn.lock', 'yarn', ['yarn', 'test']],
    ['bun.lockb', 'bun', ['bun', 'run', 'test']],
    ['bun.lock', 'bun', ['bun', 'run', 'test']],
  ])('package.json with %s → %s', async (lockfile, manager, test) => {
    const toolchain = await detect({ 'package.json': packageJson({ test: 'vitest' }), [lockfile]: '' })
    expect(toolchain).toMatchObject({ ecosystem: 'node', marker: 'package.json', manager })
    expect(toolchain?.commands.install).toEqual([manager, 'install'])
    expect(toolchain?.commands.test).toEqual(test)
  })

  it('offers npm scripts only when package.json has them, and not npm’s placeholder test', async () => {
    const bare = await detect({
      'package.json': packageJson({ test: 'echo "Error: no test specified" && exit 1' }),
    })
    expect(bare?.commands).toEqual({ install: ['npm', 'install'] })
    const full = await detect({
      'package.json': packageJson({
        build: 'tsc',
        test: 'vitest',
        lint: 'biome check .',
        typecheck: 'tsc --noEmit',
      }),
    })
    expect(full?.commands).toEqual({
      install: ['npm', 'install'],
      build: ['npm', 'run', 'build'],
      test: ['npm', 'test'],
      lint: ['npm', 'run', 'lint'],
      typecheck: ['npm', 'run', 'typecheck'],
    })
  })

  it('uses the packageManager field without a lockfile, and tsc for a TypeScript project without a typecheck script', async () => {
    const toolchain = await detect({
      'package.json': packageJson(
        {},
        { packageManager: 'pnpm@9.1.0', devDependencies: { typescript: '5.9.3' } },
      ),
      'tsconfig.json': '{}',
    })
    expect(toolchain?.manager).toBe('pnpm')
    expect(toolchain?.commands.typecheck).toEqual(['pnpm', 'exec', 'tsc', '--noEmit'])
  })

  it.each([
    [
      { 'pyproject.toml': '[project]\nname = "x"\n', 'uv.lock': '' },
      'uv',
      ['uv', 'run', 'pytest'],
      ['uv', 'sync'],
    ],
    [
      { 'pyproject.toml': '[tool.poetry]\nname = "x"\n', 'poetry.lock': '' },
      'poetry',
      ['poetry', 'run', 'pytest'],
      ['poetry', 'install'],
    ],
    [
      { 'pyproject.toml': '[project]\nname = "x"\n' },
      'pip',
      ['python3', '-m', 'pytest'],
      ['python3', '-m', 'pip', 'install', '-e', '.'],
    ],
    [
      { 'requirements.txt': 'requests\n' },
      'pip',
      ['python3', '-m', 'pytest'],
      ['python3', '-m', 'pip', 'install', '-r', 'requirements.txt'],
    ],
  ])('python %# → %s', async (files, manager, test, install) => {
    const toolchain = await detect(files)
    expect(toolchain).toMatchObject({ ecosystem: 'python', manager })
    expect(toolchain?.commands.test).toEqual(test)
    expect(toolchain?.commands.install).toEqual(install)
  })

  it('adds ruff for a python project that configures it', async () => {
    const toolchain = await detect({ 'pyproject.toml': '[tool.ruff]\nline-length = 100\n', 'uv.lock': '' })
    expect(toolchain?.commands.lint).toEqual(['uv', 'run', 'ruff', 'check', '.'])
  })

  it.each([
    ['Cargo.toml', 'rust', 'cargo', ['cargo', 'test']],
    ['go.mod', 'go', 'go', ['go', 'test', './...']],
    ['pom.xml', 'jvm', 'maven', ['mvn', '-B', 'test']],
    ['build.gradle', 'jvm', 'gradle', ['gradle', 'test']],
    ['build.gradle.kts', 'jvm', 'gradle', ['gradle', 'test']],
    ['Gemfile', 'ruby', 'bundler', ['bundle', 'exec', 'rake', 'test']],
    ['mix.exs', 'elixir', 'mix', ['mix', 'test']],
    ['composer.json', 'php', 'composer', undefined],
    ['Package.swift', 'swift', 'swiftpm', ['swift', 'test']],
    ['CMakeLists.txt', 'cmake', 'cmake', ['ctest', '--test-dir', 'build']],
    ['deno.json', 'deno', 'deno', ['deno', 'test']],
  ])('%s → %s (%s)', async (marker, ecosystem, manager, test) => {
    const toolchain = await detect({ [marker]: marker.endsWith('.json') ? '{}' : '' })
    expect(toolchain).toMatchObject({ ecosystem, marker, manager })
    expect(toolchain?.commands.test).toEqual(test)
  })

  it('prefers the wrapper scripts of maven and gradle when the project has them', async () => {
    expect((await detect({ 'pom.xml': '', mvnw: '' }))?.commands.test).toEqual(['./mvnw', '-B', 'test'])
    expect((await detect({ 'build.gradle': '', gradlew: '' }))?.commands.test).toEqual(['./gradlew', 'test'])
  })

  it('reads composer scripts, the rspec layout and Makefile targets', async () => {
    const composer = await detect({
      'composer.json': JSON.stringify({ scripts: { test: 'phpunit', lint: 'phpcs' } }),
    })
    expect(composer?.commands).toMatchObject({ test: ['composer', 'test'], lint: ['composer', 'lint'] })
    const rspec = await detect({ Gemfile: "gem 'rubocop'\n", '.rspec': '' })
    expect(rspec?.commands).toMatchObject({
      test: ['bundle', 'exec', 'rspec'],
      lint: ['bundle', 'exec', 'rubocop'],
    })
    const make = await detect({ Makefile: 'all: build\n\ntest: all\n\tgo test\nlint:\n\tvet\nCC := gcc\n' })
    expect(make?.commands).toEqual({ build: ['make'], test: ['make', 'test'], lint: ['make', 'lint'] })
    expect((await detect({ Makefile: 'all:\n\tcc x.c\n' }))?.commands).toEqual({ build: ['make'] })
  })

  it('detects .NET from a solution, else a project file', async () => {
    const solution = await detect({ 'App.sln': '', 'src/App.csproj': '', 'Lib.fsproj': '' })
    expect(solution).toMatchObject({ ecosystem: 'dotnet', marker: 'App.sln' })
    const project = await detect({ 'Lib.fsproj': '' })
    expect(project).toMatchObject({
      ecosystem: 'dotnet',
      marker: 'Lib.fsproj',
      commands: { test: ['dotnet', 'test'] },
    })
  })

  it('takes the first marker in order: Cargo.toml before package.json before Makefile', async () => {
    expect((await detect({ 'Cargo.toml': '', 'package.json': '{}', Makefile: '' }))?.ecosystem).toBe('rust')
    expect((await detect({ 'package.json': '{}', Makefile: '' }))?.ecosystem).toBe('node')
  })
})

describe('describeToolchain', () => {
  it('names the project and its commands, and says they are unverified defaults', async () => {
    const toolchain = await detect({
      'package.json': packageJson({ test: 'vitest', build: 'tsc' }),
      'pnpm-lock.yaml': '',
    })
    expect(describeToolchain(toolchain!)).toBe(
      [
        'Project: node (marker file package.json; runs with pnpm).',
        'Likely commands — unverified defaults guessed from marker files; check the project (scripts, README, CI) before relying on them:',
        '- install: pnpm install',
        '- build: pnpm run build',
        '- test: pnpm test',
      ].join('\n'),
    )
  })
})
