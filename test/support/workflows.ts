/** The workflow bundle the test suite uses: tether's workflows plus a few that exist only for tests. */
import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow'

export * from '../../src/workflows/index.js'

interface SmokeActivities {
  greet(name: string): Promise<string>
}

export const proceed = defineSignal<[string]>('proceed')

/** Runs one activity, then waits for a signal: the smallest shape of a durable run with a human in it. */
export async function smokeWorkflow(name: string): Promise<string> {
  let answer: string | undefined
  setHandler(proceed, (value) => {
    answer = value
  })
  const { greet } = proxyActivities<SmokeActivities>({ startToCloseTimeout: '30 seconds' })
  const greeting = await greet(name)
  await condition(() => answer !== undefined)
  return `${greeting}; ${answer}`
}
