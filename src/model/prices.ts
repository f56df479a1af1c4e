/**
 * What a model turn costs: a price per model (US dollars per million input, output and cached input tokens,
 * as providers publish them) shipped for the providers tether supports, and an operator's price file that
 * overrides it (`TETHER_PRICES`). A turn's cost is in micro-dollars (run/money.ts): one token at one dollar
 * per million is one micro-dollar.
 */
import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { ModelConfigError } from './errors.js'

/** US dollars per million tokens. */
export interface ModelPrice {
  input: number
  output: number
  /** Input tokens read from the provider's prompt cache; default: the input price. */
  cached?: number | undefined
}

/**
 * List prices in US dollars per million tokens, as the providers published them in 2025 (standard tier, no
 * batch discount, prompts under any long-context surcharge). Keys are model names without a date suffix;
 * a dated model (`claude-sonnet-4-5-20250929`) takes its family's price. Override them with a price file.
 */
export const SHIPPED_PRICES: Readonly<Record<string, ModelPrice>> = {
  // Anthropic (cached = a prompt-cache read)
  'claude-opus-4-1': { input: 15, output: 75, cached: 1.5 },
  'claude-opus-4': { input: 15, output: 75, cached: 1.5 },
  'claude-sonnet-4-5': { input: 3, output: 15, cached: 0.3 },
  'claude-sonnet-4': { input: 3, output: 15, cached: 0.3 },
  'claude-3-7-sonnet': { input: 3, output: 15, cached: 0.3 },
  'claude-haiku-4-5': { input: 1, output: 5, cached: 0.1 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cached: 0.08 },
  // OpenAI (cached = cached input)
  'gpt-5': { input: 1.25, output: 10, cached: 0.125 },
  'gpt-5-mini': { input: 0.25, output: 2, cached: 0.025 },
  'gpt-5-nano': { input: 0.05, output: 0.4, cached: 0.005 },
  'gpt-4.1': { input: 2, output: 8, cached: 0.5 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6, cached: 0.1 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4, cached: 0.025 },
  'gpt-4o': { input: 2.5, output: 10, cached: 1.25 },
  'gpt-4o-mini': { input: 0.15, output: 0.6, cached: 0.075 },
  o3: { input: 2, output: 8, cached: 0.5 },
  'o3-mini': { input: 1.1, output: 4.4, cached: 0.55 },
  'o4-mini': { input: 1.1, output: 4.4, cached: 0.275 },
}

/** Which shipped prices a provider's model ids take: its own names, or OpenRouter's `vendor/model`. */
const VENDORS: Readonly<Record<string, readonly string[]>> = {
  anthropic: ['claude-'],
  openai: ['gpt-', 'o3', 'o4'],
}

/** A price and where it came from, for the audit and for messages. */
export interface PriceQuote {
  price: ModelPrice
  /** `shipped` or the price file's path. */
  source: string
}

/** Prices an operator set, by model id pattern (`*` matches any run of characters), first match wins. */
export interface PriceOverrides {
  source: string
  models: Array<{ pattern: string; price: ModelPrice }>
}

const dollars = z.number().min(0).max(1_000_000)
const priceSchema = z.object({ input: dollars, output: dollars, cached: dollars.optional() }).strict()
const priceFileSchema = z
  .object({
    /** Only US dollars: written so a file says what its numbers are. */
    currency: z.literal('USD').optional(),
    models: z.record(z.string().min(1), priceSchema),
  })
  .strict()

/** Reads a price file (JSON or YAML); every error is one line naming the file and the field. */
export function loadPriceFile(path: string): PriceOverrides {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    throw new ModelConfigError(
      `TETHER_PRICES: cannot read the price file ${path} (${code === 'ENOENT' ? 'no such file' : (code ?? String(error))}); check the path`,
    )
  }
  let data: unknown
  try {
    data = parseYaml(text)
  } catch (error) {
    throw new ModelConfigError(`${path}: not valid YAML or JSON: ${(error as Error).message.split('\n')[0]}`)
  }
  const parsed = priceFileSchema.safeParse(data)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = issue?.path.length ? issue.path.join('.') : '(the file)'
    throw new ModelConfigError(
      `${path}: ${field}: ${issue?.message ?? 'invalid'} (prices are US dollars per million tokens: { input, output, cached })`,
    )
  }
  return {
    source: path,
    models: Object.entries(parsed.data.models).map(([pattern, price]) => ({ pattern, price })),
  }
}

/**
 * The price of `model`, a provider id such as `anthropic:claude-sonnet-4-5`, `openai:gpt-4o`,
 * `openrouter:anthropic/claude-sonnet-4` or `scripted:/tmp/script.json`: the operator's first matching
 * pattern, else the shipped price of its model family; undefined when neither knows it.
 */
export function priceOf(model: string, overrides?: PriceOverrides): PriceQuote | undefined {
  const own = overrides?.models.find((entry) => globMatch(entry.pattern, model))
  if (own && overrides) return { price: own.price, source: overrides.source }
  const colon = model.indexOf(':')
  if (colon < 0) return undefined
  const provider = model.slice(0, colon)
  let name = model.slice(colon + 1)
  let vendor = provider
  if (provider === 'openrouter') {
    const slash = name.indexOf('/')
    vendor = name.slice(0, slash)
    name = name.slice(slash + 1)
  }
  const families = VENDORS[vendor]
  const wanted = normalise(name)
  if (!families?.some((family) => wanted.startsWith(normalise(family)))) return undefined
  // The longest family name the model is, or is a dated or suffixed version of.
  let best: string | undefined
  for (const family of Object.keys(SHIPPED_PRICES)) {
    const key = normalise(family)
    if ((wanted === key || wanted.startsWith(`${key}-`)) && (!best || key.length > normalise(best).length))
      best = family
  }
  return best ? { price: SHIPPED_PRICES[best] as ModelPrice, source: 'shipped' } : undefined
}

/** Token counts of one model turn; `cachedInputTokens` are part of `inputTokens`. */
export interface TurnUsage {
  inputTokens: number
  outputTokens: number
  cachedInputTokens?: number | undefined
}

/** What a turn cost, in micro-dollars (rounded to the nearest). */
export function turnCost(price: ModelPrice, usage: TurnUsage): number {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens)
  return Math.round(
    (usage.inputTokens - cached) * price.input +
      cached * (price.cached ?? price.input) +
      usage.outputTokens * price.output,
  )
}

/** Case and `.`/`-` do not tell model names apart (`claude-sonnet-4.5` is `claude-sonnet-4-5`). */
function normalise(name: string): string {
  return name.toLowerCase().replace(/\./g, '-')
}

function globMatch(pattern: string, value: string): boolean {
  const escaped = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${escaped.join('.*')}$`, 's').test(value)
}
