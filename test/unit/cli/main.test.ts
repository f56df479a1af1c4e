/**
 * The `tether` command loads only the module of the command a command line names (src/cli/main.ts): a name
 * put under the wrong module in its table would make that command unknown, so each is checked against the
 * program with every module registered.
 */
import { describe, expect, it } from 'vitest'
import { loadProgram, modulesFor } from '../../../src/cli/main.js'

const names = (program: Awaited<ReturnType<typeof loadProgram>>) => program.commands.map((c) => c.name())

describe('the command modules a command line loads', () => {
  it('registers each top-level command when the command line names it, and little else', async () => {
    const all = names(await loadProgram(['--help']))
    expect(all).toEqual(expect.arrayContaining(['dev', 'run', 'ls', 'show', 'approvals', 'approve', 'mcp']))
    for (const name of all) {
      const registered = names(await loadProgram([name, '--json']))
      expect(registered, name).toContain(name)
      if (name !== 'completion') expect(registered.length, name).toBeLessThan(all.length)
    }
  })

  it('loads every module for help, completion, an unknown word or an option before the command', () => {
    const every = modulesFor(['--help']).length
    expect(every).toBeGreaterThan(5)
    for (const argv of [[], ['help', 'ls'], ['completion', 'bash'], ['lss'], ['-h'], ['--profile']])
      expect(modulesFor(argv).length, argv.join(' ')).toBe(every)
  })

  it('finds the command after the global --profile, and loads none for --version', () => {
    expect(modulesFor(['--profile', 'work', 'ls'])).toEqual(modulesFor(['ls']))
    expect(modulesFor(['--profile=work', 'approvals'])).toEqual(modulesFor(['approvals']))
    expect(modulesFor(['ls']).length).toBe(1)
    expect(modulesFor(['--version'])).toEqual([])
    expect(modulesFor(['-V'])).toEqual([])
  })

  it("says in every command's help which options it cannot run without", async () => {
    const program = await loadProgram(['--help'])
    const help = (name: string) => {
      const command = program.commands.find((c) => c.name() === name)
      if (!command) throw new Error(`no command ${name}`)
      return command.helpInformation()
    }
    expect(help('deny')).toMatch(/--reason <text> +why; the model reads it \(required\)/)
    expect(help('run')).toMatch(/--goal <text> +what the run should achieve \(required\)/)
    expect(help('deny')).not.toMatch(/--as <name>[^\n]*\(required\)/)
  })
})
