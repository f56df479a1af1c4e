/**
 * The system prompt: the goal and the rules of the workspace, short enough to leave the context to the work.
 */
export interface SystemPromptInput {
  goal: string
  /** Detected toolchain commands, shown to the model as unverified defaults. */
  toolchain?: string
  /** What the policy allows, asks about and refuses, in a few lines. */
  policySummary?: string
  /** The verification command as a person would type it, e.g. `npm test`. */
  verification?: string
}

export function buildSystemPrompt(input: SystemPromptInput): string {
  const ending = input.verification
    ? [
        `- The run is verified by the command \`${input.verification}\`: it ends as soon as that command passes.`,
        '  If it fails you see its output and carry on.',
        '- When you think the goal is met, reply without tool calls; tether then runs the verification.',
      ]
    : ['- When the goal is met, reply without tool calls and say briefly what you did; that ends the run.']
  const sections = [
    `You are tether, a coding agent working in one project workspace. Your goal:\n\n${input.goal.trim()}`,
    [
      'Rules of the workspace:',
      '- Work only through the tools offered. Paths are relative to the workspace root; absolute paths, `..` and',
      '  symbolic links that lead outside it are refused.',
      '- `exec` runs one program with an argv array. There is no shell: pipes, redirections, `&&`, globs and',
      '  `$VARIABLES` are not interpreted. Run one command per call.',
      "- Every action is checked against a policy. Some need a person's approval and may be refused; a refusal",
      '  comes back as a tool result naming the rule. Do not repeat a refused action: find another way.',
      '- Commands that never exit (watch modes, dev servers) are refused; use their one-shot form.',
      '- Tool results are bounded, and old ones may be elided to fit your context: read a file again if needed.',
      ...ending,
      '- The run also ends when its step, token or time budget runs out, so work directly.',
    ].join('\n'),
    input.toolchain &&
      `Project toolchain (detected from marker files, unverified defaults):\n${input.toolchain.trim()}`,
    input.policySummary && `Policy:\n${input.policySummary.trim()}`,
  ]
  return sections.filter(Boolean).join('\n\n')
}
