/**
 * The bundled CLI is one CommonJS script (dist/src/bundle/tether.cjs) compiled with a V8 code cache: most of
 * a command's start is V8 compiling the bundle, and Node 20 caches nothing between runs. The cache is one
 * file per command in the user's cache folder, keyed by a hash of the bundle and of the Node that compiled
 * it, checked against a digest of its own bytes, and written atomically after a command that succeeded. A
 * cache that is stale, corrupt, unreadable or rejected by V8 is ignored (and rewritten): never wrong, only
 * slower. Light on purpose: only Node's own modules, before anything of tether's is loaded.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Script } from 'node:vm'

/** What the bundle's code sees as its CommonJS scope, with its `import.meta.url` and its `import()`. */
const SCOPE = ['exports', 'require', 'module', '__filename', '__dirname', '__tetherUrl', '__tetherImport']
const DIGEST = 32

/** `$XDG_CACHE_HOME/tether/code`, else `~/.cache/tether/code`. */
export function codeCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'tether', 'code')
}

export interface CachedScript {
  exports: Record<string, unknown>
  /** Whether V8 took the compiled code from the cache. */
  fromCache: boolean
  /** Writes the cache for this script (what it has compiled so far); a no-op when it came from a good one. */
  save(): void
}

export interface CacheOptions {
  cacheDir: string
  /** What this run does (a command's name): each is cached apart, with the functions it compiled. */
  name: string
  /** The bundle's `import()` of what it leaves outside (Node's own loader, from the caller's module). */
  importer: (specifier: string) => Promise<unknown>
}

/** Loads and runs the CommonJS script `file` with a code cache for it. */
export function runCached(file: string, options: CacheOptions): CachedScript {
  const source = readFileSync(file, 'utf8')
  const key = createHash('sha256')
    .update(`${process.version} ${process.arch}\n`)
    .update(source)
    .digest('hex')
    .slice(0, 24)
  // A folder per bundle on the machine (two installs of tether do not evict each other's caches).
  const dir = join(options.cacheDir, createHash('sha256').update(file).digest('hex').slice(0, 16))
  const cacheFile = join(dir, `${key}-${options.name.replace(/[^a-z0-9-]/gi, '_')}.v8`)
  const cachedData = readCache(cacheFile)
  const script = new Script(`(function (${SCOPE.join(', ')}) {${source}\n})`, {
    filename: file,
    ...(cachedData ? { cachedData } : {}),
  })
  const fromCache = cachedData !== undefined && script.cachedDataRejected === false
  const module = { exports: {} as Record<string, unknown> }
  const scope = [module.exports, createRequire(file), module, file, dirname(file), pathToFileURL(file).href]
  script.runInThisContext()(...scope, options.importer)
  return {
    exports: module.exports,
    fromCache,
    save: () => {
      if (!fromCache) writeCache(dir, cacheFile, key, script.createCachedData())
    },
  }
}

/** The cache's bytes if their digest holds; anything else (absent, short, altered) is no cache. */
function readCache(file: string): Buffer | undefined {
  let bytes: Buffer
  try {
    bytes = readFileSync(file)
  } catch {
    return undefined
  }
  const data = bytes.subarray(DIGEST)
  const digest = createHash('sha256').update(data).digest()
  return bytes.length > DIGEST && digest.equals(bytes.subarray(0, DIGEST)) ? data : undefined
}

/** Written beside and renamed into place, so a reader sees a whole file or none; older builds' caches go. */
function writeCache(dir: string, file: string, key: string, data: Buffer): void {
  const temporary = `${file}.${process.pid}.tmp`
  try {
    mkdirSync(dir, { recursive: true })
    writeFileSync(temporary, Buffer.concat([createHash('sha256').update(data).digest(), data]))
    renameSync(temporary, file)
    for (const name of readdirSync(dir)) {
      if (!name.startsWith(key) && name.endsWith('.v8')) rmSync(join(dir, name), { force: true })
    }
  } catch {
    // A cache folder that cannot be written costs the next start its compile time, nothing else.
    try {
      rmSync(temporary, { force: true })
    } catch {
      // nowhere to have written it
    }
  }
}
