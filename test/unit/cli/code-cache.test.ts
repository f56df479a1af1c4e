import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { codeCacheDir, runCached } from '../../../src/cli/code-cache.js'

let dir: string
let script: string
let cacheDir: string

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tether-code-cache-'))
  script = join(dir, 'bundle.cjs')
  cacheDir = join(dir, 'cache')
  writeSource('one')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

function writeSource(word: string): void {
  writeFileSync(
    script,
    `"use strict";exports.word = ${JSON.stringify(word)};exports.url = __tetherUrl;` +
      `exports.base = () => __tetherImport('node:path').then((path) => path.basename(__filename));` +
      'exports.twice = (n) => n * 2;',
  )
}

const run = (name = 'ls') => runCached(script, { cacheDir, name, importer: (specifier) => import(specifier) })

/** The cache files written, wherever under the cache folder. */
function cacheFiles(): string[] {
  try {
    return readdirSync(cacheDir, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.v8'))
      .map((name) => join(cacheDir, name))
  } catch {
    return []
  }
}

describe('the code cache of the bundled CLI', () => {
  it('runs the script without a cache, writes one when asked, and takes it the next time', async () => {
    const first = run()
    expect(first.fromCache).toBe(false)
    expect(first.exports.word).toBe('one')
    expect(first.exports.url).toBe(`file://${script}`)
    await expect((first.exports.base as () => Promise<string>)()).resolves.toBe('bundle.cjs')
    expect(cacheFiles()).toEqual([])
    first.save()
    expect(cacheFiles()).toHaveLength(1)
    const second = run()
    expect(second.fromCache).toBe(true)
    expect((second.exports.twice as (n: number) => number)(21)).toBe(42)
  })

  it('keeps a cache per command', () => {
    run('ls').save()
    run('show').save()
    expect(
      cacheFiles()
        .map((file) => file.replace(/^.*-/, ''))
        .sort(),
    ).toEqual(['ls.v8', 'show.v8'])
    expect(run('show').fromCache).toBe(true)
  })

  it('ignores a corrupt or truncated cache, still runs, and writes a good one again', () => {
    run().save()
    const [file] = cacheFiles() as [string]
    const bytes = readFileSync(file)
    bytes.writeUInt8((bytes.at(-10) as number) ^ 0xff, bytes.length - 10)
    writeFileSync(file, bytes)
    const corrupt = run()
    expect(corrupt.fromCache).toBe(false)
    expect(corrupt.exports.word).toBe('one')
    corrupt.save()
    expect(run().fromCache).toBe(true)
    writeFileSync(file, bytes.subarray(0, 20))
    expect(run().fromCache).toBe(false)
    writeFileSync(file, '')
    expect(run().exports.word).toBe('one')
  })

  it("ignores a stale cache (the bundle changed) and removes older builds' caches when it writes", () => {
    run().save()
    const [old] = cacheFiles()
    writeSource('two')
    const changed = run()
    expect(changed.fromCache).toBe(false)
    expect(changed.exports.word).toBe('two')
    changed.save()
    expect(cacheFiles()).toHaveLength(1)
    expect(cacheFiles()).not.toContain(old)
    expect(run().fromCache).toBe(true)
  })

  it('runs, and saves nothing, where the cache folder cannot be written', () => {
    writeFileSync(cacheDir, 'a file, not a folder')
    const ran = run()
    expect(() => ran.save()).not.toThrow()
    expect(ran.exports.word).toBe('one')
    expect(run().fromCache).toBe(false)
  })

  it("lives in the user's cache folder (XDG_CACHE_HOME, else ~/.cache)", () => {
    expect(codeCacheDir({ XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/tether/code')
    expect(codeCacheDir({})).toMatch(/\/\.cache\/tether\/code$/)
  })
})
