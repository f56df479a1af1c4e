/**
 * The policy module loads in a Temporal workflow bundle: Temporal's bundler refuses workflow code that
 * imports Node built-ins, so this fails if anything in src/policy (other than a function that is only
 * called outside workflows) reaches for `node:` modules.
 */
import { fileURLToPath } from 'node:url'
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker'
import { describe, expect, it } from 'vitest'

describe('the policy module in a workflow bundle', () => {
  it('bundles without Node built-ins', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./workflow-fixture.ts', import.meta.url)),
      logger: new DefaultLogger('ERROR'),
    })
    expect(code).toContain('judgeInWorkflow')
    expect(code).toContain('builtin-secrets')
  }, 60_000)
})
