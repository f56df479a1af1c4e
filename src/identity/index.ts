/**
 * Approver identity: signed decisions over a canonical statement, verified with pure-JS Ed25519. Pure
 * (no Node modules), so the workflow bundle imports this door; key files and signing live in
 * `keyring.ts`, for the CLI and the worker.
 */
export {
  type AnswerDraft,
  AnswerError,
  prepareAnswer,
  type ShownApproval,
  type UnsignedDecision,
} from './answer.js'
export {
  type DsseEnvelope,
  IN_TOTO_PAYLOAD_TYPE,
  keyIdOf,
  openEnvelope,
  pae,
  sealEnvelope,
} from './dsse.js'
export {
  APPROVER_NAME,
  fingerprintOf,
  formatPublicKey,
  fromBase64,
  parsePublicKey,
  toBase64,
  verifyStatement,
} from './keys.js'
export {
  actionDigest,
  canonicalJson,
  type DecisionStatement,
  digestOf,
  type JudgedAction,
  keyFingerprint,
  statementBytes,
} from './statement.js'
