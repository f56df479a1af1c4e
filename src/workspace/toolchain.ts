/**
 * What kind of project the workspace is, from marker files at its root, and the commands such a project
 * usually builds and tests with. These are guesses for the system prompt, stated as unverified: the agent
 * still runs them through `exec` under the policy, and a run's verification command is never taken from
 * here without the CLI deciding so.
 */
import { readdir } from 'node:fs/promises'
import { packageScripts, stringRecord } from '../commands/index.js'
import { formatArgv } from '../present/index.js'
import { hasEntry, readWorkspaceText } from './io.js'

export type ToolchainCommand = 'install' | 'configure' | 'build' | 'test' | 'lint' | 'typecheck' | 'format'

export interface Toolchain {
  /** `rust`, `node`, `deno`, `go`, `python`, `jvm`, `elixir`, `ruby`, `php`, `swift`, `cmake`, `make`, `dotnet`. */
  ecosystem: string
  /** The marker file at the workspace root that decided it. */
  marker: string
  /** The tool that runs the commands: `cargo`, `npm`, `pnpm`, `yarn`, `bun`, `uv`, `poetry`, `pip`, … */
  manager: string
  /** argv arrays, only for the commands this project plausibly has. */
  commands: Partial<Record<ToolchainCommand, string[]>>
}

type Commands = Toolchain['commands']
/** What a marker's detector finds: the ecosystem is the marker's own (MARKERS). */
type Found = Omit<Toolchain, 'ecosystem'>

function parseJsonObject(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {}
  try {
    const parsed: unknown = JSON.parse(text)
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}

const NODE_LOCKFILES: ReadonlyArray<[string, string]> = [
  ['bun.lockb', 'bun'],
  ['bun.lock', 'bun'],
  ['pnpm-lock.yaml', 'pnpm'],
  ['yarn.lock', 'yarn'],
  ['package-lock.json', 'npm'],
  ['npm-shrinkwrap.json', 'npm'],
]

/** The package manager of a Node project: by lockfile, else by the `packageManager` field, else npm. */
function nodePackageManager(root: string, manifest: Record<string, unknown>): string {
  for (const [file, manager] of NODE_LOCKFILES) if (hasEntry(root, file)) return manager
  const declared =
    typeof manifest.packageManager === 'string' ? manifest.packageManager.split('@')[0] : undefined
  return declared && ['npm', 'pnpm', 'yarn', 'bun'].includes(declared) ? declared : 'npm'
}

async function detectNode(root: string, _marker: string, _ecosystem: string, read: Read): Promise<Found> {
  const manifest = parseJsonObject(read('package.json'))
  const manager = nodePackageManager(root, manifest)
  const scripts = packageScripts(manifest)
  const run = (script: string) => [manager, 'run', script]
  const commands: Commands = { install: [manager, 'install'] }
  if (scripts.build) commands.build = run('build')
  // `bun test` is Bun's own test runner, not the package's test script.
  if (scripts.test) commands.test = manager === 'bun' ? run('test') : [manager, 'test']
  if (scripts.lint) commands.lint = run('lint')
  const typecheck = ['typecheck', 'type-check', 'check-types'].find((name) => scripts[name])
  const dependencies = { ...stringRecord(manifest.dependencies), ...stringRecord(manifest.devDependencies) }
  if (typecheck) commands.typecheck = run(typecheck)
  else if (dependencies.typescript && hasEntry(root, 'tsconfig.json')) {
    const runners: Record<string, string[]> = { pnpm: ['pnpm', 'exec'], yarn: ['yarn'], bun: ['bunx'] }
    const runner = runners[manager] ?? ['npx']
    commands.typecheck = [...runner, 'tsc', '--noEmit']
  }
  if (scripts.format) commands.format = run('format')
  return { marker: 'package.json', manager, commands }
}

async function detectPython(root: string, marker: string, _ecosystem: string, read: Read): Promise<Found> {
  const pyproject = read('pyproject.toml') ?? ''
  const manager = hasEntry(root, 'uv.lock')
    ? 'uv'
    : hasEntry(root, 'poetry.lock') || pyproject.includes('[tool.poetry]')
      ? 'poetry'
      : pyproject.includes('[tool.uv]')
        ? 'uv'
        : 'pip'
  const runners: Record<string, string[]> = { uv: ['uv', 'run'], poetry: ['poetry', 'run'] }
  const runner = runners[manager] ?? ['python3', '-m']
  const install =
    manager === 'uv'
      ? ['uv', 'sync']
      : manager === 'poetry'
        ? ['poetry', 'install']
        : marker === 'requirements.txt'
          ? ['python3', '-m', 'pip', 'install', '-r', 'requirements.txt']
          : ['python3', '-m', 'pip', 'install', '-e', '.']
  const commands: Commands = { install, test: [...runner, 'pytest'] }
  if (pyproject.includes('ruff')) {
    commands.lint = [...runner, 'ruff', 'check', '.']
    commands.format = [...runner, 'ruff', 'format', '.']
  }
  if (pyproject.includes('mypy')) commands.typecheck = [...runner, 'mypy', '.']
  return { marker, manager, commands }
}

/** Targets a Makefile defines at the start of a line (`test:`, `lint: deps`). */
function makeTargets(makefile: string): Set<string> {
  return new Set([...makefile.matchAll(/^([A-Za-z0-9_.-]+)\s*:(?!=)/gm)].map((match) => match[1]!))
}

async function detectMake(_root: string, marker: string, _ecosystem: string, read: Read): Promise<Found> {
  const targets = makeTargets(read(marker) ?? '')
  const commands: Commands = { build: ['make'] }
  const test = ['test', 'check'].find((target) => targets.has(target))
  if (test) commands.test = ['make', test]
  if (targets.has('lint')) commands.lint = ['make', 'lint']
  if (targets.has('format') || targets.has('fmt'))
    commands.format = ['make', targets.has('format') ? 'format' : 'fmt']
  return { marker, manager: 'make', commands }
}

async function detectComposer(
  _root: string,
  _marker: string,
  _ecosystem: string,
  read: Read,
): Promise<Found> {
  const manifest = parseJsonObject(read('composer.json'))
  const scripts = stringRecord(manifest.scripts)
  const requireDev = stringRecord(manifest['require-dev'])
  const commands: Commands = { install: ['composer', 'install'] }
  if (scripts.test !== undefined) commands.test = ['composer', 'test']
  else if (requireDev['phpunit/phpunit'] !== undefined) commands.test = ['vendor/bin/phpunit']
  if (scripts.lint !== undefined) commands.lint = ['composer', 'lint']
  return { marker: 'composer.json', manager: 'composer', commands }
}

async function detectRuby(root: string, _marker: string, _ecosystem: string, read: Read): Promise<Found> {
  const gemfile = read('Gemfile') ?? ''
  const rspec = hasEntry(root, '.rspec') || hasEntry(root, 'spec')
  const commands: Commands = {
    install: ['bundle', 'install'],
    test: rspec ? ['bundle', 'exec', 'rspec'] : ['bundle', 'exec', 'rake', 'test'],
  }
  if (gemfile.includes('rubocop')) commands.lint = ['bundle', 'exec', 'rubocop']
  return { marker: 'Gemfile', manager: 'bundler', commands }
}

async function detectJvm(root: string, marker: string): Promise<Found> {
  if (marker === 'pom.xml') {
    const mvn = hasEntry(root, 'mvnw') ? './mvnw' : 'mvn'
    return {
      marker,
      manager: 'maven',
      commands: {
        install: [mvn, '-B', 'dependency:go-offline'],
        build: [mvn, '-B', 'compile'],
        test: [mvn, '-B', 'test'],
      },
    }
  }
  const gradle = hasEntry(root, 'gradlew') ? './gradlew' : 'gradle'
  return {
    marker,
    manager: 'gradle',
    commands: { build: [gradle, 'assemble'], test: [gradle, 'test'], lint: [gradle, 'check'] },
  }
}

/** Ecosystems with fixed commands, by ecosystem: no file needs reading to choose them. */
const FIXED: Record<string, Omit<Found, 'marker'>> = {
  rust: {
    manager: 'cargo',
    commands: {
      install: ['cargo', 'fetch'],
      build: ['cargo', 'build'],
      test: ['cargo', 'test'],
      lint: ['cargo', 'clippy', '--all-targets'],
      typecheck: ['cargo', 'check'],
      format: ['cargo', 'fmt'],
    },
  },
  deno: {
    manager: 'deno',
    commands: {
      test: ['deno', 'test'],
      lint: ['deno', 'lint'],
      typecheck: ['deno', 'check', '.'],
      format: ['deno', 'fmt'],
    },
  },
  go: {
    manager: 'go',
    commands: {
      install: ['go', 'mod', 'download'],
      build: ['go', 'build', './...'],
      test: ['go', 'test', './...'],
      lint: ['go', 'vet', './...'],
      format: ['gofmt', '-w', '.'],
    },
  },
  elixir: {
    manager: 'mix',
    commands: {
      install: ['mix', 'deps.get'],
      build: ['mix', 'compile'],
      test: ['mix', 'test'],
      lint: ['mix', 'format', '--check-formatted'],
      format: ['mix', 'format'],
    },
  },
  swift: {
    manager: 'swiftpm',
    commands: {
      install: ['swift', 'package', 'resolve'],
      build: ['swift', 'build'],
      test: ['swift', 'test'],
    },
  },
  cmake: {
    manager: 'cmake',
    commands: {
      configure: ['cmake', '-S', '.', '-B', 'build'],
      build: ['cmake', '--build', 'build'],
      test: ['ctest', '--test-dir', 'build'],
    },
  },
  dotnet: {
    manager: 'dotnet',
    commands: {
      install: ['dotnet', 'restore'],
      build: ['dotnet', 'build'],
      test: ['dotnet', 'test'],
      lint: ['dotnet', 'format', '--verify-no-changes'],
      format: ['dotnet', 'format'],
    },
  },
}

async function fixed(_root: string, marker: string, ecosystem: string): Promise<Found> {
  const known = FIXED[ecosystem]!
  return { ...known, marker, commands: structuredClone(known.commands) }
}

/** A workspace-relative file's text, or undefined (missing, unreadable, or not to be read). */
type Read = (relPath: string) => string | undefined

type Detect = (root: string, marker: string, ecosystem: string, read: Read) => Promise<Found>

/**
 * Root marker files in the order they are looked for, with the ecosystem each means; the first one present
 * decides. The ecosystem follows from the marker alone, so it is known without reading a file (exclusions.ts
 * asks for it at every snapshot).
 */
const MARKERS: ReadonlyArray<[string, string, Detect]> = [
  ['Cargo.toml', 'rust', fixed],
  ['deno.json', 'deno', fixed],
  ['deno.jsonc', 'deno', fixed],
  ['package.json', 'node', detectNode],
  ['go.mod', 'go', fixed],
  ['pyproject.toml', 'python', detectPython],
  ['requirements.txt', 'python', detectPython],
  ['pom.xml', 'jvm', detectJvm],
  ['build.gradle', 'jvm', detectJvm],
  ['build.gradle.kts', 'jvm', detectJvm],
  ['mix.exs', 'elixir', fixed],
  ['Gemfile', 'ruby', detectRuby],
  ['composer.json', 'php', detectComposer],
  ['Package.swift', 'swift', fixed],
  ['CMakeLists.txt', 'cmake', fixed],
  ['Makefile', 'make', detectMake],
  ['GNUmakefile', 'make', detectMake],
  ['makefile', 'make', detectMake],
]

const DOTNET_MARKER = /\.(sln|csproj|fsproj)$/

/** The .NET marker at the root: a solution names the whole build, so it is preferred over any one project. */
async function dotnetMarker(root: string): Promise<string | undefined> {
  const names = await readdir(root).catch(() => [] as string[])
  const candidates = names.filter((name) => DOTNET_MARKER.test(name)).sort()
  return candidates.find((name) => name.endsWith('.sln')) ?? candidates[0]
}

/** The marker at the root that decides, its ecosystem and its detector; only names are looked at. */
async function rootMarker(
  root: string,
): Promise<{ marker: string; ecosystem: string; detect: Detect } | undefined> {
  for (const [marker, ecosystem, detect] of MARKERS)
    if (hasEntry(root, marker)) return { marker, ecosystem, detect }
  const marker = await dotnetMarker(root)
  return marker ? { marker, ecosystem: 'dotnet', detect: fixed } : undefined
}

/**
 * Detects the project's toolchain from marker files at the workspace root (only the root is examined).
 * `readable`: whether a file may be read for it (a run's policy: what it does not allow the model to read
 * must not reach the model through its system prompt either); a file that may not is taken as unreadable,
 * and the ecosystem's defaults stand.
 */
export async function detectToolchain(
  root: string,
  readable: (relPath: string) => boolean = () => true,
): Promise<Toolchain | undefined> {
  const found = await rootMarker(root)
  if (!found) return undefined
  const read: Read = (relPath) => (readable(relPath) ? readWorkspaceText(root, relPath) : undefined)
  return { ecosystem: found.ecosystem, ...(await found.detect(root, found.marker, found.ecosystem, read)) }
}

/** The ecosystem `detectToolchain` would name, from which markers exist alone (no file is read). */
export async function detectEcosystem(root: string): Promise<string | undefined> {
  return (await rootMarker(root))?.ecosystem
}

const COMMAND_ORDER: readonly ToolchainCommand[] = [
  'install',
  'configure',
  'build',
  'typecheck',
  'lint',
  'format',
  'test',
]

/** The lines the system prompt shows about the project, stating that the commands are unverified guesses. */
export function describeToolchain(toolchain: Toolchain): string {
  const lines = [
    `Project: ${toolchain.ecosystem} (marker file ${toolchain.marker}; runs with ${toolchain.manager}).`,
    'Likely commands — unverified defaults guessed from marker files; check the project (scripts, README, CI) before relying on them:',
  ]
  for (const kind of COMMAND_ORDER) {
    const argv = toolchain.commands[kind]
    if (argv) lines.push(`- ${kind}: ${formatArgv(argv)}`)
  }
  return lines.join('\n')
}
