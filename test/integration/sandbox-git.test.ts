/**
 * Git that cannot be turned into code, in a real run under `tiered` with the read-only list: what the
 * agent writes — git configuration through an allowed command, a repository made of plain files through
 * the file tools — never makes a later command run a program, and the audit shows why.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { Policy } from '../../src/policy/index.js'
import { npmWorkspace, startRun, useAgentHarness, writeScript } from '../support/agent.js'

const harness = useAgentHarness()
const exec = (...argv: string[]) => ({ name: 'exec', args: { argv } })
const write = (path: string, content: string) => ({ name: 'write_file', args: { path, content } })

/** The fixture project as a repository with two commits, as a real checkout is. */
async function gitWorkspace() {
  const ws = await npmWorkspace()
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: ws.path,
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: ws.path, GIT_CONFIG_NOSYSTEM: '1' },
    })
  git('init', '-q', '-b', 'main')
  git('config', 'user.name', 'Project')
  git('config', 'user.email', 'project@example.com')
  git('add', '-A')
  git('commit', '-q', '-m', 'one')
  git('commit', '-q', '--allow-empty', '-m', 'two')
  return { ...ws, head: git('rev-parse', 'HEAD') }
}

/** The run's outcome; an approval it waits for instead fails the test at once, naming what was asked. */
async function finishedUnasked(result: Promise<{ outcome: string }>, runId: string): Promise<string> {
  let settled = false
  const outcome = result
    .then((r) => r.outcome)
    .finally(() => {
      settled = true
    })
  while (!settled) {
    const [asked] = await harness.audit.pendingApprovals({ runId })
    if (asked) throw new Error(`the run asked about ${asked.target}`)
    await Promise.race([outcome, new Promise((resolve) => setTimeout(resolve, 250))])
  }
  return outcome
}

describe('git in a run', () => {
  it('cannot be armed by what the agent writes, and runs nothing it planted', async () => {
    const ws = await gitWorkspace()
    const marker = (name: string) => join(ws.path, `pwned-${name}`)
    const touch = (name: string) => `touch ${marker(name)}`
    try {
      const evil = {
        HEAD: ws.head,
        'refs/heads/main': ws.head,
        'objects/info/alternates': `${join(ws.path, '.git', 'objects')}\n`,
        config: `[core]\n\tbare = true\n\tfsmonitor = "${touch('fsmonitor')}; false"\n[diff]\n\texternal = ${touch('external')}\n[diff "evil"]\n\ttextconv = "${touch('textconv')}; cat"\n`,
        'info/attributes': '* diff=evil\n',
      }
      const model = `scripted:${await writeScript(ws.path, {
        turns: [
          // (a) an allowed command that writes git configuration, then read-only git.
          { toolCalls: [exec('git', 'config', 'core.fsmonitor', `${touch('fsmonitor')}; false`, '--get')] },
          { toolCalls: [exec('git', 'status', '--short')] },
          // (b) a repository made of plain files, and git there.
          { toolCalls: Object.entries(evil).map(([path, text]) => write(`src/evil/${path}`, text)) },
          { toolCalls: [write('src/evil/.git/config', evil.config)] },
          {
            toolCalls: [
              exec('git', '-C', 'src/evil', 'log', '-p'),
              exec('git', '-C', 'src/evil', 'diff', 'HEAD~1', 'HEAD'),
              exec('sh', '-c', 'cd src/evil && git status'),
            ],
          },
          { text: 'done' },
        ],
      } as never)}`
      // Rules allow what the read-only list no longer does, so the sandbox is what stands in the way.
      const policy = Policy.tiered()
        .withReadOnlyCommands()
        .layer('project')
        .allowWrite('src/*')
        .allowExec('git config core.fsmonitor*')
        .allowExec('touch *')
        .allowExec('git -C src/evil *')
        .allowExec('git status*')
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'arm git', workspace: ws.path, model, verification: null },
        policy,
      )
      const runId = handle.workflowId
      expect(await finishedUnasked(handle.result(), runId)).toBe('finished')

      const commands = await harness.audit.executedCommands({ runId })
      const [config, status, ...elsewhere] = commands
      expect(config?.argv.slice(0, 2)).toEqual(['git', 'config'])
      expect(config?.exitCode).not.toBe(0)
      expect(config?.stderr.text).toMatch(/could not (lock|write|commit) config file|Read-only file system/)
      expect(status).toMatchObject({ argv: ['git', 'status', '--short'], exitCode: 0 })
      expect(elsewhere).toHaveLength(3)
      for (const command of elsewhere) expect(command.exitCode, command.argv.join(' ')).not.toBe(0)

      const refusals = (await harness.audit.refusedActions({ runId, limit: 10 })).items
      expect(refusals).toHaveLength(1)
      expect(refusals[0]).toMatchObject({
        act: 'write',
        target: 'src/evil/.git/config',
        rule: 'git internals',
      })
      for (const name of ['fsmonitor', 'external', 'textconv'])
        expect(existsSync(marker(name)), name).toBe(false)
    } finally {
      await ws.cleanup()
    }
  })

  it('asks before a git config that sets a key, under the read-only list alone', async () => {
    const ws = await gitWorkspace()
    try {
      const model = `scripted:${await writeScript(ws.path, {
        turns: [{ toolCalls: [exec('git', 'config', 'core.fsmonitor', 'true', '--get')] }],
      } as never)}`
      const handle = await startRun(
        harness.client,
        harness.taskQueue,
        { goal: 'ask first', workspace: ws.path, model, verification: null },
        Policy.tiered().withReadOnlyCommands(),
      )
      await expect
        .poll(async () => (await harness.audit.pendingApprovals({ runId: handle.workflowId })).length, {
          timeout: 60_000,
        })
        .toBe(1)
      expect(await harness.audit.executedCommands({ runId: handle.workflowId })).toEqual([])
      await handle.terminate('test over')
    } finally {
      await ws.cleanup()
    }
  })
})
