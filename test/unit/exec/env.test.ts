import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { isScrubbedEnvName, SCRUBBED_ENV, scrubEnv } from '../../../src/exec/index.js'

describe('scrubbed environment rules', () => {
  const dropped = [
    'GITHUB_TOKEN',
    'NPM_TOKEN',
    'OPENROUTER_API_KEY',
    'DATABASE_URL',
    'TEST_DATABASE_URL',
    'AWS_ACCESS_KEY_ID',
    'AWS_REGION',
    'MY_SERVICE_SECRET',
    'PGPASSWORD',
    'SENTRY_DSN',
    'AZURE_DEVOPS_PAT',
    'npm_config_//registry.npmjs.org/:_authToken',
    'npm_config_script_shell',
    'LD_PRELOAD',
    'LD_LIBRARY_PATH',
    'DYLD_INSERT_LIBRARIES',
    'BASH_ENV',
    'ENV',
    'BASH_FUNC_ls%%',
    'PROMPT_COMMAND',
    'GIT_EXTERNAL_DIFF',
    'GIT_PAGER',
    'GIT_SSH_COMMAND',
    'GIT_ASKPASS',
    'GIT_CONFIG_PARAMETERS',
    'GIT_CONFIG_KEY_0',
    'GIT_DIR',
    'SSH_ASKPASS',
    'SSH_AUTH_SOCK',
    'PAGER',
    'EDITOR',
    'VISUAL',
    'LESSOPEN',
    'NODE_OPTIONS',
    'PYTHONSTARTUP',
    'PYTHONPATH',
    'JAVA_TOOL_OPTIONS',
    'RUSTC_WRAPPER',
    'GOFLAGS',
  ]
  const kept = [
    'PATH',
    'HOME',
    'LANG',
    'LC_ALL',
    'TERM',
    'TZ',
    'USER',
    'TMPDIR',
    'CI',
    'GIT_AUTHOR_NAME',
    'GIT_COMMITTER_EMAIL',
  ]
  it.each([...dropped.map((name) => [name, true] as const), ...kept.map((name) => [name, false] as const)])(
    '%s is dropped: %s',
    (name, drop) => {
      expect(isScrubbedEnvName(name)).toBe(drop)
    },
  )

  it('compares names without regard to case', () => {
    expect(isScrubbedEnvName('github_token')).toBe(true)
    expect(isScrubbedEnvName('ld_preload')).toBe(true)
  })

  it('documents every exact name in upper case, so the case-blind comparison can match it', () => {
    for (const name of [...SCRUBBED_ENV.names, ...SCRUBBED_ENV.keep]) expect(name).toBe(name.toUpperCase())
  })

  it('scrubEnv copies what it keeps and leaves unset variables out', () => {
    const env = { PATH: '/usr/bin', GITHUB_TOKEN: 'ghp_x', EMPTY: '', UNSET: undefined }
    expect(scrubEnv(env)).toEqual({ PATH: '/usr/bin', EMPTY: '' })
    expect(env.GITHUB_TOKEN).toBe('ghp_x')
  })

  it('is documented in full in docs/exec.md', () => {
    const docs = readFileSync(new URL('../../../docs/exec.md', import.meta.url), 'utf8')
    const { names, prefixes, substrings, suffixes, keep } = SCRUBBED_ENV
    const missing = [...names, ...prefixes, ...substrings, ...suffixes, ...keep].filter(
      (rule) => !docs.includes(`\`${rule}\``),
    )
    expect(missing).toEqual([])
  })
})
