/**
 * What of the worker's home folder a sandboxed build still needs once home is emptied: toolchains that
 * live there (rustup, pyenv, nvm, Go's bin folder — anything on PATH below home), read-only; and the
 * package managers' caches (npm, Go modules and build cache, cargo registry, pip, Maven, Gradle, yarn,
 * pnpm), bound as the operator chose: read-write (builds fill them), read-only (builds only read them),
 * or not at all. Credentials that sit inside those folders stay hidden.
 */
import { delimiter, isAbsolute, join, sep } from 'node:path'

export type CacheAccess = 'read-write' | 'read-only' | 'none'

export interface ToolchainBinds {
  readOnly: string[]
  writable: string[]
  /** Credential files inside re-exposed folders. */
  hide: string[]
}

function under(path: string, folder: string): boolean {
  return path.startsWith(folder.endsWith(sep) ? folder : folder + sep)
}

export function toolchainBinds(
  env: Readonly<Record<string, string | undefined>>,
  caches: CacheAccess,
): ToolchainBinds {
  const home = env.HOME && isAbsolute(env.HOME) && env.HOME !== '/' ? env.HOME : undefined
  const at = (variable: string, fallback: string | undefined) => {
    const value = env[variable]
    return value && isAbsolute(value) ? value : fallback
  }
  const inHome = (...parts: string[]) => (home ? join(home, ...parts) : undefined)
  const cargoHome = at('CARGO_HOME', inHome('.cargo'))
  const goPath = at('GOPATH', inHome('go'))

  const tools = [
    at('RUSTUP_HOME', inHome('.rustup')),
    cargoHome,
    at('PYENV_ROOT', inHome('.pyenv')),
    at('NVM_DIR', inHome('.nvm')),
    inHome('.volta'),
    inHome('.sdkman'),
    at('GOROOT', undefined),
    goPath ? join(goPath, 'bin') : undefined,
    ...(env.PATH ?? '').split(delimiter).filter((dir) => home && under(dir, home)),
  ]
  const cacheFolders = [
    at('GOMODCACHE', goPath ? join(goPath, 'pkg', 'mod') : undefined),
    at('GOCACHE', inHome('.cache', 'go-build')),
    cargoHome ? join(cargoHome, 'registry') : undefined,
    cargoHome ? join(cargoHome, 'git') : undefined,
    at('npm_config_cache', inHome('.npm')),
    at('PIP_CACHE_DIR', inHome('.cache', 'pip')),
    inHome('.m2', 'repository'),
    at('GRADLE_USER_HOME', inHome('.gradle'))
      ? join(at('GRADLE_USER_HOME', inHome('.gradle')) as string, 'caches')
      : undefined,
    at('YARN_CACHE_FOLDER', inHome('.cache', 'yarn')),
    inHome('.cache', 'pnpm'),
    inHome('.local', 'share', 'pnpm', 'store'),
  ]
  const present = (paths: Array<string | undefined>) => [
    ...new Set(paths.filter((path): path is string => typeof path === 'string' && isAbsolute(path))),
  ]
  const readOnly = present(tools)
  const cacheList = present(cacheFolders)
  return {
    readOnly: caches === 'read-only' ? [...readOnly, ...cacheList] : readOnly,
    writable: caches === 'read-write' ? cacheList : [],
    hide: present([
      cargoHome ? join(cargoHome, 'credentials') : undefined,
      cargoHome ? join(cargoHome, 'credentials.toml') : undefined,
    ]),
  }
}
