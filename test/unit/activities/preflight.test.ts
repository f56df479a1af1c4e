/**
 * The contract checked against the worker's world (src/activities/preflight.ts): a run may not work where
 * the worker keeps its own state, keys or credentials — the file tools and the snapshots would reach what the
 * sandbox hides from commands.
 */
import { chown, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contractProblems } from '../../../src/activities/preflight.js'
import { CommandSandbox } from '../../../src/activities/sandbox.js'
import { isRootWorker } from '../../../src/exec/index.js'
import { scriptedProvider } from '../../../src/model/index.js'
import { parseContract } from '../../../src/run/index.js'

let dir: string
let state: string
let sandbox: CommandSandbox
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-preflight-'))
  state = join(dir, 'home', '.local', 'state', 'tether')
  await mkdir(join(state, 'postgres'), { recursive: true })
  await mkdir(join(dir, 'home', 'project'), { recursive: true })
  await symlink(join(dir, 'home'), join(dir, 'link-to-home'))
  sandbox = new CommandSandbox({
    env: { PATH: process.env.PATH, HOME: join(dir, 'home'), TETHER_STATE_DIR: state },
  })
})
afterAll(() => rm(dir, { recursive: true, force: true }))

const problems = (workspace: string) =>
  contractProblems(
    parseContract({ goal: 'g', workspace, verification: null, model: 'scripted:none' }),
    () => scriptedProvider({ turns: [] }),
    sandbox,
  )

describe("a run's workspace", () => {
  it("is refused when it is, holds or lies in the worker's state folder, however it is named", async () => {
    await symlink(state, join(dir, 'link-to-state'))
    for (const [workspace, relation] of [
      [state, ''],
      [join(dir, 'link-to-state'), ` is ${state}, which`],
      [join(dir, 'home'), ` holds ${state}, which`],
      [join(dir, 'link-to-home'), ` holds ${state}, which`],
      [join(state, 'postgres'), ` lies in ${state}, which`],
    ] as const) {
      expect(await problems(workspace), workspace).toEqual([
        `the workspace ${workspace}${relation} is the worker's own (tether's state, keys or ` +
          "credentials, or the folder it lays out runs' workspaces in): no run works there; start the run on a " +
          'project folder, or from a source',
      ])
    }
  })

  it('is accepted beside it', async () => {
    expect(await problems(join(dir, 'home', 'project'))).toEqual([])
  })

  // The file tools write as the worker: for a root worker, as root, wherever the workspace is.
  it.runIf(isRootWorker())(
    "is refused, on a root worker, where its commands could not run: a system folder, another user's",
    async () => {
      const system = await mkdtemp('/usr/local/share/tether-preflight-')
      try {
        expect(await problems(system)).toEqual([
          `the workspace ${system} is a system folder; a root worker makes the workspace its commands' own, ` +
            'which it will not do to that folder: use a folder made for the run, or run the worker as a user ' +
            'that may change it',
        ])
      } finally {
        await rm(system, { recursive: true, force: true })
      }
      const theirs = join(dir, 'theirs')
      await mkdir(theirs)
      await chown(theirs, 54321, 54321)
      expect((await problems(theirs))[0]).toMatch(/^the workspace \S+ belongs to uid 54321; /)
    },
  )
})
