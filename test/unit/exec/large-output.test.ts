import { createHash } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { elisionMarker, runCommand } from '../../../src/exec/index.js'
import { logBlock, REPEAT_FILE_WRITER } from '../../fixtures/exec/probes.js'

const MIB = 2 ** 20
const COPIES = 1024 // of a 1 MiB block: 1 GiB
const CEILING = 12_000

let dir: string
let block: Buffer
let blockFile: string

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tether-exec-large-'))
  block = logBlock(MIB)
  blockFile = join(dir, 'block.txt')
  await writeFile(blockFile, block)
})
afterAll(() => rm(dir, { recursive: true, force: true }))

describe('1 GiB of output', () => {
  it('is captured in bounded memory with an exact elided count and sha256', {
    timeout: 180_000,
  }, async () => {
    expect(block.length).toBe(MIB)
    const chars = [...block.toString('utf8')]
    const hash = createHash('sha256')
    for (let i = 0; i < COPIES; i++) hash.update(block)

    const rssBefore = process.memoryUsage.rss()
    let rssPeak = rssBefore
    const result = await runCommand({
      argv: [process.execPath, REPEAT_FILE_WRITER, blockFile, String(COPIES)],
      cwd: dir,
      outputCeiling: CEILING,
      onProgress: () => {
        rssPeak = Math.max(rssPeak, process.memoryUsage.rss())
      },
    })

    expect(result.status).toBe('exited')
    const { stdout } = result
    expect(stdout.bytes).toBe(COPIES * MIB)
    expect(stdout.sha256).toBe(hash.digest('hex'))
    expect(stdout.lines).toBe(COPIES * block.toString().split('\n').length - COPIES)
    const elided = COPIES * chars.length - CEILING
    expect(stdout.elided).toBe(elided)
    expect(stdout.text).toBe(
      chars.slice(0, CEILING / 2).join('') +
        elisionMarker(elided) +
        chars.slice(chars.length - CEILING / 2).join(''),
    )
    // Holding the stream (or even a tenth of it) would show here; capture itself needs a few MiB at most.
    const growth = (rssPeak - rssBefore) / MIB
    expect(growth, `RSS grew by ${growth.toFixed(1)} MiB`).toBeLessThan(100)
  })
})
