import { describe, expect, it } from 'vitest'
import { StepPacer } from '../../../src/activities/pacing.js'

/** A pacer of at least `least` on a clock the test moves, that has heard from its runs' sink. */
function pacer(least: number) {
  const clock = { now: 0 }
  const made = new StepPacer({ least, now: () => clock.now })
  made.resumed('a run of another test')
  return { pacer: made, clock }
}

/** Which of `turns` have resolved, after the microtasks and one recheck of the pacer have run. */
async function through(turns: Record<string, Promise<void>>): Promise<string[]> {
  const done: string[] = []
  for (const [name, turn] of Object.entries(turns)) void turn.then(() => done.push(name))
  await new Promise((resolve) => setTimeout(resolve, 250))
  return done.sort()
}

describe('a worker’s pacing', () => {
  it('lets a model turn start at once while fewer runs than its bound wait for a workflow task', async () => {
    const { pacer: p } = pacer(2)
    p.ended('a')
    expect(await through({ b: p.turn('b') })).toEqual(['b'])
    expect(p.held).toBe(0)
  })

  it('holds turns while its bound wait, and lets them through first come first served as runs take their results', async () => {
    const { pacer: p } = pacer(2)
    p.ended('a')
    p.ended('b')
    const turns = { c: p.turn('c'), d: p.turn('d') }
    expect(await through(turns)).toEqual([])
    expect(p.waiting).toBe(2)
    p.resumed('a')
    expect(await through(turns)).toEqual(['c'])
    // c's turn counts until it ends; then c waits for its task like the others.
    p.resumed('b')
    expect(await through(turns)).toEqual(['c', 'd'])
    expect(p.held).toBe(2)
    expect(p.load).toBe(2)
    p.ended('c')
    p.ended('d')
    expect(p.load).toBe(2)
    p.resumed('c')
    p.resumed('d')
    expect(p.load).toBe(0)
  })

  it('raises its bound to the workflow tasks its worker takes in 3 s at its recent pace', async () => {
    const { pacer: p, clock } = pacer(2)
    expect(p.bound).toBe(2)
    for (let run = 0; run < 100; run++) {
      clock.now = run * 20
      p.ended(`r${run}`)
      p.resumed(`r${run}`)
    }
    clock.now = 2_000
    // 100 results in 2 s: 50 a second, 150 in 3 s.
    expect(p.bound).toBe(150)
    for (let run = 0; run < 3; run++) p.ended(`w${run}`)
    expect(await through({ turn: p.turn('t') })).toEqual(['turn'])
    expect(p.held).toBe(0)
    // A window without results halves the pace it had.
    clock.now = 4_000
    expect(p.bound).toBe(75)
  })

  it('keeps its bound at its least whatever the pace when it allows no queue in time', () => {
    const clock = { now: 0 }
    const p = new StepPacer({ least: 2, queueMs: 0, now: () => clock.now })
    for (let run = 0; run < 100; run++) {
      p.ended(`r${run}`)
      p.resumed(`r${run}`)
    }
    clock.now = 2_000
    expect(p.bound).toBe(2)
  })

  it('holds nothing back on a Worker whose runs have never said they took a result (one without the sink)', async () => {
    const p = new StepPacer({ least: 1, now: () => 0 })
    p.ended('a')
    p.ended('b')
    expect(await through({ c: p.turn('c') })).toEqual(['c'])
    expect(p.held).toBe(0)
    p.resumed('a')
    expect(await through({ d: p.turn('d') })).toEqual([])
  })

  it('counts a run that starts an activity (a retry the workflow never saw fail) as no longer waiting', async () => {
    const { pacer: p } = pacer(1)
    p.ended('a')
    const turn = p.turn('b')
    expect(await through({ turn })).toEqual([])
    p.started('a')
    expect(await through({ turn })).toEqual(['turn'])
  })

  it('stops counting a turn after a second of its own (a provider’s wait is not the worker’s CPU), and a run that never says it took its result after 30 s', async () => {
    const { pacer: p, clock } = pacer(1)
    await p.turn('a')
    const turn = p.turn('b')
    expect(await through({ turn })).toEqual([])
    clock.now = 1_001
    expect(await through({ turn })).toEqual(['turn'])
    p.ended('b')
    const next = p.turn('c')
    clock.now = 30_000
    expect(await through({ next })).toEqual([])
    clock.now = 31_002
    expect(await through({ next })).toEqual(['next'])
  })

  it('lets a turn through after a minute whatever waits, and one whose activity is cancelled at once', async () => {
    const { pacer: p, clock } = pacer(1)
    p.ended('a')
    const cancel = new AbortController()
    const turns = { b: p.turn('b'), c: p.turn('c', cancel.signal), d: p.turn('d') }
    expect(await through(turns)).toEqual([])
    cancel.abort()
    expect(await through(turns)).toEqual(['c'])
    expect(p.waiting).toBe(2)
    // Another run waiting for its task keeps the bound reached.
    clock.now = 59_000
    p.ended('e')
    expect(await through(turns)).toEqual(['c'])
    clock.now = 60_001
    expect(await through(turns)).toEqual(['b', 'c', 'd'])
    expect(p.waiting).toBe(0)
  })
})
