/**
 * A run's provenance: an in-toto Statement (v1) whose subject is the final workspace tree and whose predicate
 * is SLSA provenance v1 with tether's build type — what the run was asked to do (the contract, the run's own
 * policy), what it stood on (the effective policy's digest and layers, the floor, the approvers), the models
 * it used, and what happened (every command's argv digest, exit status and sandbox profile, every MCP call's
 * tool and arguments digest with the verdict that let it run, every approval
 * with its signatures, the network destinations allowed, the gate's result, the outcome). Built from the
 * run's audit rows once it has finished; the worker signs it into a DSSE envelope (activities/provenance.ts).
 * The layout is documented in docs/audit.md#provenance.
 */
import { type DsseEnvelope, digestOf, openEnvelope } from '../identity/index.js'
import type { Database } from './database.js'
import { AuditInputError } from './errors.js'

export const STATEMENT_TYPE = 'https://in-toto.io/Statement/v1'
export const SLSA_PROVENANCE = 'https://slsa.dev/provenance/v1'
/** tether's SLSA build type: an agent run (docs/audit.md#provenance says what each field holds). */
export const BUILD_TYPE = 'urn:tether:agent-run:v1'

type Row = Record<string, unknown>

/** What the statement is made of: the run's rows as stored (JSON, as PostgreSQL's to_json gives them). */
export interface ProvenanceRows {
  run: Row
  /** The effective policy's spec, stored under the run's digest (absent for runs from before floors). */
  effective?: unknown
  steps: Row[]
  commands: Row[]
  /** Calls of MCP tools that were made (absent in rows read before MCP). */
  mcpCalls?: Row[]
  approvals: Row[]
  answers: Row[]
  gates: Row[]
}

/** The subject: the workspace tree, by its digest. */
export interface ProvenanceSubject {
  path: string
  format: string
  sha256: string
  files: number
  bytes: number
  /** The same tree's root hash among the run's workspace snapshots, when the run had them. */
  snapshot?: string
}

/** A run's rows for its provenance, each kind in order; undefined for an unknown run. */
export async function provenanceRows(db: Database, runId: string): Promise<ProvenanceRows | undefined> {
  const rows = (sql: string) =>
    db.query<{ row: Row }>('provenanceRows', sql, [runId]).then((result) => result.rows.map((r) => r.row))
  const [[run], [effective], steps, commands, mcpCalls, approvals, answers, gates] = await Promise.all([
    rows('select to_json(r) as row from runs r where run_id = $1'),
    rows(`select json_build_object('spec', p.spec) as row
            from runs r join policies p on p.digest = r.policy_digest where r.run_id = $1`),
    rows(`select to_json(t) as row from (select step, model, input_tokens, output_tokens, cached_input_tokens,
            cost_usd from steps where run_id = $1) t order by step`),
    rows(`select to_json(t) as row from (select step, call, kind, argv, status, exit_code, signal, sandbox
            from exec_results where run_id = $1) t order by step, call < 0, call`),
    rows(`select to_json(t) as row from (select step, call, server, tool, digest, arguments_sha256, effect,
            rule, layer, status from mcp_calls where run_id = $1) t order by step, call`),
    rows('select to_json(a) as row from approvals a where run_id = $1 order by requested_at, approval_id'),
    rows(`select to_json(w) as row from approval_answers w join approvals a using (approval_id)
           where a.run_id = $1 order by w.answered_at, w.approval_id, w.approver`),
    rows(`select to_json(g) as row from (select step, kind, detail, at from gate_events
           where run_id = $1 and kind <> 'gate_output') g order by step, at`),
  ])
  if (!run) return undefined
  return {
    run,
    ...(effective ? { effective: effective.spec } : {}),
    steps,
    commands,
    mcpCalls,
    approvals,
    answers,
    gates,
  }
}

/** The in-toto Statement of a finished run (see the module comment). Pure. */
export function provenanceStatement(
  rows: ProvenanceRows,
  subject: ProvenanceSubject,
  builder: { version: string; keyid: string },
): Record<string, unknown> {
  const { run } = rows
  const spec = rows.effective as
    | { layers?: Array<{ name: string; origin?: string; rules?: unknown[] }>; approvers?: unknown[] }
    | undefined
  const models = [...new Set(rows.steps.map((step) => step.model).filter((m) => typeof m === 'string'))]
  const network = rows.commands.flatMap((command) => {
    const asked = ((command.sandbox as { network?: Row[] } | null)?.network ?? []) as Row[]
    return asked
      .filter((destination) => destination.allowed === true)
      .map((destination) => ({
        name: 'network',
        uri: `tcp://${String(destination.host).includes(':') ? `[${destination.host}]` : destination.host}:${destination.port}`,
        annotations: {
          step: command.step,
          call: command.call,
          ...(destination.address ? { address: destination.address } : {}),
          reason: destination.reason,
        },
      }))
  })
  const lastGate = rows.gates.at(-1)
  return {
    _type: STATEMENT_TYPE,
    subject: [
      {
        name: 'workspace',
        digest: { sha256: subject.sha256 },
        annotations: {
          path: subject.path,
          format: subject.format,
          files: subject.files,
          bytes: subject.bytes,
          ...(subject.snapshot ? { snapshot: subject.snapshot } : {}),
        },
      },
    ],
    predicateType: SLSA_PROVENANCE,
    predicate: {
      buildDefinition: {
        buildType: BUILD_TYPE,
        externalParameters: { contract: run.contract, policy: run.policy },
        internalParameters: {
          effectivePolicy: {
            digest: run.policy_digest ?? null,
            floor: run.floor ?? null,
            layers: (spec?.layers ?? []).map((layer) => ({
              name: layer.name,
              origin: layer.origin ?? null,
              rules: layer.rules?.length ?? 0,
            })),
          },
          sandbox: run.sandbox ?? null,
        },
        resolvedDependencies: [
          ...(run.policy_digest
            ? [{ name: 'effective policy', uri: 'urn:tether:policy', digest: { sha256: run.policy_digest } }]
            : []),
          ...models.map((model) => ({ name: 'model', uri: `urn:tether:model:${model}` })),
        ],
      },
      runDetails: {
        builder: { id: `urn:tether:worker:${builder.keyid}`, version: { tether: builder.version } },
        metadata: {
          invocationId: run.run_id,
          ...(run.started_at ? { startedOn: iso(run.started_at) } : {}),
          ...(run.finished_at ? { finishedOn: iso(run.finished_at) } : {}),
        },
        byproducts: [
          {
            name: 'outcome',
            annotations: {
              outcome: run.outcome ?? null,
              reason: run.reason ?? null,
              steps: run.steps ?? null,
              inputTokens: run.input_tokens ?? null,
              outputTokens: run.output_tokens ?? null,
              costUsd: run.cost_usd ?? null,
              parentRunId: run.parent_run_id ?? null,
            },
          },
          ...rows.commands.map(commandByproduct),
          ...(rows.mcpCalls ?? []).map(mcpCallByproduct),
          ...rows.approvals.map((approval) => approvalByproduct(approval, rows.answers)),
          ...network,
          {
            name: 'gate',
            annotations: lastGate
              ? {
                  step: lastGate.step,
                  passed: lastGate.kind === 'gate_passed',
                  detail: String(lastGate.detail).split('\n')[0] ?? '',
                }
              : { passed: null, detail: 'the gate did not run' },
          },
        ],
      },
    },
  }
}

/** A command: its argv by digest (sha256 of the argv's canonical JSON), how it ended, its sandbox profile. */
function commandByproduct(command: Row): Record<string, unknown> {
  const sandbox = (command.sandbox ?? null) as Row | null
  return {
    name: command.kind === 'gate' ? 'gate command' : 'command',
    digest: { sha256: digestOf(command.argv) },
    annotations: {
      step: command.step,
      call: command.call,
      status: command.status,
      exitCode: command.exit_code ?? null,
      ...(command.signal ? { signal: command.signal } : {}),
      sandbox: sandbox
        ? {
            mode: sandbox.mode ?? null,
            limits: sandbox.limits ?? null,
            ...(sandbox.limitHit ? { limitHit: sandbox.limitHit } : {}),
            ...(sandbox.identity ? { identity: sandbox.identity } : {}),
          }
        : { mode: 'off' },
    },
  }
}

/** An MCP call: its arguments by digest, the tool (and the definition it was made against), the verdict. */
function mcpCallByproduct(call: Row): Record<string, unknown> {
  return {
    name: 'mcp call',
    digest: { sha256: call.arguments_sha256 },
    annotations: {
      step: call.step,
      call: call.call,
      server: call.server,
      tool: call.tool,
      definition: call.digest,
      effect: call.effect,
      rule: call.rule ?? null,
      layer: call.layer ?? null,
      status: call.status,
    },
  }
}

/** An approval: what it asked (by the digest the answers signed), how it ended, and each answer's proof. */
function approvalByproduct(approval: Row, answers: Row[]): Record<string, unknown> {
  return {
    name: approval.act === 'budget' ? 'budget approval' : 'approval',
    ...(approval.action_digest ? { digest: { sha256: approval.action_digest } } : {}),
    annotations: {
      approvalId: approval.approval_id,
      step: approval.step,
      call: approval.call,
      act: approval.act,
      target: approval.target,
      rule: approval.rule ?? null,
      layer: approval.layer ?? null,
      decision: approval.decision ?? null,
      decidedBy: approval.decided_by ?? null,
      channel: approval.channel ?? null,
      ...(approval.replacement ? { replacement: approval.replacement } : {}),
      ...(approval.raise_to ? { raiseTo: approval.raise_to } : {}),
      ...(approval.remember ? { remember: approval.remember } : {}),
      identity: approval.identity ?? null,
      answers: answers
        .filter((answer) => answer.approval_id === approval.approval_id)
        .map((answer) => ({
          approver: answer.approver,
          decision: answer.decision,
          channel: answer.channel,
          answeredAt: iso(answer.answered_at),
          ...(answer.signature
            ? {
                publicKey: answer.public_key,
                keyFingerprint: answer.key_fingerprint,
                signature: answer.signature,
                statement: answer.statement,
              }
            : { signed: false }),
        })),
    },
  }
}

function iso(value: unknown): string {
  return new Date(String(value)).toISOString()
}

/** Stores a run's signed provenance; a retry (the same envelope) changes nothing. */
export async function recordProvenance(
  db: Database,
  runId: string,
  envelope: DsseEnvelope,
  subject: string,
): Promise<void> {
  const keyid = envelope.signatures[0]?.keyid
  if (!keyid) throw new AuditInputError('recordProvenance: the envelope is not signed')
  await db.query(
    'recordProvenance',
    `insert into provenance (run_id, envelope, keyid, subject_sha256) values ($1, $2, $3, $4)
     on conflict (run_id) do nothing`,
    [runId, JSON.stringify(envelope), keyid, subject],
  )
}

/** A run's signed provenance envelope, as stored; undefined when none was recorded. */
export async function provenanceOf(db: Database, runId: string): Promise<DsseEnvelope | undefined> {
  const { rows } = await db.query<{ envelope: DsseEnvelope }>(
    'provenanceOf',
    'select envelope from provenance where run_id = $1',
    [runId],
  )
  return rows[0]?.envelope
}

/** What an envelope's offline check found: the statement it carries, or what is wrong with it. */
export type ProvenanceCheck = { ok: true; statement: ProvenanceStatement } | { ok: false; error: string }

/** The parts of a provenance statement a check reads. */
export interface ProvenanceStatement {
  _type: string
  subject: Array<{ name: string; digest: { sha256: string }; annotations?: Record<string, unknown> }>
  predicateType: string
  predicate: {
    buildDefinition: { buildType: string; externalParameters: Record<string, unknown> }
    runDetails: {
      metadata: { invocationId: string }
      byproducts: Array<{ name: string; annotations?: Record<string, unknown> }>
    }
  }
}

/**
 * Checks a provenance envelope offline: signed by `publicKey` (DSSE, Ed25519), and carrying an in-toto
 * Statement v1 of tether's build type with a workspace subject. Pure; never throws.
 */
export function checkProvenance(envelope: unknown, publicKey: string): ProvenanceCheck {
  const opened = openEnvelope(envelope, publicKey)
  if (!opened.ok) return opened
  const statement = opened.payload as Partial<ProvenanceStatement> | null
  if (statement?._type !== STATEMENT_TYPE)
    return { ok: false, error: `the payload is not an in-toto Statement v1` }
  if (
    statement.predicateType !== SLSA_PROVENANCE ||
    statement.predicate?.buildDefinition?.buildType !== BUILD_TYPE
  ) {
    return { ok: false, error: `the statement is not tether's provenance (${BUILD_TYPE})` }
  }
  const subject = statement.subject?.[0]
  if (!subject || !/^[0-9a-f]{64}$/.test(subject.digest?.sha256 ?? '')) {
    return { ok: false, error: 'the statement names no workspace subject by its sha256' }
  }
  return { ok: true, statement: statement as ProvenanceStatement }
}
