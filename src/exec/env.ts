/**
 * The `scrubbed` environment: tether's own environment without variables that look like secrets and
 * without ones that make a program load or run something other than what argv names (loader preloads,
 * shell start-up files, pagers, editors, credential helpers, language-runtime injection).
 *
 * Names are compared upper-cased, so `npm_config_//registry/:_authToken` is caught by `TOKEN`. The rules
 * are deliberately broad (`KEY` also catches `KEYBOARD_LAYOUT`): a missing harmless variable costs less
 * than a leaked secret. A caller that needs a variable back passes an explicit record instead, e.g.
 * `{ ...scrubEnv(process.env), NEEDED: 'x' }`.
 */
import { COMMIT_IDENTITY, neverPassed } from '../commands/index.js'

export { neverPassed } from '../commands/index.js'

export interface EnvScrubRules {
  /** Exact names. */
  readonly names: readonly string[]
  readonly prefixes: readonly string[]
  readonly substrings: readonly string[]
  readonly suffixes: readonly string[]
  /** Exceptions that survive although a rule above matches them (commit identity only). */
  readonly keep: readonly string[]
}

export const SCRUBBED_ENV: EnvScrubRules = Object.freeze({
  names: Object.freeze([
    // Connection strings carry passwords.
    'DATABASE_URL',
    'PGPASSFILE',
    'PGSERVICEFILE',
    'REDIS_URL',
    'MONGO_URL',
    'MONGO_URI',
    'MONGODB_URI',
    'AMQP_URL',
    'RABBITMQ_URL',
    'BROKER_URL',
    'CELERY_BROKER_URL',
    'KRB5CCNAME',
    'GPG_AGENT_INFO',
    // Well-known tokens (also caught by the substrings; listed so the documentation is explicit).
    'GITHUB_TOKEN',
    'GH_TOKEN',
    'NPM_TOKEN',
    'OPENROUTER_API_KEY',
    'OPENAI_API_KEY',
    'ANTHROPIC_API_KEY',
    // Shell start-up and behaviour.
    'ENV',
    'BASH_ENV',
    'ZDOTDIR',
    'PROMPT_COMMAND',
    'PS4',
    'SHELLOPTS',
    'BASHOPTS',
    'CDPATH',
    'GLOBIGNORE',
    'IFS',
    // Pagers, editors, browsers and password prompts run programs of the variable's choosing.
    'PAGER',
    'MANPAGER',
    'SYSTEMD_PAGER',
    'LESSOPEN',
    'LESSCLOSE',
    'EDITOR',
    'VISUAL',
    'BROWSER',
    'SSH_ASKPASS',
    'SUDO_ASKPASS',
    'GIT_ASKPASS',
    'GIT_PAGER',
    'GIT_EDITOR',
    'GIT_SEQUENCE_EDITOR',
    'GIT_EXTERNAL_DIFF',
    'GIT_SSH',
    'GIT_SSH_COMMAND',
    'GIT_PROXY_COMMAND',
    'GIT_EXEC_PATH',
    'GIT_TEMPLATE_DIR',
    // Language runtimes that load code named by the environment.
    'NODE_OPTIONS',
    'NODE_PATH',
    'NODE_REPL_EXTERNAL_MODULE',
    'PYTHONSTARTUP',
    'PYTHONPATH',
    'PYTHONHOME',
    'PYTHONBREAKPOINT',
    'PYTHONINSPECT',
    'PERL5OPT',
    'PERL5LIB',
    'PERLLIB',
    'PERL5DB',
    'RUBYOPT',
    'RUBYLIB',
    'JAVA_TOOL_OPTIONS',
    '_JAVA_OPTIONS',
    'JDK_JAVA_OPTIONS',
    'GCONV_PATH',
    'HOSTALIASES',
    'RUSTC_WRAPPER',
    'RUSTC_WORKSPACE_WRAPPER',
    'CARGO_BUILD_RUSTC_WRAPPER',
    'GOFLAGS',
  ]),
  prefixes: Object.freeze([
    // Dynamic loader: LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, DYLD_INSERT_LIBRARIES, …
    'LD_',
    'DYLD_',
    // Exported bash functions override commands in every bash script.
    'BASH_FUNC_',
    // git reads config, hooks, repositories and helpers from these (GIT_CONFIG_*, GIT_DIR, …).
    'GIT_',
    // npm config from the environment can set script-shell, userconfig, registries and tokens.
    'NPM_CONFIG_',
    // Cloud credentials and their config.
    'AWS_',
    'AZURE_',
    'ARM_',
    'GOOGLE_',
    'GCLOUD_',
    'CLOUDSDK_',
    'VAULT_',
  ]),
  substrings: Object.freeze([
    'TOKEN',
    'SECRET',
    'PASSWORD',
    'PASSWD',
    'PASSPHRASE',
    'KEY',
    'CREDENTIAL',
    'AUTH',
    'PRIVATE',
    'COOKIE',
    'DATABASE_URL',
    'CONNECTION_STRING',
  ]),
  suffixes: Object.freeze(['_DSN', '_PAT']),
  keep: COMMIT_IDENTITY,
})

const names = new Set(SCRUBBED_ENV.names)
const keep = new Set(SCRUBBED_ENV.keep)

/** True when `scrubbed` drops this variable. */
export function isScrubbedEnvName(name: string): boolean {
  const upper = name.toUpperCase()
  if (keep.has(upper)) return false
  return (
    names.has(upper) ||
    SCRUBBED_ENV.prefixes.some((prefix) => upper.startsWith(prefix)) ||
    SCRUBBED_ENV.substrings.some((part) => upper.includes(part)) ||
    SCRUBBED_ENV.suffixes.some((suffix) => upper.endsWith(suffix))
  )
}

/** A copy of `env` without the variables `isScrubbedEnvName` matches (and without unset ones). */
export function scrubEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const kept: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isScrubbedEnvName(name)) kept[name] = value
  }
  return kept
}

/**
 * What a sandboxed command's environment is built from: only these variables of the worker's environment
 * (locale, terminal, and where the toolchains and their caches live), plus the names a contract lists.
 * Everything else — connection strings, tokens, cloud credentials, tether's own settings — never reaches a
 * command, whatever its name looks like.
 */
export const SANDBOX_ENV_ALLOWED: Readonly<{ names: readonly string[]; prefixes: readonly string[] }> =
  Object.freeze({
    names: Object.freeze([
      'PATH',
      'LANG',
      'LANGUAGE',
      'TZ',
      'TERM',
      'COLORTERM',
      'NO_COLOR',
      'CI',
      'USER',
      'LOGNAME',
      'SHELL',
      'SOURCE_DATE_EPOCH',
      'GOROOT',
      'GOPATH',
      'GOMODCACHE',
      'GOCACHE',
      'GOPROXY',
      'GONOPROXY',
      'GOPRIVATE',
      'GONOSUMDB',
      'GOSUMDB',
      'GOTOOLCHAIN',
      'GO111MODULE',
      'CGO_ENABLED',
      'CARGO_HOME',
      'RUSTUP_HOME',
      'RUSTUP_TOOLCHAIN',
      'JAVA_HOME',
      'MAVEN_HOME',
      'M2_HOME',
      'GRADLE_USER_HOME',
      'PYENV_ROOT',
      'PYENV_VERSION',
      'VIRTUAL_ENV',
      'CONDA_PREFIX',
      'PIP_CACHE_DIR',
      'NVM_DIR',
      'NVM_BIN',
      'PNPM_HOME',
      'YARN_CACHE_FOLDER',
      'DOTNET_ROOT',
      'npm_config_cache',
    ]),
    prefixes: Object.freeze(['LC_']),
  })

/**
 * git configuration every command runs with, given through the environment (`GIT_CONFIG_COUNT`,
 * `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`), which outranks every configuration file — a repository's own
 * included — and reaches the git that git itself starts in a submodule:
 *
 * - `core.fsmonitor=false`: no repository's configuration names a program `git status` runs;
 * - `safe.bareRepository=explicit`: git never takes a folder of plain files (`HEAD`, `config`, `objects/`,
 *   `refs/`, as the file tools could write them) for a repository it stands in; only `--git-dir` and
 *   `GIT_DIR` name a bare one. git before 2.38 ignores it (see docs/sandbox.md).
 *
 * Hooks are left alone: `core.hooksPath` is the project's own (husky), and the sandbox keeps `.git/hooks`
 * and `.git/config` read-only (sandbox/git.ts). Other program-naming keys (`diff.<driver>.textconv`, filters)
 * have names no pin can list; they are kept out of reach by those read-only binds instead.
 */
export const GIT_CONFIG_PINS: ReadonlyArray<readonly [string, string]> = Object.freeze([
  ['core.fsmonitor', 'false'],
  ['safe.bareRepository', 'explicit'],
  // `.git/info` is read-only in the sandbox: `git gc` skips the index for dumb HTTP servers it keeps there.
  ['repack.updateServerInfo', 'false'],
] as const)

/**
 * Puts GIT_CONFIG_PINS into `env`, dropping every other configuration it carries through the environment
 * (`GIT_CONFIG_PARAMETERS`, read after the pins, would outrank them; `GIT_CONFIG_GLOBAL` and the like name
 * files a command could write).
 */
export function pinGitConfig(env: Record<string, string>): void {
  for (const name of Object.keys(env)) if (name.toUpperCase().startsWith('GIT_CONFIG')) delete env[name]
  env.GIT_CONFIG_COUNT = String(GIT_CONFIG_PINS.length)
  GIT_CONFIG_PINS.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key
    env[`GIT_CONFIG_VALUE_${i}`] = value
  })
}

const sandboxNames = new Set(SANDBOX_ENV_ALLOWED.names)

/**
 * The environment of a sandboxed command: the allowlisted variables of `source`, plus `named` (a
 * contract's explicit list), minus everything `neverPassed` matches, plus GIT_CONFIG_PINS. Returns the
 * names passed (for the audit, which records names, never values).
 */
export function sandboxEnvironment(
  source: Readonly<Record<string, string | undefined>>,
  named: readonly string[] = [],
): { env: Record<string, string>; names: string[] } {
  const extra = new Set(named)
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(source)) {
    if (value === undefined || neverPassed(name)) continue
    const allowed =
      sandboxNames.has(name) ||
      extra.has(name) ||
      SANDBOX_ENV_ALLOWED.prefixes.some((prefix) => name.startsWith(prefix))
    if (allowed) env[name] = value
  }
  pinGitConfig(env)
  return { env, names: Object.keys(env).sort() }
}
