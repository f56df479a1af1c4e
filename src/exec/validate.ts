/**
 * Checks `runCommand` options before anything is spawned. Every problem becomes an ExecInputError that
 * names the option or element and says what to do; when unsure, refuse.
 */
import { accessSync, constants, realpathSync, statSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { UNPAIRED_SURROGATE } from '../present/index.js'
import {
  DEFAULT_DRAIN_MS,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_OUTPUT_CEILING,
  DEFAULT_TIMEOUT_MS,
  MAX_TIMER_MS,
} from './defaults.js'
import { sandboxEnvironment, scrubEnv } from './env.js'
import { ExecInputError } from './errors.js'
import { within } from './sandbox/folders.js'
import type { SandboxOptions } from './sandbox/types.js'
import type { ExecProgress, RunCommandOptions } from './types.js'

export interface ValidatedOptions {
  argv: string[]
  /** The real path (symlinks resolved). */
  cwd: string
  timeoutMs: number
  outputCeiling: number
  killGraceMs: number
  drainMs: number
  env: NodeJS.ProcessEnv
  sandbox: SandboxOptions | undefined
  signal: AbortSignal | undefined
  onProgress: ((progress: ExecProgress) => void) | undefined
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `a ${typeof value} (${String(value)})`
}

/** Text the OS can carry: a string, well-formed Unicode (so it encodes to UTF-8 exactly), no NUL byte. */
function checkText(field: string, value: unknown, what: string): string {
  if (typeof value !== 'string') {
    throw new ExecInputError(field, `is ${describe(value)}, not a string; pass every ${what} as a string`)
  }
  const nul = value.indexOf('\0')
  if (nul !== -1) {
    throw new ExecInputError(
      field,
      `contains a NUL byte at index ${nul}; the OS ends strings at NUL, so remove it ` +
        '(pass binary data through a file instead)',
    )
  }
  if (UNPAIRED_SURROGATE.test(value)) {
    throw new ExecInputError(
      field,
      `contains an unpaired UTF-16 surrogate, which has no UTF-8 form; it would reach the program altered, so fix the ${what}`,
    )
  }
  return value
}

function checkArgv(argv: unknown): string[] {
  if (!Array.isArray(argv)) {
    throw new ExecInputError(
      'argv',
      `is ${describe(argv)}; pass an array with the program first, e.g. ["npm", "test"]`,
    )
  }
  if (argv.length === 0) {
    throw new ExecInputError(
      'argv',
      'is empty; pass the program first, then its arguments, e.g. ["npm", "test"]',
    )
  }
  const checked = argv.map((element, index) => checkText(`argv[${index}]`, element, 'argument'))
  if (checked[0] === '') {
    throw new ExecInputError('argv[0]', 'is empty; the first element must name the program to run')
  }
  return checked
}

function checkNumber(field: string, value: unknown, fallback: number, least: number, most: number): number {
  if (value === undefined) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < least || value > most) {
    throw new ExecInputError(field, `is ${describe(value)}; pass a whole number from ${least} to ${most}`)
  }
  return value
}

// Synchronous on purpose: three local syscalls cost microseconds, a trip through the thread pool more.
function realDirectory(field: string, value: unknown): string {
  const path = checkText(field, value, 'path')
  if (!isAbsolute(path)) {
    throw new ExecInputError(field, `"${path}" is relative; pass an absolute directory`)
  }
  let real: string
  try {
    real = realpathSync.native(path)
    if (!statSync(real).isDirectory()) throw Object.assign(new Error(), { code: 'ENOTDIR' })
    accessSync(real, constants.X_OK)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const problem =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'ENOTDIR'
          ? 'is not a directory'
          : `cannot be entered (${code})`
    throw new ExecInputError(field, `"${path}" ${problem}; pass an existing directory`)
  }
  return real
}

function checkEnv(env: unknown, sandboxed: boolean): NodeJS.ProcessEnv {
  if (env === undefined && sandboxed) return sandboxEnvironment(process.env).env
  // spawn copies the environment itself; a copy here would only double the work.
  if (env === undefined || env === 'inherit') return process.env
  if (env === 'scrubbed') return scrubEnv(process.env)
  if (typeof env !== 'object' || env === null || Array.isArray(env)) {
    throw new ExecInputError('env', `is ${describe(env)}; pass "inherit", "scrubbed" or a record of strings`)
  }
  const checked: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    const field = `env[${JSON.stringify(name)}]`
    checkText(field, name, 'variable name')
    if (name === '' || name.includes('=')) {
      throw new ExecInputError(field, 'has an empty name or one holding "="; rename the variable')
    }
    checked[name] = checkText(field, value, 'variable value')
  }
  return checked
}

function checkPaths(field: string, value: unknown): void {
  if (value === undefined) return
  if (!Array.isArray(value))
    throw new ExecInputError(field, `is ${describe(value)}; pass an array of absolute paths`)
  for (const [index, path] of value.entries()) {
    const text = checkText(`${field}[${index}]`, path, 'path')
    if (!isAbsolute(text))
      throw new ExecInputError(`${field}[${index}]`, `"${text}" is relative; pass an absolute path`)
  }
}

function checkSandbox(value: unknown, cwd: string): SandboxOptions | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ExecInputError('sandbox', `is ${describe(value)}; pass an object with at least the workspace`)
  }
  const sandbox = value as SandboxOptions
  const workspace = realDirectory('sandbox.workspace', sandbox.workspace)
  if (!within(cwd, workspace)) {
    throw new ExecInputError(
      'cwd',
      `"${cwd}" is outside the sandbox's workspace "${workspace}"; a sandboxed command runs inside its workspace`,
    )
  }
  for (const field of ['readOnly', 'writable', 'hide'] as const)
    checkPaths(`sandbox.${field}`, sandbox[field])
  if (sandbox.warm !== undefined && typeof sandbox.warm !== 'boolean') {
    throw new ExecInputError('sandbox.warm', `is ${describe(sandbox.warm)}; pass true, false or nothing`)
  }
  for (const [name, limit] of Object.entries(sandbox.limits ?? {})) {
    if (limit !== undefined && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1)) {
      throw new ExecInputError(`sandbox.limits.${name}`, `is ${describe(limit)}; pass a whole number ≥ 1`)
    }
  }
  return { ...sandbox, workspace }
}

export function validateOptions(options: RunCommandOptions): ValidatedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ExecInputError('options', `is ${describe(options)}; pass an object with argv and cwd`)
  }
  const argv = checkArgv(options.argv)
  const cwd = realDirectory('cwd', options.cwd)
  if (options.workspace !== undefined) {
    const workspace = realDirectory('workspace', options.workspace)
    if (!within(cwd, workspace)) {
      throw new ExecInputError(
        'cwd',
        `"${options.cwd}" resolves to "${cwd}", outside the workspace "${workspace}"; run commands inside the workspace`,
      )
    }
  }
  const { signal, onProgress } = options
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new ExecInputError('signal', `is ${describe(signal)}; pass an AbortSignal or nothing`)
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') {
    throw new ExecInputError('onProgress', `is ${describe(onProgress)}; pass a function or nothing`)
  }
  return {
    argv,
    cwd,
    timeoutMs: checkNumber('timeoutMs', options.timeoutMs, DEFAULT_TIMEOUT_MS, 1, MAX_TIMER_MS),
    outputCeiling: checkNumber('outputCeiling', options.outputCeiling, DEFAULT_OUTPUT_CEILING, 0, 2 ** 30),
    killGraceMs: checkNumber('killGraceMs', options.killGraceMs, DEFAULT_KILL_GRACE_MS, 0, MAX_TIMER_MS),
    drainMs: checkNumber('drainMs', options.drainMs, DEFAULT_DRAIN_MS, 0, MAX_TIMER_MS),
    env: checkEnv(options.env, options.sandbox !== undefined),
    sandbox: checkSandbox(options.sandbox, cwd),
    signal,
    onProgress,
  }
}
