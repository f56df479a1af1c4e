/**
 * Everything tether knows about programs: how bash reads a script, what a command effectively runs
 * (wrappers, launch options, scripts), which commands only read, which never exit, what package managers
 * run by name, and which environment variables no command may be given. Pure and deterministic (no I/O:
 * what it needs of a workspace comes in through `WorkspaceFiles`); the policy, the judge, toolchain
 * detection and "remember" all read programs through this door.
 */
export { type AnalysedNode, analyseArgv, analyseScript, basename, isShell } from './analyse.js'
export { type ExecNodeKind, handledPrograms } from './engine.js'
export { COMMIT_IDENTITY, neverPassed } from './environment.js'
export {
  type GlobShape,
  globMatcher,
  globMatches,
  globShape,
  globsIntersect,
  globToRegExpSource,
} from './glob.js'
export { type LongRunning, neverExitingCommand, type WorkspaceFiles } from './never-exiting.js'
export { type OptionSpec, resolveLong } from './options.js'
export { packageScripts, stringRecord } from './packages.js'
export { normalisePath } from './paths.js'
export { type ParsedCommand, parseCommand, programOptions } from './programs.js'
export { type ExecContext, namesSensitivePath, readOnlyCommand, SECRET_PATTERNS } from './readonly.js'
export { runsOtherCommands, runsProgramText } from './runs-others.js'
export { type ShellAssignment, staticWords } from './shell/parse.js'
