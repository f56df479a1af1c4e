/**
 * What path safety costs the workspace tools: each tool next to the plain Node call it wraps, measured side
 * by side in one run (median of several rounds), printed as time per call and the ratio.
 *
 *   npx tsx bench/workspace.ts
 */
import {
  readFile as fsReadFile,
  writeFile as fsWriteFile,
  mkdir,
  mkdtemp,
  readdir,
  rm,
} from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import {
  longRunningCommand,
  normaliseWorkspacePath,
  readFile,
  resolveWorkspacePath,
  searchFiles,
  writeFile,
} from '../src/workspace/index.js'

const ROUNDS = 7

async function median(iterations: number, run: (i: number) => unknown | Promise<unknown>): Promise<number> {
  const perCall: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) await run(i)
    perCall.push(Number(process.hrtime.bigint() - start) / 1_000 / iterations)
  }
  perCall.sort((a, b) => a - b)
  return perCall[Math.floor(ROUNDS / 2)]!
}

function report(name: string, tether: number, plain: number, plainName: string): void {
  const ratio = tether / plain
  console.log(
    `${name.padEnd(34)} ${tether.toFixed(1).padStart(9)} µs   ${plainName.padEnd(30)} ${plain.toFixed(1).padStart(9)} µs   ratio ${ratio.toFixed(2)}`,
  )
}

async function naiveWalk(dir: string, regex: RegExp, hits: string[]): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) await naiveWalk(full, regex, hits)
    else if (entry.isFile()) {
      for (const line of (await fsReadFile(full, 'utf8')).split('\n')) if (regex.test(line)) hits.push(line)
    }
  }
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(tmpdir(), 'tether-bench-workspace-'))
  try {
    const deep = 'packages/app/src/components'
    await mkdir(path.join(root, deep), { recursive: true })
    const source = Array.from({ length: 2_000 }, (_, i) => `export const value${i} = ${i} // line ${i}`).join(
      '\n',
    )
    await fsWriteFile(path.join(root, deep, 'big.ts'), source)
    for (let d = 0; d < 20; d++) {
      await mkdir(path.join(root, 'tree', `d${d}`), { recursive: true })
      for (let f = 0; f < 100; f++) {
        await fsWriteFile(
          path.join(root, 'tree', `d${d}`, `f${f}.ts`),
          `// file ${d}/${f}\nexport const x = ${f}\n`,
        )
      }
    }
    await fsWriteFile(
      path.join(root, 'package.json'),
      JSON.stringify({ scripts: { dev: 'npm run serve', serve: 'vite' } }),
    )
    const relative = `${deep}/big.ts`
    const absolute = path.join(root, relative)

    console.log(`workspace tools vs plain Node (median of ${ROUNDS} rounds, per call)\n`)
    const lexical = await median(20_000, () => normaliseWorkspacePath(relative))
    const naiveResolve = await median(20_000, () => path.resolve(root, relative).startsWith(root))
    report('normaliseWorkspacePath', lexical, naiveResolve, 'path.resolve + startsWith')
    const resolved = await median(5_000, () => resolveWorkspacePath(root, relative))
    report('resolveWorkspacePath (5 levels)', resolved, naiveResolve, 'path.resolve + startsWith')

    const read = await median(200, () => readFile(root, { path: relative }))
    const plainRead = await median(200, async () =>
      (await fsReadFile(absolute, 'utf8'))
        .split('\n')
        .map((line, i) => `${i + 1}\t${line}`)
        .join('\n'),
    )
    report('readFile (2,000 lines)', read, plainRead, 'fs.readFile + number lines')

    const write = await median(300, (i) =>
      writeFile(root, { path: `${deep}/out.ts`, content: `// ${i}\n${source}` }),
    )
    const plainWrite = await median(300, (i) =>
      fsWriteFile(path.join(root, deep, 'plain.ts'), `// ${i}\n${source}`),
    )
    report('writeFile (atomic, confirmed)', write, plainWrite, 'fs.writeFile in place')

    const search = await median(5, () => searchFiles(root, { pattern: 'file 7/' }, { canRead: () => true }))
    const plainSearch = await median(5, () => naiveWalk(path.join(root), /file 7\//, []))
    report('searchFiles (2,000 files)', search, plainSearch, 'recursive readdir + readFile')

    const longRunning = await median(2_000, () => longRunningCommand(root, ['npm', 'run', 'dev']))
    const direct = await median(2_000, () => longRunningCommand(root, ['vitest', '--watch']))
    report('longRunningCommand(npm run dev)', longRunning, direct, 'longRunningCommand(vitest -w)')
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

await main()
