/**
 * An approver's answer as it crosses into a run — through the `decide` Update or Signal, from the CLI, the
 * inbox or any SDK — and the typed refusals a run gives. The workflow validates with this schema; the
 * inbox and the CLI shape what they send with it.
 */
import { z } from 'zod'

export const decisionSchema = z
  .object({
    approvalId: z.string().min(1),
    decision: z.enum(['approve', 'deny']),
    approver: z.string().trim().min(1, 'the approver must be named'),
    reason: z.string().max(2_000).optional(),
    /** Remember the exact rule (`true` / `exact`) or the wider one the request offered (`wider`). */
    remember: z.union([z.boolean(), z.enum(['exact', 'wider'])]).optional(),
    /**
     * Approve this command instead of the one asked (exec only): its argv, program first. The run judges it
     * with the policy again before it runs; a denied replacement never runs.
     */
    replacement: z.array(z.string().max(10_000)).min(1).max(1_000).optional(),
    /** A budget approval's approval: the new cost cap, e.g. `"50 USD"` (more than the run has spent). */
    raiseTo: z.string().min(1).max(40).optional(),
    /** Required under signed identity: the approver's signature over the decision statement. */
    signature: z
      .object({
        /** The approver's public key, `ed25519:<base64>`, as the policy lists it. */
        key: z.string().min(1),
        /** Base64 Ed25519 signature of the statement (see identity/statement.ts). */
        value: z.string().min(1),
        /** When it was signed, Unix milliseconds (part of the statement). */
        issuedAt: z.number().int().nonnegative(),
      })
      .strict()
      .optional(),
  })
  .strict()

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
