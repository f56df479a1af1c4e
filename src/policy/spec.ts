/**
 * The policy spec: the JSON-serialisable form of a policy (what `toSpec()` returns, what a policy file holds,
 * what travels through Temporal history). Validated with zod; errors name the field's path.
 */
import { z } from 'zod'
import { nameProblem, overLimit, UNPAIRED_SURROGATE } from '../present/index.js'
import { PolicyError } from './errors.js'
import {
  type ApproverSpec,
  approverNameSchema,
  approverSchema,
  IDENTITY_MODES,
  type IdentityMode,
} from './identity.js'
import { POLICY_LIMITS, sizeProblem } from './limits.js'
import { netPatternProblem } from './net.js'
import { sandboxSettingsSchema } from './sandbox.js'
import { ACTS, EFFECTS } from './types.js'

export const PRESETS = ['permissive', 'tiered', 'strict'] as const
export const INCLUDES = ['read-only', 'mcp-read-only'] as const

const act = z.enum(ACTS)
const effect = z.enum(EFFECTS)

/** A pattern or an example: at most the pattern limit, and nothing that reads as something else. */
const patternText = (what: string) =>
  z.string().superRefine((text, ctx) => {
    const problem =
      text.length > POLICY_LIMITS.patternChars
        ? `${what} of ${overLimit(text.length, 'characters', POLICY_LIMITS.patternChars, 'pattern')}`
        : nameProblem(what, text)
    if (problem) ctx.addIssue({ code: 'custom', message: problem })
  })

const pattern = z.string().min(1, 'a pattern must not be empty').pipe(patternText('a pattern'))
const example = z.string().min(1).pipe(patternText('an example'))

/** `server.tool`: an MCP server's name (the operator's), a dot, the tool's name (the server's). */
const mcpToolName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]*\.[A-Za-z0-9_.-]{1,128}$/, 'expected server.tool (an MCP tool name)')
const digest = z.string().regex(/^[0-9a-f]{64}$/, 'expected a hex SHA-256 digest (64 characters)')

const ruleSchema = z
  .object({
    act,
    effect,
    pattern,
    /** An ask rule may need several distinct approvers (two-person rule); one denial ends it. */
    approvals: z.number().int().min(1).max(10).optional(),
    /** Example targets (for exec: command lines) this rule must decide; checked when the policy loads. */
    match: z.array(example).optional(),
    /** Example targets this rule must not decide. */
    not_match: z.array(example).optional(),
  })
  .strict()
  .superRefine((rule, ctx) => {
    // A net pattern that looks like an IP address or a CIDR range must be one (it would match nothing).
    const problem = rule.act === 'net' ? netPatternProblem(rule.pattern) : undefined
    if (problem) ctx.addIssue({ code: 'custom', path: ['pattern'], message: problem })
  })

/** Where a layer of an effective policy came from: the worker's floor, or the run's own policy. */
export const LAYER_ORIGINS = ['floor', 'run'] as const
export type LayerOrigin = (typeof LAYER_ORIGINS)[number]

const layerSchema = z
  .object({
    name: z
      .string()
      .min(1, 'a layer needs a name')
      .max(100)
      .superRefine((name, ctx) => {
        const problem = nameProblem('a layer name', name)
        if (problem) ctx.addIssue({ code: 'custom', message: problem })
      }),
    /** Set by the worker when it stacks a run's policy on its floor; never written in a run's own policy. */
    origin: z.enum(LAYER_ORIGINS).optional(),
    /** `enforce`, `off` or detailed settings (docs/sandbox.md); only the operator (the floor) may loosen them. */
    sandbox: sandboxSettingsSchema.optional(),
    /**
     * MCP tool definitions this layer has reviewed: `server.tool` → the hex digest of its definition (what
     * `tether mcp tools` prints). A run withholds a tool whose definition has another digest, and asks.
     */
    pins: z.record(mcpToolName, digest).optional(),
    rules: z.array(ruleSchema),
  })
  .strict()

export const policySpecSchema = z
  .object({
    version: z.literal(1).optional(),
    /** Start from a preset's layers and defaults; `defaults` and `layers` below then refine it. */
    preset: z.enum(PRESETS).optional(),
    defaults: z
      .object({ read: effect, write: effect, exec: effect, net: effect, mcp: effect })
      .partial()
      .strict()
      .optional(),
    /** Built-in rule sets: `read-only` auto-allows the curated read-only commands (see docs/policy.md). */
    include: z.array(z.enum(INCLUDES)).optional(),
    layers: z.array(layerSchema).optional(),
    /**
     * Who may answer an `ask`: names with their Ed25519 public keys (`{ name, keys }`), or plain names under
     * `identity: unsigned`. Empty or absent: anyone (unsigned).
     */
    approvers: z.array(approverSchema).max(POLICY_LIMITS.approvers).optional(),
    /** `signed` (default when approvers are listed) or `unsigned` (names are trusted: local work only). */
    identity: z.enum(IDENTITY_MODES).optional(),
    /**
     * Who may raise a run's cost cap (or end the run) when it reaches it: names of approvers. None listed:
     * nobody can, and a run at its cap ends with `cost-budget`.
     */
    budgetApprovers: z.array(approverNameSchema).optional(),
    /** Set by the worker on an effective policy: which floor it stands on (see floor.ts). */
    floor: z
      .object({
        source: z.string().min(1).max(4096),
        defaults: z
          .object({ read: effect, write: effect, exec: effect, net: effect, mcp: effect.optional() })
          .strict(),
        include: z.array(z.enum(INCLUDES)),
      })
      .strict()
      .optional(),
  })
  .strict()

export type PolicySpecInput = z.input<typeof policySpecSchema>
export type RuleSpec = z.infer<typeof ruleSchema>
export type LayerSpec = z.infer<typeof layerSchema>

/**
 * What `toSpec()` returns: fully expanded (no preset), every default present — but `mcp`'s when it is
 * `deny`, the value a policy that never names it has (so policies written before MCP keep their digests).
 */
export interface PolicySpec {
  version: 1
  defaults: {
    read: z.infer<typeof effect>
    write: z.infer<typeof effect>
    exec: z.infer<typeof effect>
    net: z.infer<typeof effect>
    mcp?: z.infer<typeof effect>
  }
  layers: LayerSpec[]
  include?: Array<(typeof INCLUDES)[number]>
  approvers?: ApproverSpec[]
  identity?: IdentityMode
  budgetApprovers?: string[]
  floor?: FloorRecord
}

/** What an effective policy keeps of the floor it stands on: its source and what its defaults and includes were. */
export interface FloorRecord {
  /** The floor file's path, or `built-in`. */
  source: string
  defaults: PolicySpec['defaults']
  include: Array<(typeof INCLUDES)[number]>
}

/** `layers[2].rules[0].act` for zod's `['layers', 2, 'rules', 0, 'act']`. */
export function fieldPath(path: ReadonlyArray<PropertyKey>): string {
  let text = ''
  for (const key of path)
    text += typeof key === 'number' ? `[${key}]` : text ? `.${String(key)}` : String(key)
  return text || '(the policy itself)'
}

export function parseSpec(input: unknown, file?: string): z.infer<typeof policySpecSchema> {
  const fail = (field: string, message: string): never => {
    throw new PolicyError(`${file ? `${file}: ` : ''}${field}: ${message}`, field, file)
  }
  // Measured before anything is parsed: a policy over a limit is refused at once, however big it is.
  const size = sizeProblem((input as { layers?: unknown } | null)?.layers)
  if (size) fail('layers', size)
  const unstorable = unstorableText(input)
  if (unstorable) fail(fieldPath(unstorable.path), unstorable.message)
  const result = policySpecSchema.safeParse(input)
  if (result.success) return result.data
  const issue = reported(result.error.issues)
  return fail(fieldPath(issue.path), describeIssue(issue))
}

/** Why `text` cannot be stored as jsonb, or undefined. */
function storageProblem(text: string): string | undefined {
  const nul = text.indexOf('\0')
  if (nul >= 0)
    return `holds a NUL character at character ${nul + 1}, which the audit cannot store: remove it`
  const lone = UNPAIRED_SURROGATE.exec(text)
  if (!lone) return undefined
  const code = (lone[0].charCodeAt(0) as number).toString(16).toUpperCase()
  return `holds U+${code} at character ${lone.index + 1}, half of a UTF-16 pair, which the audit cannot store: write the whole character`
}

/**
 * The first text in a spec (a value or a field's name, anywhere) that the audit cannot store: policies are
 * kept as jsonb, which refuses a NUL character and a lone surrogate (which JSON and YAML escapes can spell).
 * Refused here, naming the field, rather than by the database as the run starts. Iterative, so that no
 * nesting depth overflows the stack.
 */
function unstorableText(input: unknown): { path: PropertyKey[]; message: string } | undefined {
  const pending: Array<{ value: unknown; path: PropertyKey[] }> = [{ value: input, path: [] }]
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, path } = next
    if (typeof value === 'string') {
      const problem = storageProblem(value)
      if (problem) return { path, message: problem }
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], path: [...path, i] })
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value)
      for (const [key] of entries) {
        const problem = storageProblem(key)
        if (problem) return { path, message: `the field name ${JSON.stringify(key)} ${problem}` }
      }
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i] as [string, unknown]
        pending.push({ value: item, path: [...path, key] })
      }
    }
  }
  return undefined
}

/**
 * The issue a person is told about: an unknown field before what it leaves missing (a misspelt `efect` is
 * reported as unknown, not as a missing `effect`), else the first.
 */
function reported(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue {
  const first = issues[0]!
  const unknown = issues.find(
    (issue) => issue.code === 'unrecognized_keys' && issue.path.every((key, i) => first.path[i] === key),
  )
  return unknown ?? first
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
  }
  if (issue.code === 'invalid_value') {
    return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
  }
  if (issue.code === 'invalid_type') return `expected ${issue.expected}`
  return issue.message
}
