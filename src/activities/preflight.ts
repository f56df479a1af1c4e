/**
 * The contract checked against the world, on the worker, before the first step: a run that cannot work
 * fails here with one line, before anyone is asked to approve anything. Everything is checked where the
 * run will happen — the worker's file system, its PATH, its model settings — not where `tether run` was
 * typed.
 */
import { constants } from 'node:fs'
import { access, stat } from 'node:fs/promises'
import { delimiter, isAbsolute, join, resolve } from 'node:path'
import type { ModelProvider } from '../model/index.js'
import type { TaskContract } from '../run/index.js'
import type { CommandSandbox } from './sandbox.js'

/** Every problem found, each as one short sentence; empty when the run can start. */
export async function contractProblems(
  contract: TaskContract,
  provider: (choice: string | undefined) => ModelProvider,
  sandbox: Pick<CommandSandbox, 'workspaceRefusal'>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  const problems: string[] = []
  // A workspace from a source is laid out by the worker at the run's start: there is no folder to check yet.
  const folder = contract.workspace
  const workspace =
    folder !== undefined ? ((await workspaceProblem(folder)) ?? sandbox.workspaceRefusal(folder)) : undefined
  if (workspace) problems.push(workspace)
  const program = contract.verification?.command[0]
  if (program !== undefined && !workspace && (folder !== undefined || !program.includes('/'))) {
    const missing = await programProblem(program, folder ?? '/', env)
    if (missing) problems.push(`the verification command's program ${missing}`)
  }
  try {
    provider(contract.model)
  } catch (error) {
    problems.push(
      `the worker cannot use the model ${contract.model ? `"${contract.model}"` : 'from its environment'}: ` +
        `${(error as Error).message} (model settings are read where the worker runs, not where the run is started)`,
    )
  }
  return problems
}

async function workspaceProblem(path: string): Promise<string | undefined> {
  if (!isAbsolute(path)) return `the workspace ${path} is not an absolute path`
  try {
    if (!(await stat(path)).isDirectory()) return `the workspace ${path} is not a directory`
    await access(path, constants.R_OK | constants.X_OK)
    return undefined
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return `the workspace ${path} does not exist on the worker`
    if (code === 'ENOTDIR') return `the workspace ${path} is not a directory`
    return `the workspace ${path} cannot be entered (${code})`
  }
}

/** Why `program` could not be started from `cwd`, the way the exec runner would look for it. */
async function programProblem(
  program: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  if (program.includes('/')) {
    return (await executable(resolve(cwd, program)))
      ? undefined
      : `"${program}" is not an executable file in the workspace`
  }
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && (await executable(join(resolve(cwd, dir), program)))) return undefined
  }
  return `"${program}" is not on the worker's PATH`
}

async function executable(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false
    await access(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}
