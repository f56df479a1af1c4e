/**
 * Audit test helpers: a fresh database per test file on the run's real PostgreSQL, and builders of
 * well-formed records so each test spells out only what it checks.
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { inject } from 'vitest'
import type {
  ApprovalRequest,
  ExecResultRecord,
  PolicyEvent,
  RunStarted,
  StepRecord,
} from '../../../src/audit/index.js'

export interface TestDatabase {
  name: string
  url: string
  /** Runs one statement as the server's admin connection (outside the test database). */
  admin<Row extends pg.QueryResultRow>(sql: string, values?: unknown[]): Promise<Row[]>
  drop(): Promise<void>
}

export async function createTestDatabase(prefix: string): Promise<TestDatabase> {
  const serverUrl = inject('databaseUrl')
  const name = `tether_${prefix}_${randomBytes(4).toString('hex')}`
  const admin = async <Row extends pg.QueryResultRow>(sql: string, values?: unknown[]) => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    try {
      return (await client.query<Row>(sql, values)).rows
    } finally {
      await client.end()
    }
  }
  await admin(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    admin,
    drop: async () => {
      await admin(`drop database if exists ${name} with (force)`)
    },
  }
}

export const T0 = new Date('2030-01-02T03:04:05.000Z')

/** `T0` plus `seconds`. */
export function at(seconds: number): Date {
  return new Date(T0.getTime() + seconds * 1000)
}

export function runStarted(runId: string, overrides: Partial<RunStarted> = {}): RunStarted {
  return {
    runId,
    goal: 'make the failing test pass',
    workspace: '/work/fixture',
    contract: {
      goal: 'make the failing test pass',
      verification: { command: ['npm', 'test'], expectExit: 0 },
    },
    policy: { layers: [{ name: 'base', rules: [] }] },
    taskQueue: 'tether',
    startedAt: T0,
    ...overrides,
  }
}

export function stepRecord(runId: string, step: number, overrides: Partial<StepRecord> = {}): StepRecord {
  return {
    runId,
    step,
    toolCalls: [{ id: `c${step}`, name: 'exec', args: { argv: ['npm', 'test', '--', `step ${step}`] } }],
    decision: 'tool_calls',
    observation: `observation of step ${step}`,
    inputTokens: 100 + step,
    outputTokens: 10 + step,
    startedAt: at(step * 10),
    finishedAt: at(step * 10 + 5),
    ...overrides,
  }
}

export function refusal(
  runId: string,
  step: number,
  call: number,
  overrides: Partial<PolicyEvent> = {},
): PolicyEvent {
  return {
    runId,
    step,
    call,
    act: 'exec',
    target: 'git push origin main',
    effect: 'deny',
    rule: 'git push*',
    layer: 'base',
    kind: 'refusal',
    reason: 'refused by git push* in base',
    source: 'policy',
    at: at(step * 10 + call + 1),
    ...overrides,
  }
}

const SHA = 'a'.repeat(64)

export function execResult(
  runId: string,
  step: number,
  call: number,
  overrides: Partial<ExecResultRecord> = {},
): ExecResultRecord {
  return {
    runId,
    step,
    call,
    argv: ['npm', 'test'],
    cwd: '/work/fixture',
    status: 'exited',
    exitCode: 0,
    durationMs: 1234,
    stdout: { text: 'ok\n', elided: 0, bytes: 3, lines: 1, sha256: SHA },
    stderr: { text: '', elided: 0, bytes: 0, lines: 0, sha256: SHA },
    startedAt: at(step * 10 + call + 2),
    finishedAt: at(step * 10 + call + 3),
    ...overrides,
  }
}

export function approvalRequest(
  approvalId: string,
  runId: string,
  overrides: Partial<ApprovalRequest> = {},
): ApprovalRequest {
  return {
    approvalId,
    runId,
    step: 1,
    call: 0,
    act: 'exec',
    target: 'npm publish',
    tree: [{ effect: 'ask', target: 'npm publish', rule: 'npm publish*', layer: 'base' }],
    rule: 'npm publish*',
    layer: 'base',
    requestedAt: at(11),
    deadline: at(3600),
    approvers: [],
    ...overrides,
  }
}

/** Counts rows of `table` matching `where` (a trusted test literal) through a separate connection. */
export async function countRows(url: string, table: string, where = 'true', values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ n: string }>(
      `select count(*) as n from ${table} where ${where}`,
      values,
    )
    return Number(rows[0]?.n)
  } finally {
    await client.end()
  }
}
