/**
 * Once per test run: a real PostgreSQL (embedded, unless DATABASE_URL is set) and a real Temporal dev server
 * (unless TEMPORAL_ADDRESS is set), plus one workflow bundle that every test Worker shares. Both servers are
 * stopped by pid at the end; a reaper stops them and deletes the temporary folder if the run is killed.
 */
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bundleWorkflowCode } from '@temporalio/worker'
import type { TestProject } from 'vitest/node'
import {
  DevServerStartError,
  EmbeddedPostgresError,
  type LocalStack,
  startLocalStack,
  TemporalCliUnavailableError,
} from '../../src/stack/index.js'

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string
    namespace: string
    databaseUrl: string
    workflowBundlePath: string
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stateDir = await mkdtemp(join(tmpdir(), 'tether-test-'))
  const log = (line: string) => console.log(`[test stack] ${line}`)
  const started = Date.now()
  let stack: LocalStack
  try {
    stack = await startLocalStack({
      stateDir,
      ephemeral: true,
      temporalAddress: process.env.TEMPORAL_ADDRESS,
      databaseUrl: process.env.DATABASE_URL,
      // Low enough that the continue-as-new path is exercised by ordinary tests.
      dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 200 },
      log,
    })
  } catch (error) {
    // These say what was wrong and what to do, in one line; a stack trace under it would only bury that.
    if (
      error instanceof EmbeddedPostgresError ||
      error instanceof DevServerStartError ||
      error instanceof TemporalCliUnavailableError
    ) {
      error.stack = `${error.name}: ${error.message}`
    }
    throw error
  }
  try {
    const { code } = await bundleWorkflowCode({
      workflowsPath: new URL('./workflows.ts', import.meta.url).pathname,
      logger: quietBundlerLogger,
    })
    const workflowBundlePath = join(stateDir, 'workflow-bundle.js')
    await writeFile(workflowBundlePath, code)
    project.provide('temporalAddress', stack.temporalAddress)
    project.provide('namespace', stack.namespace)
    project.provide('databaseUrl', stack.databaseUrl)
    project.provide('workflowBundlePath', workflowBundlePath)
    log(
      `Temporal ${stack.temporalAddress}${stack.temporalCliRoute ? ` (CLI via ${stack.temporalCliRoute})` : ''}, ` +
        `PostgreSQL ${new URL(stack.databaseUrl).host}, ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    )
  } catch (error) {
    await stack.stop()
    throw error
  }
  return () => stack.stop()
}

const quietBundlerLogger = {
  trace() {},
  debug() {},
  info() {},
  warn(message: string) {
    console.warn(message)
  },
  error(message: string) {
    console.error(message)
  },
  log() {},
}
