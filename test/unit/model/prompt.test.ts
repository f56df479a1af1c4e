/** The system prompt names the goal, the rules of the workspace, and how the run ends. */
import { describe, expect, it } from 'vitest'
import { buildSystemPrompt } from '../../../src/model/index.js'

describe('buildSystemPrompt', () => {
  it('states the goal and the workspace rules', () => {
    const prompt = buildSystemPrompt({ goal: '  Make `npm test` pass.\n' })
    expect(prompt).toContain('Your goal:\n\nMake `npm test` pass.\n\nRules')
    expect(prompt).toMatch(/Paths are relative to the workspace root/)
    expect(prompt).toMatch(/There is no shell/)
    expect(prompt).toMatch(/approval and may be refused/)
    expect(prompt).toMatch(/reply without tool calls .* that ends the run/)
    expect(prompt).not.toMatch(/toolchain|Policy:|verified by/)
  })

  it('names the verification command and how it ends the run', () => {
    const prompt = buildSystemPrompt({ goal: 'fix it', verification: 'npm test' })
    expect(prompt).toContain('verified by the command `npm test`')
    expect(prompt).not.toContain('that ends the run')
  })

  it('adds the detected toolchain as unverified defaults and the policy summary', () => {
    const prompt = buildSystemPrompt({
      goal: 'fix it',
      toolchain: 'npm: install `npm install`, test `npm test`',
      policySummary: 'exec asks; writes to .env are refused',
    })
    expect(prompt).toContain('unverified defaults):\nnpm: install `npm install`, test `npm test`')
    expect(prompt).toContain('Policy:\nexec asks; writes to .env are refused')
    expect(prompt.indexOf('toolchain')).toBeLessThan(prompt.indexOf('Policy:'))
  })
})
