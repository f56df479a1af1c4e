/** A workflow that uses the policy module as a workflow would: the bundle test builds it with Temporal's bundler. */
import { Policy, rememberRule, renderExecVerdict } from '../../../src/policy/index.js'

export async function judgeInWorkflow(
  spec: unknown,
  argv: string[],
): Promise<{ effect: string; tree: string; remember: boolean }> {
  const verdict = Policy.fromSpec(spec).withRule('remembered', 'exec', 'allow', 'npm test*').checkExec(argv)
  return { effect: verdict.effect, tree: renderExecVerdict(verdict), remember: rememberRule('exec', argv).ok }
}
