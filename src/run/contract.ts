/**
 * The task contract: what a run must achieve, how success is verified, and its budgets. A zod schema, so a
 * contract from a CLI flag, a JSON file or another workflow is validated the same way and the TypeScript
 * type is derived from it. Pure (zod only): the workflow bundle imports it.
 */
import { z } from 'zod'
// Beside the commands' door: the workflow bundle takes this one list, not the whole command analysis.
import { neverPassed } from '../commands/environment.js'
import { MCP_SERVER_NAME } from '../tools/index.js'
import { CURRENCY, microsToUsd, parseMoney } from './money.js'

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** The longest duration a contract may name: beyond a year it is a typo, not a plan. */
export const MAX_DURATION_MS = 365 * UNITS.d!
const MAX_DURATION_TEXT = '365d'

/**
 * Parses `15m`, `2h`, `30s`, `1d`, `500ms` to milliseconds; anything else (`30 m` too: one word, as a flag
 * takes it) is undefined. `spaced` reads a space between number and unit, as runs recorded before did.
 */
export function parseDuration(value: string, options: { spaced?: boolean } = {}): number | undefined {
  const match = (options.spaced ? SPACED_DURATION : DURATION).exec(value)
  if (!match) return undefined
  return Math.round(Number(match[1]) * (UNITS[match[2] as string] as number))
}

const DURATION = /^\s*(\d+(?:\.\d+)?)(ms|s|m|h|d)\s*$/
const SPACED_DURATION = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/

/** `1800` read as seconds, written the way a person would: `30m`, `4h`, `90s`. */
function asSeconds(n: number): string {
  const ms = n * 1_000
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = UNITS[unit] as number
    if (ms % size === 0) return `${ms / size}${unit}`
  }
  return `${n}s`
}

/** The fix for a duration written without a unit: `1800` → `e.g. "30m" or "1800s"`. */
function unitHint(n: number): string {
  if (!Number.isInteger(n) || n <= 0) return 'e.g. "30m"'
  const readable = asSeconds(n)
  return readable === `${n}s` ? `e.g. "${n}s"` : `e.g. "${readable}" or "${n}s"`
}

/**
 * A contract duration: text with a unit, more than zero and at most a year. A bare number is refused with
 * the fix, because nobody can tell whether `1800` meant seconds or milliseconds.
 */
const durationReader =
  (spaced: boolean) =>
  (value: unknown, ctx: z.RefinementCtx): number => {
    const fail = (message: string) => {
      ctx.addIssue({ code: 'custom', message })
      return z.NEVER
    }
    if (typeof value === 'number' || (typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value))) {
      const n = Number(value)
      return fail(
        `${JSON.stringify(value)} ${typeof value === 'number' ? 'is a number' : 'has no unit'}; write a duration with a unit, ${unitHint(n)}`,
      )
    }
    if (typeof value !== 'string')
      return fail(`expected a duration such as "15m", got ${JSON.stringify(value)}`)
    const ms = parseDuration(value, { spaced })
    if (ms === undefined) {
      return fail(
        `expected a duration such as "1500ms", "30s", "15m", "2h" or "1d", got ${JSON.stringify(value)}`,
      )
    }
    if (ms <= 0) return fail(`${JSON.stringify(value)} must be longer than zero`)
    if (ms > MAX_DURATION_MS)
      return fail(`${JSON.stringify(value)} is longer than the limit of ${MAX_DURATION_TEXT}`)
    return ms
  }

/**
 * How runs recorded before durations needed units read them: a number is milliseconds, no upper bound.
 * Only for replaying those runs (and runs they continued as new); new contracts are read strictly.
 */
const toMillisecondsLegacy = (value: unknown, ctx: z.RefinementCtx): number => {
  const ms =
    typeof value === 'number'
      ? Number.isFinite(value) && value >= 0
        ? value
        : undefined
      : typeof value === 'string'
        ? parseDuration(value, { spaced: true })
        : undefined
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration such as "15m", "2h" or milliseconds, got ${JSON.stringify(value)}`,
    })
    return z.NEVER
  }
  return ms
}

export const DEFAULT_NO_RETRY = [
  'git push*',
  'npm publish*',
  'pnpm publish*',
  'yarn publish*',
  'cargo publish*',
  'kubectl apply*',
  'terraform apply*',
]

export const verificationSchema = z
  .object({
    command: z.array(z.string()).min(1, 'the verification command needs at least the program'),
    expectExit: z.number().int().default(0),
  })
  .strict()

/**
 * Where a workspace comes from when it is not a folder on the worker: a git repository and ref, cloned by
 * the worker under the run's policy, or the tree an earlier run had at the end of a step (with that run's
 * transcript up to there, for a rewind).
 */
export const sourceSchema = z.union([
  z
    .object({
      git: z.string().min(1, 'the git source needs a repository URL or path'),
      // git would read a ref starting with '-' as one of its options (`--recurse-submodules` checked out
      // nothing, silently); no branch, tag or commit name starts so.
      ref: z
        .string()
        .min(1)
        .refine((ref) => !ref.startsWith('-'), {
          message: "a git ref never starts with '-': name a branch, tag or commit",
        })
        .optional(),
    })
    .strict(),
  z
    .object({
      run: z.string().min(1),
      step: z.number().int().min(0),
      transcript: z.boolean().default(false),
    })
    .strict(),
])
export type WorkspaceSource = z.output<typeof sourceSchema>

const cachePath = z
  .string()
  .min(1)
  .refine(
    (path) => !path.split('/').some((part) => part === '..') && !path.startsWith('/'),
    'a cache is a workspace-relative path without ..',
  )

type ReadDuration = (value: unknown, ctx: z.RefinementCtx) => number

/** A cap in money: `"25 USD"` → micro-dollars (money.ts). */
const toMicros = (value: unknown, ctx: z.RefinementCtx): number => {
  const parsed = parseMoney(value)
  if (parsed.ok && parsed.micros > 0) return parsed.micros
  ctx.addIssue({ code: 'custom', message: parsed.ok ? 'the cap must be more than zero' : parsed.error })
  return z.NEVER
}

/** How a continuation reads the cap its first run already parsed: micro-dollars. */
const toMicrosLegacy = (value: unknown, ctx: z.RefinementCtx): number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : toMicros(value, ctx)

/** The contract schema with durations read by `read`; written as text, so typed as strings. */
function contractSchema(read: ReadDuration, money: ReadDuration) {
  // Any value reaches `read`, so a number gets its own message rather than zod's "expected string".
  const text = z.custom<string>(() => true)
  const duration = (fallback: string) => text.default(fallback).transform(read)
  return z
    .object({
      goal: z.string().trim().min(1, 'the goal must say what the run should achieve'),
      /** The project's folder on the worker; or, with `source`, absent: the worker lays it out in its own. */
      workspace: z
        .string()
        .min(1)
        .refine((path) => path.startsWith('/'), 'the workspace must be an absolute path')
        .optional(),
      source: sourceSchema.optional(),
      /** Paths that are caches (left out of snapshots, rebuilt on a new worker), beyond the toolchain's. */
      caches: z
        .object({ add: z.array(cachePath).default([]), remove: z.array(cachePath).default([]) })
        .strict()
        .prefault({}),
      /** When the workspace is a git repository: its verified tree becomes a commit on `tether/<run id>`. */
      branch: z.boolean().default(true),
      verification: verificationSchema.nullable().default(null),
      verifyWhen: z.enum(['on-finish', 'every-step']).default('on-finish'),
      budgets: z
        .object({
          maxSteps: z.number().int().min(1).default(50),
          maxTokens: z.number().int().min(1).default(2_000_000),
          maxWallTime: duration('4h'),
          /**
           * What the run may spend on its model, e.g. `"25 USD"` (priced per model: docs/observability.md).
           * At the cap the run waits for a budget approver to raise it or end the run (`cost-budget`).
           */
          maxCost: text.transform(money).optional(),
        })
        .strict()
        .prefault({}),
      execTimeout: duration('15m'),
      outputCeiling: z.number().int().min(200).max(200_000).default(12_000),
      /** A model choice such as `openrouter:<model>` or `scripted:<file>`; unset = from the environment. */
      model: z.string().min(1).optional(),
      /**
       * Names of the worker's environment variables that commands also receive, beyond the sandbox's
       * allowlist (locale, terminal, toolchain locations). Never tether's own or credential-like names.
       */
      env: z
        .array(
          z
            .string()
            .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name is letters, digits and _')
            .refine((name) => !neverPassed(name), {
              message:
                "this name is never passed to commands (tether's own settings, git's settings but the commit identity, " +
                'database and cloud credentials, tokens, keys, secrets and passwords stay with the worker); give the command what it needs another way',
            }),
        )
        .default([]),
      /**
       * Which of the worker's MCP servers the run uses, by the names the operator gave them; absent: every
       * one the worker has. A name the worker does not have rejects the run at its first step.
       */
      mcp: z.array(z.string().regex(MCP_SERVER_NAME, 'an MCP server name is a-z, 0-9, _ and -')).optional(),
      /** Commands never re-run after a worker crash cut them off (policy glob patterns on the joined argv). */
      noRetry: z.array(z.string().min(1)).default(DEFAULT_NO_RETRY),
      approvals: z
        .object({
          timeout: duration('24h'),
          reminderEvery: text.transform(read).optional(),
          webhook: z
            .object({ url: z.url(), format: z.enum(['json', 'slack']).default('json') })
            .strict()
            .optional(),
        })
        .strict()
        .prefault({}),
    })
    .strict()
    .refine((contract) => (contract.workspace === undefined) !== (contract.source === undefined), {
      message:
        'name either a workspace (a folder on the worker) or a source (a git repository, or a step of an earlier run), not both',
      path: ['workspace'],
    })
}

// Built on first use (z.lazy): every run's workflow evaluates this module for itself and uses one of the
// three, so building all of them cost each run's first task milliseconds and each cached run memory.
export const taskContractSchema = z.lazy(() => contractSchema(durationReader(false), toMicros))
/** Runs recorded before inputs were bounded also read `30 m`. */
const spacedContractSchema = z.lazy(() => contractSchema(durationReader(true), toMicros))
const legacyContractSchema = z.lazy(() => contractSchema(toMillisecondsLegacy, toMicrosLegacy))

/** A contract as written by a person (defaults optional, durations as text). */
export type TaskContractInput = z.input<typeof taskContractSchema>
/** A validated contract: every default filled in, durations in milliseconds, money in micro-dollars. */
export type TaskContract = z.output<typeof taskContractSchema>

/**
 * Why the contract's gate may not run under `policy`, or undefined when it may. The gate runs unattended,
 * so only `allow` counts: an `ask` would wait for nobody.
 */
export function gateRefusal(
  contract: Pick<TaskContract, 'verification'>,
  policy: { checkExec(argv: readonly string[]): { effect: string; reason: string } },
): string | undefined {
  if (!contract.verification) return undefined
  const verdict = policy.checkExec(contract.verification.command)
  if (verdict.effect === 'allow') return undefined
  return (
    `the verification command \`${contract.verification.command.join(' ')}\` is not allowed by the policy ` +
    `(${verdict.effect}: ${verdict.reason}); the gate runs unattended, so the policy must allow it`
  )
}

/**
 * The workspace as activities are given it: the contract's folder, or `''` when the workspace comes from a
 * source — then each worker lays it out in a folder of its own, which the activities find by run id.
 */
export function workspaceOf(contract: Pick<TaskContract, 'workspace'>): string {
  return contract.workspace ?? ''
}

/** Where a run's workspace is, in words for the audit and people: the folder, or its source. */
export function describeWorkspace(contract: Pick<TaskContract, 'workspace' | 'source'>): string {
  const { source } = contract
  if (contract.workspace !== undefined || !source) return contract.workspace ?? ''
  if ('git' in source) return `git ${source.git}${source.ref ? ` at ${source.ref}` : ''}`
  return `run ${source.run} at step ${source.step}`
}

/** A validated contract written back as input (durations as text again): what a new run from it is given. */
export function contractInput(contract: TaskContract): TaskContractInput {
  const ms = (value: number) => `${value}ms`
  const { reminderEvery, ...approvals } = contract.approvals
  const { maxCost, ...budgets } = contract.budgets
  return {
    ...contract,
    budgets: {
      ...budgets,
      maxWallTime: ms(budgets.maxWallTime),
      // Micro-dollars as money again: the cap the new run is given is the one this run had.
      ...(maxCost !== undefined ? { maxCost: `${microsToUsd(maxCost)} ${CURRENCY}` } : {}),
    },
    execTimeout: ms(contract.execTimeout),
    approvals: {
      ...approvals,
      timeout: ms(approvals.timeout),
      ...(reminderEvery !== undefined ? { reminderEvery: ms(reminderEvery) } : {}),
    },
  }
}

export class ContractError extends Error {
  override name = 'ContractError'
}

/**
 * Validates a contract; the error names each bad field and what was expected. `legacyDurations` reads
 * durations as runs recorded before units were required did (numbers are milliseconds), `spacedDurations`
 * as runs recorded before inputs were bounded did (`30 m`): for those only.
 */
export function parseContract(
  input: unknown,
  options: { legacyDurations?: boolean; spacedDurations?: boolean } = {},
): TaskContract {
  const schema = options.legacyDurations
    ? legacyContractSchema
    : options.spacedDurations
      ? spacedContractSchema
      : taskContractSchema
  const parsed = schema.safeParse(input)
  if (parsed.success) return parsed.data
  const issues = parsed.error.issues.map(
    (issue) => `${issue.path.join('.') || '(contract)'}: ${issue.message}`,
  )
  throw new ContractError(`invalid task contract: ${issues.join('; ')}`)
}
