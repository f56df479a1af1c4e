/**
 * What the audit keeps of MCP: the tool definitions runs saw (content-addressed by the digest a run pins
 * them with), which run saw which from which step, and every call that was made. Idempotent like the other
 * writers: a definition and a sighting are written once, a call's row is replaced only by a higher attempt.
 */
import { z } from 'zod'
import type { Database } from './database.js'
import { count, id, index, parse, text, timestamp } from './inputs.js'

const digest = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lowercase hex sha256')

export const mcpSighting = z.object({
  runId: id,
  step: index,
  /** `server.tool`. */
  name: z.string().min(1).max(256),
  digest,
  /** The definition (name, description, input schema, annotations) whose digest `digest` is. */
  definition: z.record(z.string(), z.unknown()),
  at: timestamp,
})
export type McpSighting = z.input<typeof mcpSighting>

export const mcpCallRecord = z.object({
  runId: id,
  step: index,
  call: index,
  attempt: z.number().int().min(1).default(1),
  server: z.string().min(1).max(64),
  tool: z.string().min(1).max(256),
  digest,
  argumentsSha256: digest,
  argumentsBytes: count,
  effect: z.enum(['allow', 'ask']),
  rule: text.optional(),
  layer: text.optional(),
  status: z.enum(['ok', 'error', 'withheld', 'unavailable', 'timed-out', 'cancelled', 'interrupted']),
  resultBytes: count,
  resultSha256: digest,
  resultText: text,
  resultElided: count,
  durationMs: count,
  startedAt: timestamp,
  finishedAt: timestamp,
})
export type McpCallRecord = z.input<typeof mcpCallRecord>
export type McpCallStatus = McpCallRecord['status']

const sightings = mcpSighting.array()

/** Records definitions a listing saw (each once) and which run saw them from which step. */
export async function recordMcpSightings(db: Database, values: readonly McpSighting[]): Promise<void> {
  const rows = parse(sightings, values, 'recordMcpSightings')
  if (rows.length === 0) return
  const column = <T>(pick: (row: (typeof rows)[number]) => T) => rows.map(pick)
  await db.query(
    'recordMcpSightings',
    `insert into mcp_definitions (digest, definition)
     select * from unnest($1::text[], $2::json[]) on conflict (digest) do nothing`,
    [column((row) => row.digest), column((row) => JSON.stringify(row.definition))],
  )
  await db.query(
    'recordMcpSightings',
    `insert into mcp_tools (run_id, name, digest, step, seen_at)
     select * from unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[])
     on conflict (run_id, name, digest) do nothing`,
    [
      column((row) => row.runId),
      column((row) => row.name),
      column((row) => row.digest),
      column((row) => row.step),
      column((row) => row.at),
    ],
  )
}

/** The stored definitions with these digests (unchecked: the caller verifies each against its digest). */
export async function mcpDefinitions(
  db: Database,
  digests: readonly string[],
): Promise<Map<string, Record<string, unknown>>> {
  if (digests.length === 0) return new Map()
  const { rows } = await db.query<{ digest: string; definition: Record<string, unknown> }>(
    'mcpDefinitions',
    'select digest, definition from mcp_definitions where digest = any($1::text[])',
    [[...new Set(digests)]],
  )
  return new Map(rows.map((row) => [row.digest, row.definition]))
}

export async function recordMcpCall(db: Database, value: McpCallRecord): Promise<boolean> {
  const row = parse(mcpCallRecord, value, 'recordMcpCall')
  const { rowCount } = await db.query(
    'recordMcpCall',
    `insert into mcp_calls as c (run_id, step, call, attempt, server, tool, digest, arguments_sha256,
                                 arguments_bytes, effect, rule, layer, status, result_bytes, result_sha256,
                                 result_text, result_elided, duration_ms, started_at, finished_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
     on conflict (run_id, step, call) do update
        set attempt = excluded.attempt, status = excluded.status, result_bytes = excluded.result_bytes,
            result_sha256 = excluded.result_sha256, result_text = excluded.result_text,
            result_elided = excluded.result_elided, duration_ms = excluded.duration_ms,
            started_at = excluded.started_at, finished_at = excluded.finished_at
      where c.attempt < excluded.attempt`,
    [
      row.runId,
      row.step,
      row.call,
      row.attempt,
      row.server,
      row.tool,
      row.digest,
      row.argumentsSha256,
      row.argumentsBytes,
      row.effect,
      row.rule ?? null,
      row.layer ?? null,
      row.status,
      row.resultBytes,
      row.resultSha256,
      row.resultText,
      row.resultElided,
      row.durationMs,
      row.startedAt,
      row.finishedAt,
    ],
  )
  return rowCount === 1
}

/** One row of `mcp_calls`, as the audit's readers see it. */
export interface McpCallRow {
  runId: string
  step: number
  call: number
  attempt: number
  server: string
  tool: string
  digest: string
  argumentsSha256: string
  argumentsBytes: number
  effect: 'allow' | 'ask'
  rule: string | null
  layer: string | null
  status: McpCallStatus
  resultBytes: number
  resultSha256: string
  resultText: string
  resultElided: number
  durationMs: number
}

/** The MCP calls a run made, in order. */
export async function mcpCalls(db: Database, runId: string): Promise<McpCallRow[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    'mcpCalls',
    `select run_id, step, call, attempt, server, tool, digest, arguments_sha256, arguments_bytes, effect, rule,
            layer, status, result_bytes, result_sha256, result_text, result_elided, duration_ms
       from mcp_calls where run_id = $1 order by step, call`,
    [runId],
  )
  return rows.map((row) => ({
    runId: row.run_id as string,
    step: row.step as number,
    call: row.call as number,
    attempt: row.attempt as number,
    server: row.server as string,
    tool: row.tool as string,
    digest: row.digest as string,
    argumentsSha256: row.arguments_sha256 as string,
    argumentsBytes: row.arguments_bytes as number,
    effect: row.effect as 'allow' | 'ask',
    rule: row.rule as string | null,
    layer: row.layer as string | null,
    status: row.status as McpCallStatus,
    resultBytes: Number(row.result_bytes),
    resultSha256: row.result_sha256 as string,
    resultText: row.result_text as string,
    resultElided: row.result_elided as number,
    durationMs: row.duration_ms as number,
  }))
}
