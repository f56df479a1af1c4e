/**
 * Chooses and configures a provider from environment variables and an optional `<provider>:<model>` choice.
 */
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModel } from 'ai'
import { aiSdkProvider } from './ai-sdk.js'
import { ModelConfigError } from './errors.js'
import { scriptedFileProvider } from './scripted.js'
import type { ModelProvider } from './types.js'

interface ProviderSpec {
  /** Holds the API key; for `openai-compatible` it is optional (local servers need none). */
  keyVar: string
  keyRequired: boolean
  modelVar: string
  /** The base URL; required for `openai-compatible`, an optional override for the others. */
  baseUrlVar: string
  baseUrlRequired: boolean
  /** A conservative window when TETHER_CONTEXT_TOKENS does not name one. */
  contextTokens: number
  create(settings: { apiKey?: string; baseURL: string | undefined; modelId: string }): LanguageModel
}

// Detection order when no choice is given: the first fully configured provider wins.
const PROVIDERS = {
  openrouter: {
    keyVar: 'OPENROUTER_API_KEY',
    keyRequired: true,
    modelVar: 'OPENROUTER_MODEL',
    baseUrlVar: 'OPENROUTER_BASE_URL',
    baseUrlRequired: false,
    contextTokens: 128_000,
    create: ({ apiKey, baseURL, modelId }) =>
      createOpenAICompatible({
        name: 'openrouter',
        baseURL: baseURL ?? 'https://openrouter.ai/api/v1',
        ...(apiKey ? { apiKey } : {}),
        headers: { 'X-Title': 'tether' },
      }).chatModel(modelId),
  },
  anthropic: {
    keyVar: 'ANTHROPIC_API_KEY',
    keyRequired: true,
    modelVar: 'ANTHROPIC_MODEL',
    baseUrlVar: 'ANTHROPIC_BASE_URL',
    baseUrlRequired: false,
    contextTokens: 200_000,
    create: ({ apiKey, baseURL, modelId }) =>
      createAnthropic({ ...(apiKey ? { apiKey } : {}), ...(baseURL ? { baseURL } : {}) })(modelId),
  },
  openai: {
    keyVar: 'OPENAI_API_KEY',
    keyRequired: true,
    modelVar: 'OPENAI_MODEL',
    baseUrlVar: 'OPENAI_BASE_URL',
    baseUrlRequired: false,
    contextTokens: 128_000,
    // Chat Completions: stateless, so the whole transcript is sent each time, as tether requires.
    create: ({ apiKey, baseURL, modelId }) =>
      createOpenAI({ ...(apiKey ? { apiKey } : {}), ...(baseURL ? { baseURL } : {}) }).chat(modelId),
  },
  'openai-compatible': {
    keyVar: 'TETHER_OPENAI_API_KEY',
    keyRequired: false,
    modelVar: 'TETHER_MODEL',
    baseUrlVar: 'TETHER_OPENAI_BASE_URL',
    baseUrlRequired: true,
    contextTokens: 32_000,
    create: ({ apiKey, baseURL, modelId }) =>
      createOpenAICompatible({
        name: 'openai-compatible',
        // Checked before `create` is called: this provider is unusable without it.
        baseURL: baseURL!,
        ...(apiKey ? { apiKey } : {}),
      }).chatModel(modelId),
  },
} satisfies Record<string, ProviderSpec>

type ProviderName = keyof typeof PROVIDERS

const CHOICES =
  'openrouter:<model>, anthropic:<model>, openai:<model>, openai-compatible:<model> or scripted:<path>'

function isProviderName(name: string): name is ProviderName {
  return Object.hasOwn(PROVIDERS, name)
}

/** A variable counts as set only when it holds something besides whitespace. */
function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim()
  return value ? value : undefined
}

/** What is missing for a provider to be usable (empty when it is). */
function missing(env: NodeJS.ProcessEnv, name: ProviderName, modelGiven: boolean): string[] {
  const spec: ProviderSpec = PROVIDERS[name]
  return [
    ...(spec.keyRequired && !read(env, spec.keyVar) ? [spec.keyVar] : []),
    ...(spec.baseUrlRequired && !read(env, spec.baseUrlVar) ? [spec.baseUrlVar] : []),
    ...(modelGiven || read(env, spec.modelVar) ? [] : [spec.modelVar]),
  ]
}

function contextTokensFrom(env: NodeJS.ProcessEnv, fallback: number): number {
  const value = read(env, 'TETHER_CONTEXT_TOKENS')
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value) || Number(value) < 1024) {
    throw new ModelConfigError(
      `TETHER_CONTEXT_TOKENS must be a whole number of tokens, at least 1024 (got "${value}"); unset it to use the default`,
    )
  }
  return Number(value)
}

function build(env: NodeJS.ProcessEnv, name: ProviderName, model: string | undefined): ModelProvider {
  const spec: ProviderSpec = PROVIDERS[name]
  const lacking = missing(env, name, model !== undefined)
  if (lacking.length > 0) {
    throw new ModelConfigError(
      `the ${name} model provider needs ${lacking.join(' and ')}${lacking.includes(spec.modelVar) ? ` (or choose ${name}:<model>)` : ''}`,
    )
  }
  const modelId = model ?? read(env, spec.modelVar)!
  const apiKey = read(env, spec.keyVar)
  return aiSdkProvider({
    id: `${name}:${modelId}`,
    model: spec.create({
      ...(apiKey ? { apiKey } : {}),
      baseURL: read(env, spec.baseUrlVar),
      modelId,
    }),
    contextTokens: contextTokensFrom(env, spec.contextTokens),
    credentials: spec.keyVar,
  })
}

/**
 * The provider for `choice` (`<provider>:<model>`, `<provider>` alone for the model in its variable, or
 * `scripted:<path>`), or without a choice the first fully configured one in the order OpenRouter,
 * Anthropic, OpenAI, OpenAI-compatible. Reads only `env`, never `process.env` directly.
 * @throws ModelConfigError naming the variables to set or the choice to fix.
 */
export function providerFromEnv(env: NodeJS.ProcessEnv, choice?: string): ModelProvider {
  const wanted = choice?.trim()
  if (wanted) {
    const colon = wanted.indexOf(':')
    const name = colon < 0 ? wanted : wanted.slice(0, colon)
    // Only the first colon separates: model ids may contain colons (`qwen2.5-coder:7b`, `…:free`).
    const model = colon < 0 ? undefined : wanted.slice(colon + 1).trim() || undefined
    if (name === 'scripted') {
      if (!model)
        throw new ModelConfigError(
          'the scripted model needs a script: choose scripted:<path to a JSON script>',
        )
      return scriptedFileProvider(model, {
        id: `scripted:${model}`,
        contextTokens: contextTokensFrom(env, 200_000),
      })
    }
    if (!isProviderName(name)) throw new ModelConfigError(`unknown model choice "${wanted}": use ${CHOICES}`)
    return build(env, name, model)
  }
  const names = Object.keys(PROVIDERS) as ProviderName[]
  const ready = names.find((name) => missing(env, name, false).length === 0)
  if (ready) return build(env, ready, undefined)
  // Half-configured (a key without a model, say): say what that provider still lacks.
  const started = names.find((name) => {
    const spec: ProviderSpec = PROVIDERS[name]
    return (
      read(env, spec.keyVar) ||
      read(env, spec.modelVar) ||
      (spec.baseUrlRequired && read(env, spec.baseUrlVar))
    )
  })
  if (started) return build(env, started, undefined)
  throw new ModelConfigError(
    'no model provider is configured: set OPENROUTER_API_KEY and OPENROUTER_MODEL, or ANTHROPIC_API_KEY and ANTHROPIC_MODEL, or OPENAI_API_KEY and OPENAI_MODEL, or TETHER_OPENAI_BASE_URL and TETHER_MODEL (Ollama, vLLM), or choose scripted:<path>',
  )
}
