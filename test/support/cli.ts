/** `tether` from the sources, as a person runs it, against the test stack (Temporal, PostgreSQL). */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { inject } from 'vitest'

const BIN = fileURLToPath(new URL('../../src/cli/bin.ts', import.meta.url))

export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

export function tether(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', BIN, ...args],
      {
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_NAMESPACE: inject('namespace'),
          DATABASE_URL: inject('databaseUrl'),
          NO_COLOR: '1',
          ...env,
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stdout, stderr }),
    )
  })
}
