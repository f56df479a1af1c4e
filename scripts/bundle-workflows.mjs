// Prebuilds the workflow bundle that worker.ts loads in production (no webpack at Worker start), the same
// with tether's tracing workflow interceptors for a worker that traces (docs/observability.md), and
// the replayer `tether audit verify` checks histories with (the same workflows, plus the interceptor that
// reports each activity call: src/audit/replay-interceptor.ts).
import { writeFile } from 'node:fs/promises'
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker'

const workflowsPath = new URL('../dist/src/workflows/index.js', import.meta.url).pathname
const bundles = [
  { file: 'workflow-bundle.js', options: {} },
  {
    file: 'workflow-bundle-otel.js',
    options: {
      workflowInterceptorModules: [
        new URL('../dist/src/workflows/trace-interceptors.js', import.meta.url).pathname,
      ],
    },
  },
  {
    file: 'audit-bundle.js',
    options: {
      workflowInterceptorModules: [
        new URL('../dist/src/audit/replay-interceptor.js', import.meta.url).pathname,
      ],
    },
  },
]
for (const { file, options } of bundles) {
  // Warnings only: webpack's statistics are for whoever debugs the bundle, not for every install.
  const { code } = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN'), ...options })
  await writeFile(new URL(`../dist/${file}`, import.meta.url), code)
  console.log(`dist/${file}: ${(code.length / 1024).toFixed(0)} KiB`)
}
