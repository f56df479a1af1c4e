// Prebuilds the workflow bundle that worker.ts loads in production (no webpack at Worker start).
import { writeFile } from 'node:fs/promises'
import { bundleWorkflowCode } from '@temporalio/worker'

const { code } = await bundleWorkflowCode({
  workflowsPath: new URL('../dist/src/workflows/index.js', import.meta.url).pathname,
})
await writeFile(new URL('../dist/workflow-bundle.js', import.meta.url), code)
console.log(`dist/workflow-bundle.js: ${(code.length / 1024).toFixed(0)} KiB`)
