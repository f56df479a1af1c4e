/**
 * A model that replays a JSON script of turns, for tests and offline demos. It is stateless: the turn it
 * plays is the number of assistant messages already in the transcript, so an activity retry or a new
 * worker after a crash plays the same turn again, with the same call ids.
 */
import { readFileSync, statSync } from 'node:fs'
import { z } from 'zod'
import { ModelConfigError } from './errors.js'
import { estimateUsage, prepareRequest } from './request.js'
import type { ModelProvider, ModelRequest, ModelResponse } from './types.js'

const tokenCount = z.number().int().min(0)

/**
 * `{ "$repeat": "ab", "times": 3 }` anywhere in a call's arguments stands for the string `"ababab"`, so a
 * script can send the huge arguments a misbehaving model might (tests of tether's limits) without being
 * huge itself. Expanded when the turn is played.
 */
const REPEAT = '$repeat'
/** Characters a repeat may expand to: below V8's longest string (about 2^29 characters). */
const MAX_REPEAT_CHARS = 500_000_000

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Reports every malformed repeat in `value` (at its path) to `ctx`. */
function checkRepeats(value: unknown, ctx: z.RefinementCtx, path: PropertyKey[]): void {
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) checkRepeats(item, ctx, [...path, index])
    return
  }
  if (!isPlainObject(value)) return
  if (!Object.hasOwn(value, REPEAT)) {
    for (const [key, item] of Object.entries(value)) checkRepeats(item, ctx, [...path, key])
    return
  }
  const { [REPEAT]: unit, times, ...rest } = value
  const ok =
    typeof unit === 'string' &&
    typeof times === 'number' &&
    Number.isInteger(times) &&
    times >= 0 &&
    unit.length * times <= MAX_REPEAT_CHARS &&
    Object.keys(rest).length === 0
  if (!ok) {
    ctx.addIssue({
      code: 'custom',
      path,
      message: `a repeat is { "${REPEAT}": "<text>", "times": <whole number> } expanding to at most ${MAX_REPEAT_CHARS.toLocaleString('en-US')} characters`,
    })
  }
}

function expandRepeats(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(expandRepeats)
  if (!isPlainObject(value)) return value
  if (Object.hasOwn(value, REPEAT)) return (value[REPEAT] as string).repeat(value.times as number)
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, expandRepeats(item)]))
}

const scriptedTurnSchema = z
  .object({
    text: z.string().optional(),
    toolCalls: z
      .array(
        z
          .object({
            // Any name and arguments: a script may make bad calls on purpose, to test how a run recovers.
            name: z.string().min(1, 'a tool name is required'),
            args: z
              .unknown()
              .default({})
              .superRefine((args, ctx) => checkRepeats(args, ctx, [])),
          })
          .strict(),
      )
      .default([]),
    usage: z
      .object({ inputTokens: tokenCount, outputTokens: tokenCount, cachedInputTokens: tokenCount })
      .partial()
      .strict()
      .optional(),
  })
  .strict()

export const modelScriptSchema = z
  .object({
    /** The context window to fit transcripts into (default 200,000), low to exercise eliding. */
    contextTokens: z.number().int().positive().optional(),
    turns: z.array(scriptedTurnSchema),
  })
  .strict()

/** A script as written (optional fields may be left out). */
export type ModelScript = z.input<typeof modelScriptSchema>

const DEFAULT_CONTEXT_TOKENS = 200_000

/** What the scripted model says once the script has run out: a final turn, which ends the run. */
export const SCRIPT_FINISHED_TEXT = 'The script has no more turns.'

function issuePath(path: readonly PropertyKey[]): string {
  const [first, index, ...rest] = path
  const field = (parts: readonly PropertyKey[]) =>
    parts
      .map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i > 0 ? '.' : ''}${String(part)}`))
      .join('')
  if (first === 'turns' && typeof index === 'number') {
    return rest.length > 0 ? `turn ${index}, ${field(rest)}` : `turn ${index}`
  }
  return field(path) || '(script)'
}

/** Validates a script; the error names the source, the turn (0-based, as in `turns`) and the field. */
export function parseModelScript(
  value: unknown,
  source = 'model script',
): z.output<typeof modelScriptSchema> {
  const parsed = modelScriptSchema.safeParse(value)
  if (parsed.success) return parsed.data
  const issues = parsed.error.issues.map((issue) => `${issuePath(issue.path)}: ${issue.message}`)
  throw new ModelConfigError(`${source} is invalid: ${issues.join('; ')}`)
}

/** Reads and validates a script file. */
export function loadModelScript(path: string): z.output<typeof modelScriptSchema> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ModelConfigError(
      `cannot read the model script ${path}: ${(error as Error).message}; pass scripted:<path to a JSON script>`,
    )
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ModelConfigError(`model script ${path} is not valid JSON: ${(error as Error).message}`)
  }
  return parseModelScript(json, `model script ${path}`)
}

export function scriptedProvider(script: ModelScript, options: { id?: string } = {}): ModelProvider {
  const { turns, contextTokens = DEFAULT_CONTEXT_TOKENS } = parseModelScript(script)
  return {
    id: options.id ?? 'scripted',
    contextTokens,
    async generate(request: ModelRequest): Promise<ModelResponse> {
      request.signal?.throwIfAborted()
      // Fitted and checked as a real provider would, so a transcript a provider would refuse fails here too.
      const { messages } = prepareRequest(request, contextTokens)
      const index = request.messages.filter((message) => message.role === 'assistant').length
      const turn = turns[index]
      const reply = turn
        ? {
            text: turn.text ?? '',
            toolCalls: turn.toolCalls.map((call, i) => ({
              id: `call-${index}-${i}`,
              name: call.name,
              args: expandRepeats(call.args),
            })),
          }
        : { text: SCRIPT_FINISHED_TEXT, toolCalls: [] }
      const estimate = estimateUsage(request.system, messages, reply)
      return {
        ...reply,
        usage: {
          inputTokens: turn?.usage?.inputTokens ?? estimate.inputTokens,
          outputTokens: turn?.usage?.outputTokens ?? estimate.outputTokens,
          ...(turn?.usage?.cachedInputTokens ? { cachedInputTokens: turn.usage.cachedInputTokens } : {}),
        },
        finishReason: reply.toolCalls.length > 0 ? 'tool-calls' : 'stop',
        modelId: 'scripted',
      }
    },
  }
}

/**
 * The provider of `scripted:<path>`: the script file is read again whenever it changed (its size or
 * modification time), so a worker that keeps providers between runs (`tether dev`) plays an edited script
 * without a restart. `options.contextTokens` is the context window when the file names none.
 */
export function scriptedFileProvider(
  path: string,
  options: { id?: string; contextTokens?: number } = {},
): ModelProvider {
  let stamp = ''
  let current: ModelProvider | undefined
  const provider = (): ModelProvider => {
    let now: string
    try {
      const info = statSync(path)
      now = `${info.size}:${info.mtimeMs}`
    } catch {
      now = 'unreadable'
    }
    if (!current || now !== stamp) {
      const script = loadModelScript(path)
      current = scriptedProvider(
        { ...script, contextTokens: script.contextTokens ?? options.contextTokens },
        options.id !== undefined ? { id: options.id } : {},
      )
      stamp = now
    }
    return current
  }
  const first = provider()
  return {
    id: first.id,
    get contextTokens() {
      return provider().contextTokens
    },
    generate: (request) => provider().generate(request),
  }
}
