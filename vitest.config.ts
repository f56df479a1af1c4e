import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { defineConfig } from 'vitest/config'

// Two projects: `unit` needs nothing running; `integration` gets a real Temporal dev server and a real
// PostgreSQL from the global setup, once per test run.
export default defineConfig({
  test: {
    pool: 'forks',
    // Two files at a time even on two cores (vitest's default there is one): most of a file's time is spent
    // waiting (heartbeat timeouts, killed workers, a stopped database), so the suite takes about 12 minutes
    // instead of 15.
    maxWorkers: 2,
    reporters: ['default'],
    setupFiles: ['test/support/quiet-runtime.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Unit tests start real processes (the CLI, sandboxed commands): on a loaded machine they take
          // longer than vitest's 5 s default, which is no sign of a fault.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          // Test workers sign provenance with a key of their own, and lay out and mark workspaces in a folder
          // of their own, never in the user's state folder.
          env: {
            TETHER_WORKER_KEY: join(tmpdir(), 'tether-test-worker-key.pem'),
            TETHER_WORKSPACES: join(tmpdir(), 'tether-test-workspaces'),
          },
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
})
