/**
 * The task contract: what a run must achieve, how success is verified, and its budgets. A zod schema, so a
 * contract from a CLI flag, a JSON file or another workflow is validated the same way and the TypeScript
 * type is derived from it. Pure (zod only): the workflow bundle imports it.
 */
import { z } from 'zod'
import { neverPassed } from './exec/env.js'

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** Parses `15m`, `2h`, `30s`, `1d`, `500ms` (or a number of milliseconds). */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(value)
  if (!match) return undefined
  return Math.round(Number(match[1]) * (UNITS[match[2] as string] as number))
}

const toMilliseconds = (value: string | number, ctx: z.RefinementCtx) => {
  const ms = parseDuration(value)
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({
      code: 'custom',
      message: `expected a duration such as "15m", "2h" or milliseconds, got ${JSON.stringify(value)}`,
    })
    return z.NEVER
  }
  return ms
}
const durationText = z.union([z.number(), z.string()])
const duration = (fallback: string) => durationText.default(fallback).transform(toMilliseconds)
const optionalDuration = durationText.transform(toMilliseconds).optional()

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

export const taskContractSchema = z
  .object({
    goal: z.string().trim().min(1, 'the goal must say what the run should achieve'),
    workspace: z
      .string()
      .min(1)
      .refine((path) => path.startsWith('/'), 'the workspace must be an absolute path'),
    verification: verificationSchema.nullable().default(null),
    verifyWhen: z.enum(['on-finish', 'every-step']).default('on-finish'),
    budgets: z
      .object({
        maxSteps: z.number().int().min(1).default(50),
        maxTokens: z.number().int().min(1).default(2_000_000),
        maxWallTime: duration('4h'),
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
              "this name is never passed to commands (tether's own settings, database and cloud credentials, " +
              'tokens, keys, secrets and passwords stay with the worker); give the command what it needs another way',
          }),
      )
      .default([]),
    /** Commands never re-run after a worker crash cut them off (policy glob patterns on the joined argv). */
    noRetry: z.array(z.string().min(1)).default(DEFAULT_NO_RETRY),
    approvals: z
      .object({
        timeout: duration('24h'),
        reminderEvery: optionalDuration,
        webhook: z
          .object({ url: z.url(), format: z.enum(['json', 'slack']).default('json') })
          .strict()
          .optional(),
      })
      .strict()
      .prefault({}),
  })
  .strict()

/** A contract as written by a person (defaults optional, durations as text). */
export type TaskContractInput = z.input<typeof taskContractSchema>
/** A validated contract: every default filled in, durations in milliseconds. */
export type TaskContract = z.output<typeof taskContractSchema>

export class ContractError extends Error {
  override name = 'ContractError'
}

/** Validates a contract; the error names each bad field and what was expected. */
export function parseContract(input: unknown): TaskContract {
  const parsed = taskContractSchema.safeParse(input)
  if (parsed.success) return parsed.data
  const issues = parsed.error.issues.map(
    (issue) => `${issue.path.join('.') || '(contract)'}: ${issue.message}`,
  )
  throw new ContractError(`invalid task contract: ${issues.join('; ')}`)
}
