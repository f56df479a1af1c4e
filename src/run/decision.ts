/**
 * An approver's answer as it crosses into a run — through the `decide` Update or Signal, from the CLI, the
 * inbox or any SDK — and the typed refusals a run gives. The workflow validates with this schema; the
 * inbox and the CLI shape what they send with it.
 */
import { z } from 'zod'
import { nameProblem } from '../present/index.js'
import { argvProblem } from '../tools/index.js'

/**
 * The sizes an answer may have. Anyone who may signal a run can send anything up to Temporal's payload limit;
 * every field is bounded before the run stores, echoes or records it, so no answer can make the run schedule
 * an activity whose input Temporal refuses. An edited command has the limits of a command the model sends.
 */
export const DECISION_LIMITS = {
  /** Characters of an approval id (the run's own ids have 36). */
  approvalIdChars: 100,
  /** Characters of an approver's name (as an approver list may spell one). */
  approverChars: 64,
  reasonChars: 2_000,
  /** Characters of a public key and of a signature (each under 100 in base64). */
  proofChars: 200,
  /** Characters of a refusal's own text, which may quote what was sent. */
  refusalChars: 500,
} as const

function decisionSchemaWith(bounded: boolean) {
  const approver = z.string().trim().min(1, 'the approver must be named')
  const id = z.string().min(1)
  const proof = z.string().min(1)
  const replacement = z.array(z.string()).min(1)
  const bound = (schema: z.ZodString, chars: number) => (bounded ? schema.max(chars) : schema)
  return z
    .object({
      approvalId: bound(id, DECISION_LIMITS.approvalIdChars),
      decision: z.enum(['approve', 'deny']),
      approver: bounded
        ? approver.max(DECISION_LIMITS.approverChars).superRefine((name, ctx) => {
            const problem = nameProblem("the approver's name", name)
            if (problem) ctx.addIssue({ code: 'custom', message: problem })
          })
        : approver,
      reason: z.string().max(DECISION_LIMITS.reasonChars).optional(),
      /** Remember the exact rule (`true` / `exact`) or the wider one the request offered (`wider`). */
      remember: z.union([z.boolean(), z.enum(['exact', 'wider'])]).optional(),
      /**
       * Approve this command instead of the one asked (exec only): its argv, program first. The run judges it
       * with the policy again before it runs; a denied replacement never runs.
       */
      replacement: (bounded
        ? replacement.superRefine((argv, ctx) => {
            const problem = argvProblem(argv)
            if (problem) ctx.addIssue({ code: 'custom', message: problem })
          })
        : z.array(z.string().max(10_000)).min(1).max(1_000)
      ).optional(),
      /** A budget approval's approval: the new cost cap, e.g. `"50 USD"` (more than the run has spent). */
      raiseTo: z.string().min(1).max(40).optional(),
      /** Required under signed identity: the approver's signature over the decision statement. */
      signature: z
        .object({
          /** The approver's public key, `ed25519:<base64>`, as the policy lists it. */
          key: bound(proof, DECISION_LIMITS.proofChars),
          /** Base64 Ed25519 signature of the statement (see identity/statement.ts). */
          value: bound(proof, DECISION_LIMITS.proofChars),
          /** When it was signed, Unix milliseconds (part of the statement). */
          issuedAt: z.number().int().nonnegative(),
        })
        .strict()
        .optional(),
    })
    .strict()
}

// Built on first use, as the contract's are (contract.ts): a run builds one only when an answer comes.
/** An answer as a run takes it: every field bounded (see DECISION_LIMITS). */
export const decisionSchema = z.lazy(() => decisionSchemaWith(true))
/** How runs recorded before answers were bounded read them: only for replaying those runs. */
export const legacyDecisionSchema = z.lazy(() => decisionSchemaWith(false))

/** An answer to an approval request, as an approver sends it. */
export type DecisionInput = z.infer<typeof decisionSchema>

/**
 * Why an answer was refused, as a machine-readable type: the Update validator throws a non-retryable
 * `ApplicationFailure` of this type, so a client in any SDK can branch on it.
 */
export type DecisionRejection =
  /** The answer does not have the decision shape (a field missing, unknown or of the wrong type). */
  | 'InvalidDecision'
  /** No approval with this id was requested in this run. */
  | 'UnknownApproval'
  /** The approval was already answered, timed out or cancelled. */
  | 'AlreadyDecided'
  /** The policy names approvers and this one is not among them. */
  | 'NotAnApprover'
  /** The policy requires signed decisions and this one carries no signature. */
  | 'Unsigned'
  /** The signing key is not on the policy's approver list, or belongs to someone else. */
  | 'UnknownKey'
  /** The signature does not verify for this run, approval, action and answer (forged, tampered, replayed). */
  | 'BadSignature'
  /** Signed before the request existed, after its deadline, or in the future. */
  | 'OutsideValidity'
  /** This approver has already approved; a rule that needs several approvals needs several people. */
  | 'DuplicateApprover'

/** Clock difference tolerated between an approver's machine and the workflow. */
export const SIGNATURE_SKEW_MS = 2 * 60_000
