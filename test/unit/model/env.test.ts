/** Choosing and configuring a provider from the environment and a `<provider>:<model>` choice. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { ModelConfigError, providerFromEnv } from '../../../src/model/index.js'

const openrouter = { OPENROUTER_API_KEY: 'or-key', OPENROUTER_MODEL: 'anthropic/claude-sonnet-4' }
const anthropic = { ANTHROPIC_API_KEY: 'an-key', ANTHROPIC_MODEL: 'claude-sonnet-4-5' }
const openai = { OPENAI_API_KEY: 'oa-key', OPENAI_MODEL: 'gpt-4.1' }
const local = { TETHER_OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', TETHER_MODEL: 'qwen2.5-coder:7b' }

describe('providerFromEnv', () => {
  it('says which variables to set when nothing is configured', () => {
    expect(() => providerFromEnv({})).toThrow(ModelConfigError)
    expect(() => providerFromEnv({})).toThrow(
      /OPENROUTER_API_KEY and OPENROUTER_MODEL.*ANTHROPIC_API_KEY and ANTHROPIC_MODEL.*OPENAI_API_KEY and OPENAI_MODEL.*TETHER_OPENAI_BASE_URL and TETHER_MODEL/,
    )
  })

  it('picks the first fully configured provider: OpenRouter, Anthropic, OpenAI, then OpenAI-compatible', () => {
    expect(providerFromEnv({ ...local, ...openai, ...anthropic, ...openrouter }).id).toBe(
      'openrouter:anthropic/claude-sonnet-4',
    )
    expect(providerFromEnv({ ...local, ...openai, ...anthropic }).id).toBe('anthropic:claude-sonnet-4-5')
    expect(providerFromEnv({ ...local, ...openai }).id).toBe('openai:gpt-4.1')
    expect(providerFromEnv(local).id).toBe('openai-compatible:qwen2.5-coder:7b')
    // A key without its model does not shadow a provider that is ready.
    expect(providerFromEnv({ OPENROUTER_API_KEY: 'k', ...openai }).id).toBe('openai:gpt-4.1')
  })

  it('names what a half-configured provider still lacks', () => {
    expect(() => providerFromEnv({ ANTHROPIC_API_KEY: 'k' })).toThrow(
      'the anthropic model provider needs ANTHROPIC_MODEL (or choose anthropic:<model>)',
    )
    expect(() => providerFromEnv({ TETHER_MODEL: 'llama3' })).toThrow('needs TETHER_OPENAI_BASE_URL')
    expect(() => providerFromEnv({ OPENROUTER_MODEL: 'x', OPENROUTER_API_KEY: '   ' })).toThrow(
      'needs OPENROUTER_API_KEY',
    )
  })

  it('follows a choice, taking the model from it or from the provider’s variable', () => {
    const env = { ...openrouter, ...anthropic, ...openai, ...local }
    expect(providerFromEnv(env, 'anthropic:claude-opus-4-1').id).toBe('anthropic:claude-opus-4-1')
    expect(providerFromEnv(env, 'openai').id).toBe('openai:gpt-4.1')
    expect(providerFromEnv(env, 'openrouter:meta-llama/llama-3.3-70b-instruct:free').id).toBe(
      'openrouter:meta-llama/llama-3.3-70b-instruct:free',
    )
    expect(providerFromEnv(env, ' openai-compatible:llama3.1:8b ').id).toBe('openai-compatible:llama3.1:8b')
  })

  it('refuses a choice it cannot serve, naming what to fix', () => {
    expect(() => providerFromEnv(openrouter, 'anthropic:claude-x')).toThrow(
      'the anthropic model provider needs ANTHROPIC_API_KEY',
    )
    expect(() => providerFromEnv({ OPENAI_API_KEY: 'k' }, 'openai')).toThrow(
      'needs OPENAI_MODEL (or choose openai:<model>)',
    )
    expect(() => providerFromEnv({}, 'openai-compatible:llama3')).toThrow('needs TETHER_OPENAI_BASE_URL')
    expect(() => providerFromEnv(openrouter, 'gpt-4o')).toThrow(
      'unknown model choice "gpt-4o": use openrouter:<model>, anthropic:<model>, openai:<model>, openai-compatible:<model> or scripted:<path>',
    )
    expect(() => providerFromEnv({}, 'scripted')).toThrow('choose scripted:<path to a JSON script>')
  })

  it('gives an id that chooses the same provider again', () => {
    const env = { ...openrouter, ...anthropic, ...openai, ...local }
    for (const choice of [undefined, 'anthropic', 'openai:o3', 'openai-compatible', 'openrouter:x/y:free']) {
      const provider = providerFromEnv(env, choice)
      expect(providerFromEnv(env, provider.id).id).toBe(provider.id)
    }
  })

  it('sizes the context window per provider, overridable with TETHER_CONTEXT_TOKENS', () => {
    expect(providerFromEnv(anthropic).contextTokens).toBe(200_000)
    expect(providerFromEnv(openrouter).contextTokens).toBe(128_000)
    expect(providerFromEnv(local).contextTokens).toBe(32_000)
    expect(providerFromEnv({ ...local, TETHER_CONTEXT_TOKENS: '8192' }).contextTokens).toBe(8192)
    for (const bad of ['lots', '100', '1e6', '-5']) {
      expect(() => providerFromEnv({ ...local, TETHER_CONTEXT_TOKENS: bad })).toThrow(
        `TETHER_CONTEXT_TOKENS must be a whole number of tokens, at least 1024 (got "${bad}")`,
      )
    }
  })

  it('reads only the environment it is given', () => {
    const saved = process.env.ANTHROPIC_API_KEY
    process.env.ANTHROPIC_API_KEY = 'from-process-env'
    try {
      expect(() => providerFromEnv({ ANTHROPIC_MODEL: 'claude-x' })).toThrow('needs ANTHROPIC_API_KEY')
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY
      else process.env.ANTHROPIC_API_KEY = saved
    }
  })

  it('loads a scripted model from a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tether-env-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const path = join(dir, 'demo.json')
    await writeFile(path, JSON.stringify({ turns: [{ text: 'hello' }] }))
    const provider = providerFromEnv({ TETHER_CONTEXT_TOKENS: '5000' }, `scripted:${path}`)
    expect(provider).toMatchObject({ id: `scripted:${path}`, contextTokens: 5000 })
    const reply = await provider.generate({ system: '', messages: [{ role: 'user', content: 'hi' }] })
    expect(reply.text).toBe('hello')
    // A worker keeps its providers: an edited script is played without a restart.
    await writeFile(path, JSON.stringify({ turns: [{ text: 'hello, edited' }], contextTokens: 7000 }))
    const again = await provider.generate({ system: '', messages: [{ role: 'user', content: 'hi' }] })
    expect(again.text).toBe('hello, edited')
    expect(provider.contextTokens).toBe(7000)
    await writeFile(path, JSON.stringify({ turns: [{ text: 1 }] }))
    expect(() => providerFromEnv({}, `scripted:${path}`)).toThrow(
      `model script ${path} is invalid: turn 0, text`,
    )
  })
})
